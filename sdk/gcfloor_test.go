package sdk

import (
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestGCFloorFor(t *testing.T) {
	for _, tc := range []struct {
		limit int64
		want  uint64
	}{
		{math.MaxInt64, 32 << 20}, // no GOMEMLIMIT
		{0, 32 << 20},
		{int64(softLimit(1 << 30)), 32 << 20}, // the host's default memory_limit
		{64 << 20, 16 << 20},
		{40 << 20, 10 << 20},
		{32 << 20, 0}, // a quarter is no more than twice the runtime's minimum
	} {
		if got := gcFloorFor(tc.limit); got != tc.want {
			t.Errorf("floor under GOMEMLIMIT %d: %d, want %d", tc.limit, got, tc.want)
		}
	}
}

// softLimit is the GOMEMLIMIT the host gives a plugin with limit as its
// memory_limit.
func softLimit(limit int64) int64 { return limit - limit/10 }

func TestGCPercentFor(t *testing.T) {
	const floor = 32 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		// A small live heap: as high as the heap minimum allows, which
		// puts the goal at the floor (4 MiB × 8).
		{0, 800},
		{1 << 20, 800},
		// Live heap × (1 + percent/100) reaches the floor.
		{8 << 20, 300},
		{10 << 20, 220},
		// Large enough to reach the floor at the default.
		{16 << 20, 100},
		{200 << 20, 100},
	} {
		if got := gcPercentFor(tc.live, floor); got != tc.want {
			t.Errorf("GC percent with %d live bytes: %d, want %d", tc.live, got, tc.want)
		}
	}
}

// afterEachGC's function runs after every cycle until it says to stop.
func TestAfterEachGC(t *testing.T) {
	var calls atomic.Int32
	afterEachGC(func() bool { return calls.Add(1) < 3 })
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 3 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("called %d times after the cycles, want 3", n)
	}
	for range 5 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("called %d times after saying to stop, want 3", n)
	}
}
