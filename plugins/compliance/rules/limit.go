package rules

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The dry-run rate per user: a burst of DryRunBurst, then one every
// DryRunEvery (ten a minute). A dry run reads a whole category of the
// tenant's data, so it is limited well below the host's request rate.
const (
	DryRunEvery = 6 * time.Second
	DryRunBurst = 5
	DryRunRate  = "5 at once, then 1 every 6 seconds (10 a minute)"
)

// maxTrackedUsers bounds the limiter's memory; past it, users whose
// allowance is full again are forgotten (a fresh limiter is the same).
const maxTrackedUsers = 10000

// Limiter is a token bucket per user, in this process.
type Limiter struct {
	every time.Duration
	burst int
	now   func() time.Time

	mu    sync.Mutex
	users map[string]*rate.Limiter
}

// NewLimiter allows each user burst requests at once and one more every
// every; now is the clock, time.Now when nil.
func NewLimiter(every time.Duration, burst int, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{every: every, burst: burst, now: now, users: map[string]*rate.Limiter{}}
}

// Reserve takes one request of the user's allowance and returns 0, or,
// when it is spent, how long until the next request is allowed (taking
// nothing).
func (l *Limiter) Reserve(user string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	lim := l.users[user]
	if lim == nil {
		if len(l.users) >= maxTrackedUsers {
			for u, ul := range l.users {
				if ul.TokensAt(now) >= float64(l.burst) {
					delete(l.users, u)
				}
			}
		}
		lim = rate.NewLimiter(rate.Every(l.every), l.burst)
		l.users[user] = lim
	}
	r := lim.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return wait
	}
	return 0
}
