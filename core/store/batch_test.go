package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stewardhq/steward/core/store"
)

// count emits 0 to n-1, stopping at the first error emit returns.
func count(n int) func(emit func(int) error) error {
	return func(emit func(int) error) error {
		for i := range n {
			if err := emit(i); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestWriteBatches: values are written size at a time, the rest at the
// end; a failing write ends the stream, a failing stream writes nothing
// more, and both are returned with the counts so far.
func TestWriteBatches(t *testing.T) {
	var written []string
	record := func(batch []int) error {
		written = append(written, fmt.Sprint(batch))
		return nil
	}
	for _, c := range []struct {
		n, size int
		want    []string
	}{
		{7, 3, []string{"[0 1 2]", "[3 4 5]", "[6]"}},
		{6, 3, []string{"[0 1 2]", "[3 4 5]"}},
		{0, 3, nil},
		{2, 0, []string{"[0]", "[1]"}},
	} {
		written = nil
		rows, batches, err := store.WriteBatches(c.size, count(c.n), record)
		if err != nil || rows != int64(c.n) || batches != len(c.want) || !slices.Equal(written, c.want) {
			t.Errorf("%d values by %d: %d rows, %d batches %v, %v; want %v", c.n, c.size, rows, batches, written, err, c.want)
		}
	}

	full := errors.New("disk full")
	writes := 0
	rows, batches, err := store.WriteBatches(2, count(10), func([]int) error {
		if writes++; writes == 2 {
			return full
		}
		return nil
	})
	if !errors.Is(err, full) || rows != 4 || batches != 1 || writes != 2 {
		t.Errorf("failing write: %d rows, %d batches, %d writes, %v; want 4 rows, 1 batch, the second write's error", rows, batches, writes, err)
	}

	cut := errors.New("connection reset")
	written = nil
	rows, batches, err = store.WriteBatches(2, func(emit func(int) error) error {
		if err := count(3)(emit); err != nil {
			return err
		}
		return cut
	}, record)
	if !errors.Is(err, cut) || rows != 3 || batches != 1 || !slices.Equal(written, []string{"[0 1]"}) {
		t.Errorf("failing stream: %d rows, %d batches %v, %v; want the first batch only and the stream's error", rows, batches, written, err)
	}
}
