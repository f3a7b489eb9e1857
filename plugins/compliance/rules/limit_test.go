package rules

import (
	"strconv"
	"testing"
	"time"
)

// TestLimiter: a user's burst, then a wait until the next token, during
// which a refused request takes nothing; users whose allowance is full
// again are forgotten once maxTrackedUsers are tracked.
func TestLimiter(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	l := NewLimiter(DryRunEvery, DryRunBurst, func() time.Time { return now })
	for i := range DryRunBurst {
		if wait := l.Reserve("u"); wait != 0 {
			t.Fatalf("request %d waits %v", i+1, wait)
		}
	}
	if wait := l.Reserve("u"); wait != DryRunEvery {
		t.Errorf("past the burst: wait %v, want %v", wait, DryRunEvery)
	}
	now = now.Add(DryRunEvery / 2)
	if wait := l.Reserve("u"); wait != DryRunEvery/2 {
		t.Errorf("half-way: wait %v, want %v (a refused request takes nothing)", wait, DryRunEvery/2)
	}
	now = now.Add(DryRunEvery / 2)
	if wait := l.Reserve("u"); wait != 0 {
		t.Errorf("after the wait: %v", wait)
	}

	for i := range maxTrackedUsers {
		l.Reserve("user-" + strconv.Itoa(i))
	}
	if len(l.users) != maxTrackedUsers+1 {
		t.Fatalf("%d users tracked", len(l.users))
	}
	now = now.Add(DryRunEvery) // user-* are full again; u is not
	l.Reserve("newcomer")
	if len(l.users) != 2 || l.users["u"] == nil || l.users["newcomer"] == nil {
		t.Errorf("after pruning %d users tracked", len(l.users))
	}
}
