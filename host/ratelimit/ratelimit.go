// Package ratelimit enforces Steward's request budgets: a fixed window of
// requests per client for ordinary routes, a smaller one for authentication
// routes, another small one for costly routes on top of the ordinary one, a
// larger one of its own for a browser's pages and fragments, and a cap on
// concurrently running sync requests.
//
// Budgets are counted in process memory by default. Given a Redis client
// they are counted in Redis instead, so that every host replica draws on
// the same budget for a given client.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
	redisstore "github.com/ulule/limiter/v3/drivers/store/redis"
)

// Class selects which budgets a request is counted against. Each class has a
// budget of its own, so a login attempt spends the auth budget only and
// never eats into the client's ordinary allowance; a costly request spends
// both the costly and the ordinary one (see Middleware).
type Class uint8

const (
	// Default is the budget for every route without a stricter class.
	Default Class = iota
	// Auth is the budget for authentication routes, kept small to slow
	// credential guessing.
	Auth
	// Costly is the budget for routes that do expensive work on demand,
	// such as a dry run over a whole dataset. It narrows Default rather
	// than replacing it: a costly request is ordinary traffic too, and a
	// separate allowance would let a client add the two together.
	Costly
	// UI is the budget of a browser's pages, their fragments and assets.
	// One page view loads several fragments at once, so a person moving
	// quickly through the pages would spend the Default budget in a few
	// seconds and then find their API calls refused too; the pages get an
	// allowance of their own, larger, and API calls keep theirs.
	UI
)

// String returns the name used for the class in store keys and logs.
func (c Class) String() string {
	switch c {
	case Default:
		return "default"
	case Auth:
		return "auth"
	case Costly:
		return "costly"
	case UI:
		return "ui"
	default:
		return fmt.Sprintf("class(%d)", uint8(c))
	}
}

// Defaults applied by New to zero fields of Config.
const (
	DefaultPerMinute     = 100
	DefaultAuthPerMinute = 10
	// DefaultCostlyPerMinute is a costly route's sustained rate
	// from when each plugin process kept its own limiter (a bucket of 5
	// refilled one every 6 seconds). The fixed window may hand out all 10
	// at once, but it is one count for every replica, where each replica's
	// plugin used to grant its own.
	DefaultCostlyPerMinute = 10
	// DefaultUIPerMinute lets a person open a page every two seconds
	// with a dozen fragments each, with room for the slots that refresh
	// themselves.
	DefaultUIPerMinute  = 600
	DefaultPrefix       = "steward:ratelimit"
	DefaultWindow       = time.Minute
	DefaultStoreTimeout = 250 * time.Millisecond
)

// Config configures a Limiter. Zero fields take the package defaults.
type Config struct {
	// Redis selects the Redis store; the limiter never closes it. Nil keeps
	// counts in process memory, which is only correct for a single replica.
	Redis redis.UniversalClient
	// Prefix namespaces the keys in the store; replicas that must share a
	// budget need the same prefix.
	Prefix string
	// DefaultPerMinute, AuthPerMinute, CostlyPerMinute and UIPerMinute are
	// the budgets per window of the Default, Auth, Costly and UI classes.
	DefaultPerMinute int
	AuthPerMinute    int
	CostlyPerMinute  int
	UIPerMinute      int
	// Window is the length of the fixed counting window. It exists so tests
	// and experiments need not wait a real minute; production keeps the
	// default, which is what the "per minute" budgets mean.
	Window time.Duration
	// StoreTimeout bounds each Take's round trip to Redis, so that a sick
	// Redis delays a request by at most this much before the middleware
	// fails open.
	StoreTimeout time.Duration
}

// Result is the state of one client's budget after a Take.
type Result struct {
	Limit     int64
	Remaining int64
	// Reset is when the current window ends, rounded up to a whole second
	// because the stores report it with one-second precision and a client
	// that waits until Reset must not arrive early.
	Reset   time.Time
	Allowed bool
}

// Limiter counts requests per class and key.
type Limiter struct {
	classes      map[Class]*limiter.Limiter
	window       time.Duration
	storeTimeout time.Duration
}

// New builds a Limiter. With Redis it loads the limiter's scripts there at
// once and returns an error if it cannot, so that a misconfigured replica
// fails at start-up instead of silently counting alone; once running,
// store failures are tolerated by the middleware (see Middleware). The
// client must honour context deadlines (go-redis's ContextTimeoutEnabled)
// for StoreTimeout to have an effect.
func New(cfg Config) (*Limiter, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	opts := limiter.StoreOptions{Prefix: cfg.Prefix, CleanUpInterval: limiter.DefaultCleanUpInterval}
	if cfg.Redis == nil {
		return newLimiter(memory.NewStoreWithOptions(opts), cfg), nil
	}
	store, err := redisstore.NewStoreWithOptions(cfg.Redis, opts)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: prepare redis store: %w", err)
	}
	return newLimiter(store, cfg), nil
}

func withDefaults(cfg Config) (Config, error) {
	if cfg.DefaultPerMinute < 0 || cfg.AuthPerMinute < 0 || cfg.CostlyPerMinute < 0 || cfg.UIPerMinute < 0 || cfg.Window < 0 || cfg.StoreTimeout < 0 {
		return cfg, errors.New("ratelimit: budgets, window and store timeout must not be negative")
	}
	if cfg.DefaultPerMinute == 0 {
		cfg.DefaultPerMinute = DefaultPerMinute
	}
	if cfg.AuthPerMinute == 0 {
		cfg.AuthPerMinute = DefaultAuthPerMinute
	}
	if cfg.CostlyPerMinute == 0 {
		cfg.CostlyPerMinute = DefaultCostlyPerMinute
	}
	if cfg.UIPerMinute == 0 {
		cfg.UIPerMinute = DefaultUIPerMinute
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.StoreTimeout == 0 {
		cfg.StoreTimeout = DefaultStoreTimeout
	}
	return cfg, nil
}

func newLimiter(store limiter.Store, cfg Config) *Limiter {
	rate := func(n int) limiter.Rate { return limiter.Rate{Period: cfg.Window, Limit: int64(n)} }
	return &Limiter{
		classes: map[Class]*limiter.Limiter{
			Default: limiter.New(store, rate(cfg.DefaultPerMinute)),
			Auth:    limiter.New(store, rate(cfg.AuthPerMinute)),
			Costly:  limiter.New(store, rate(cfg.CostlyPerMinute)),
			UI:      limiter.New(store, rate(cfg.UIPerMinute)),
		},
		window:       cfg.Window,
		storeTimeout: cfg.StoreTimeout,
	}
}

// Take counts one request by key against the budget of class and reports
// whether it is allowed. Rejected requests are counted too, so a client that
// keeps hammering does not get a fresh allowance any sooner.
func (l *Limiter) Take(ctx context.Context, class Class, key string) (Result, error) {
	lim, ok := l.classes[class]
	if !ok {
		return Result{}, fmt.Errorf("ratelimit: unknown class %s", class)
	}
	ctx, cancel := context.WithTimeout(ctx, l.storeTimeout)
	defer cancel()
	got, err := lim.Get(ctx, class.String()+":"+key)
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: take %s budget: %w", class, err)
	}
	return Result{
		Limit:     got.Limit,
		Remaining: got.Remaining,
		Reset:     time.Unix(got.Reset+1, 0),
		Allowed:   !got.Reached,
	}, nil
}

// take counts a request against every budget its class draws on and
// returns the Result to report. A Costly request is counted against
// Default first and against Costly only if Default allowed it: a request
// refused anyway does no costly work. Of two allowances it reports the one
// with fewer requests left, since that is the one the client meets first.
func (l *Limiter) take(ctx context.Context, class Class, key string) (Result, error) {
	if class != Costly {
		return l.Take(ctx, class, key)
	}
	def, err := l.Take(ctx, Default, key)
	if err != nil || !def.Allowed {
		return def, err
	}
	costly, err := l.Take(ctx, Costly, key)
	if err != nil || costly.Remaining <= def.Remaining {
		return costly, err
	}
	return def, nil
}

// failOpen is the Result reported when the store cannot be asked: the
// request is let through and described as the first of a fresh window,
// which is the only state the limiter can vouch for without the store.
func (l *Limiter) failOpen(class Class, now time.Time) Result {
	var limit int64
	if lim, ok := l.classes[class]; ok {
		limit = lim.Rate.Limit
	}
	return Result{
		Limit:     limit,
		Remaining: max(limit-1, 0),
		Reset:     now.Add(l.window).Truncate(time.Second).Add(time.Second),
		Allowed:   true,
	}
}
