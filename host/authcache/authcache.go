// Package authcache keeps what authenticating a request reads from the
// stores — revocation answers, tenant scopes, API keys — in bounded caches
// in process memory, and drops them on every replica when any of it changes.
//
// Every write that can change who may do what calls Changes.Changed. The
// replica that writes drops its entries at once. With Redis, the others
// learn of it from a change token in Redis, which each replica reads in the
// background every pollInterval, never per request; while the token cannot
// be read, the caches are bypassed, so a failing Redis costs speed, never a
// stale answer. Without Redis there is no channel between replicas: entries
// live only LocalTTL, which bounds how long a change made elsewhere (by
// another replica on the same database, or by the steward CLI) takes to
// apply.
package authcache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"
)

const (
	// LocalTTL is an entry's life without Redis. Well under a second, so
	// that a logout or a membership change made on another replica applies
	// within one.
	LocalTTL = 500 * time.Millisecond
	// SharedTTL is an entry's life with Redis, where the change token does
	// the invalidating: it only bounds the damage of a change whose
	// announcement never reached Redis.
	SharedTTL = 10 * time.Second

	// pollInterval is how often a replica reads the change token.
	pollInterval = 100 * time.Millisecond
	// vouchFor is how long one successful read of the change token keeps
	// the caches in use. A replica that cannot read the token for longer
	// stops trusting its entries, so a change it missed while Redis was
	// unreachable is served stale for less than this plus a poll.
	vouchFor = 500 * time.Millisecond
	// redisTimeout bounds each Redis command, below vouchFor so that a hung
	// read is reported before the caches would be bypassed anyway.
	redisTimeout = 300 * time.Millisecond
)

// Changes tells the caches built on it that something they hold changed.
type Changes struct {
	// epoch counts the times this replica dropped its entries; an entry
	// stored under an earlier epoch is never served.
	epoch atomic.Uint64
	ttl   time.Duration
	log   hclog.Logger
	now   func() time.Time

	// client is nil without Redis.
	client redis.UniversalClient
	key    string
	// vouched is the time (Unix nanoseconds) until which the last read of
	// the change token vouches for the entries.
	vouched atomic.Int64
	// pending is set while a change made here has not reached Redis.
	pending atomic.Bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// New returns Changes shared through Redis under prefix when client is
// set, and confined to this process otherwise. It does not wait for Redis:
// until the first read of the change token, the caches are bypassed. The
// client is the caller's to close, after Close. Its outages are the
// client's to report (see redisconn): the watcher reads the change token
// ten times a second and would otherwise log each failure.
func New(client redis.UniversalClient, prefix string, log hclog.Logger) *Changes {
	c := &Changes{ttl: LocalTTL, log: log, now: time.Now}
	if client == nil {
		return c
	}
	c.ttl, c.client, c.key = SharedTTL, client, changeKey(prefix)
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan struct{})
	go c.watch(ctx)
	return c
}

func changeKey(prefix string) string { return prefix + ":auth:changed" }

// Announce tells running replicas sharing Redis under prefix that
// something authentication reads changed, for a process that writes to the
// stores without serving requests (the steward CLI).
func Announce(ctx context.Context, client redis.UniversalClient, prefix string) error {
	return announce(ctx, client, changeKey(prefix))
}

// announce stores a fresh random token: unlike a counter, a value never
// seen before cannot be mistaken for an old one after Redis loses its data.
func announce(ctx context.Context, client redis.UniversalClient, key string) error {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails; it aborts the program instead
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
	defer cancel()
	if err := client.Set(ctx, key, hex.EncodeToString(b), 0).Err(); err != nil {
		return fmt.Errorf("authcache: announce change: %w", err)
	}
	return nil
}

// Changed drops this replica's entries and tells the other replicas to
// drop theirs. It is called after a write has been committed. When Redis
// cannot be told, the error is logged and the announcement retried with
// every poll until it goes through; SharedTTL bounds the wait meanwhile.
func (c *Changes) Changed(ctx context.Context) {
	c.epoch.Add(1)
	if c.client == nil {
		return
	}
	if err := announce(ctx, c.client, c.key); err != nil {
		c.pending.Store(true)
		c.log.Error("a change to sign-ins or tenant scopes has not reached the other replicas; retrying", "error", err)
	}
}

// usable reports whether entries may be served now.
func (c *Changes) usable() bool {
	return c.client == nil || c.now().UnixNano() < c.vouched.Load()
}

// watch reads the change token every pollInterval until ctx ends.
func (c *Changes) watch(ctx context.Context) {
	defer close(c.done)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var seen string
	for {
		if c.pending.Load() && announce(ctx, c.client, c.key) == nil {
			c.pending.Store(false)
			c.log.Info("a change held back by Redis has reached the other replicas")
		}
		start := c.now()
		token, err := c.read(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			c.vouched.Store(0)
		default:
			// A new token, or a gap in the reads during which one may have
			// come and gone, drops every entry.
			if token != seen || start.UnixNano() >= c.vouched.Load() {
				c.epoch.Add(1)
			}
			seen = token
			c.vouched.Store(start.Add(vouchFor).UnixNano())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (c *Changes) read(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	token, err := c.client.Get(ctx, c.key).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return token, err
}

// Close stops reading the change token.
func (c *Changes) Close() {
	if c.client == nil {
		return
	}
	c.cancel()
	<-c.done
}
