// Package redisconn builds the host's one connection to Redis and watches
// it. The host opens one Conn from STEWARD_REDIS_URL and hands its client to
// every part that keeps state in Redis, each under a key prefix of its own:
// the cache (<prefix>:cache), the rate limiter (<prefix>:ratelimit), the
// token revocation list (<prefix>:revoked) and the authentication caches'
// change token (<prefix>:auth:changed). The host closes it once, last.
//
// # Failure policy
//
// Redis holds two kinds of state, and an outage is handled by kind:
//
//   - Shortcuts, which the host can do without: cached values, rate-limit
//     counts and the change token behind authentication's caches. While
//     Redis is unreachable a cache lookup fails and its caller computes
//     the value again; a request is let through as the first of a fresh
//     rate-limit window; and authentication's caches are bypassed, every
//     answer read from the database. The service is slower and its rate
//     limits are not enforced, but no answer is wrong.
//   - Authority, which no other store holds: the list of revoked access
//     tokens and the state of identity-provider sign-ins in progress. While
//     Redis is unreachable a revoked token cannot be told from a good one,
//     so a request with a bearer token, a logout and a sign-in answer 503
//     with Retry-After instead of guessing (as does clearing the cache,
//     which cannot be done). API keys live in the database and keep
//     working.
//
// A command fails on its own deadline (see the timeouts below), never
// waits for Redis to come back, and its error wraps ErrUnavailable, which
// the HTTP layer answers with 503. A command whose caller's context ended
// first (a tighter budget of the caller's) fails without ErrUnavailable
// and says nothing of Redis: a host too busy to read an answer within
// such a budget is slow, not cut off. Once tripAfter commands in a row
// have failed so (timeouts over tripSpan), the next ones fail at once
// without trying, except one every probeEvery that finds out whether
// Redis is back: a Redis that stopped answering without closing its
// connections would otherwise hold every request for the timeouts. The Conn logs each change of state once
// — unreachable, then reachable again — never per request, and reports it
// to Status (the health checks' "redis" component) and to the metrics
// steward_redis_up and steward_redis_outages_total.
//
// At start-up Redis must answer: a host that cannot reach the Redis it is
// configured with refuses to start rather than run with state of its own
// that the other replicas cannot see.
//
// No password reaches an error, a log line or a health report: the URL is
// only ever shown through url.URL.Redacted.
package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Variable is the setting a Redis URL comes from, named in its errors.
const Variable = "STEWARD_REDIS_URL"

// Connection settings, used where the URL's query (dial_timeout,
// read_timeout, write_timeout, pool_size, min_idle_conns, pool_timeout,
// conn_max_idle_time, max_retries) does not set them. Redis answers in well
// under a millisecond on a healthy network, so a read that takes half a
// second means it is in trouble, and a request is better served by the
// failure policy than by waiting longer.
const (
	DialTimeout     = time.Second
	ReadTimeout     = 500 * time.Millisecond
	WriteTimeout    = 500 * time.Millisecond
	PoolSize        = 32
	MinIdleConns    = 2
	PoolTimeout     = time.Second
	ConnMaxIdleTime = 5 * time.Minute
	// MaxRetries is one: enough to replace a pooled connection the server
	// closed while idle, without tripling the wait during an outage.
	MaxRetries = 1
	// DialerRetries is one attempt: go-redis's default of five, 100 ms
	// apart, held every command half a second during an outage before
	// the failure policy could apply.
	DialerRetries = 1
)

// startTimeout bounds the start-up check that Redis answers.
const startTimeout = 5 * time.Second

// steadyFor is how long Redis must answer without a failure before the
// Conn reports it reachable again, so that a Redis failing every other
// command is reported as one outage rather than as one per command.
const steadyFor = time.Second

// probeEvery is how often, while commands fail, one is let through to
// Redis; the others fail at once.
const probeEvery = 100 * time.Millisecond

// tripAfter is how many commands in a row must fail for want of Redis
// before the others fail at once and an outage is reported, and tripSpan
// how long a streak of timeouts must last: a Redis that hangs keeps timing
// them out, while a host short of CPU that stalls for longer than the
// timeouts times out every command in flight at the same moment, and the
// next ones are answered. A refused connection needs no span.
const (
	tripAfter = 3
	tripSpan  = time.Second
)

// errNotTried is the cause of a command failed without trying.
var errNotTried = errors.New("not tried: Redis did not answer the last command")

// ErrUnavailable is wrapped by the error of every command that failed
// because Redis could not be reached or could not serve it.
var ErrUnavailable = errors.New("redis unavailable")

// Conn is the host's connection to Redis.
type Conn struct {
	client *redis.Client
	log    hclog.Logger
	// password is removed from any error text the Conn reports.
	password string
	now      func() time.Time

	down        atomic.Bool
	lastFailure atomic.Int64
	// tripped is set by a failed command and cleared by one that Redis
	// answered; while it is set only probes reach Redis.
	tripped   atomic.Bool
	lastProbe atomic.Int64
	// inARow counts the commands that failed since one was answered, the
	// first of them at streakStart (Unix nanoseconds).
	inARow      atomic.Int32
	streakStart atomic.Int64
	failures    atomic.Uint64
	outages     atomic.Uint64

	mu      sync.Mutex
	since   time.Time
	lastErr string
}

// Open connects to the Redis at rawURL and checks that it answers.
func Open(ctx context.Context, rawURL string, log hclog.Logger) (*Conn, error) {
	opts, u, err := Options(rawURL)
	if err != nil {
		return nil, err
	}
	// go-redis logs every failed dial on its own; the Conn reports
	// outages once, so its lines are kept for debugging.
	redis.SetLogger(debugLog{log})
	password, _ := u.User.Password()
	c := &Conn{client: redis.NewClient(opts), log: log, password: password, now: time.Now}
	c.client.AddHook(hook{c})
	// A probe, so that its retry is tried too and the error says why.
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, probing{}, true), startTimeout)
	defer cancel()
	if err := c.client.Ping(ctx).Err(); err != nil {
		_ = c.client.Close()
		return nil, fmt.Errorf("%s=%s does not answer: %s", Variable, u.Redacted(), c.scrub(err))
	}
	return c, nil
}

// Options parses rawURL into the client's options with the package's
// connection settings filled in, and returns the URL for display through
// its Redacted method. Its errors name Variable and never repeat a
// password.
func Options(rawURL string) (*redis.Options, *url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse quotes the whole URL in its error, password included.
		return nil, nil, fmt.Errorf("%s is not a valid URL; expected redis://[:password@]host:port/db", Variable)
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		msg := err.Error()
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
		return nil, nil, fmt.Errorf("%s=%s: %s", Variable, u.Redacted(), msg)
	}
	setDefault(&opts.DialTimeout, DialTimeout)
	setDefault(&opts.ReadTimeout, ReadTimeout)
	setDefault(&opts.WriteTimeout, WriteTimeout)
	setDefault(&opts.PoolTimeout, PoolTimeout)
	setDefault(&opts.ConnMaxIdleTime, ConnMaxIdleTime)
	setDefault(&opts.PoolSize, PoolSize)
	setDefault(&opts.MinIdleConns, MinIdleConns)
	setDefault(&opts.MaxRetries, MaxRetries)
	setDefault(&opts.DialerRetries, DialerRetries)
	// Without it go-redis ignores context deadlines on the socket, and a
	// caller's tighter bound (the rate limiter's, the change watcher's)
	// would have no effect.
	opts.ContextTimeoutEnabled = true
	return opts, u, nil
}

func setDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}

// debugLog passes go-redis's own log lines to the host's log at debug
// level.
type debugLog struct{ log hclog.Logger }

func (d debugLog) Printf(_ context.Context, format string, v ...any) {
	d.log.Debug(fmt.Sprintf(format, v...))
}

// Client is the client to hand to the parts that keep state in Redis.
func (c *Conn) Client() *redis.Client { return c.client }

// Close closes the client; the parts using it must be stopped first.
func (c *Conn) Close() error { return c.client.Close() }

// Status is the state of the connection as the health checks report it.
type Status struct {
	Up bool
	// Since is when the current outage began; zero while up.
	Since time.Time
	// Error is the last failure of the current outage.
	Error string
}

// Status reports whether Redis is reachable.
func (c *Conn) Status() Status {
	if !c.down.Load() {
		return Status{Up: true}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return Status{Since: c.since, Error: c.lastErr}
}

// scrub is err's text without the password, which go-redis does not put in
// its errors today; this keeps it so if a future version or a server
// message ever does.
func (c *Conn) scrub(err error) string {
	msg := err.Error()
	if c.password != "" {
		msg = strings.ReplaceAll(msg, c.password, "xxxxx")
	}
	return msg
}

// outcome classifies a command's result.
type outcome uint8

const (
	answered outcome = iota
	unreachable
	// neither says nothing about Redis: the caller gave up, or the host
	// closed the client.
	neither
)

// unusable are the error replies of a Redis that is up but cannot serve:
// loading its data, a replica that lost its primary, a refused login.
var unusable = []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "NOAUTH", "WRONGPASS", "NOPERM"}

func classify(err error) outcome {
	var reply redis.Error
	switch {
	case err == nil, errors.Is(err, redis.Nil):
		return answered
	case errors.Is(err, context.Canceled), errors.Is(err, redis.ErrClosed):
		return neither
	case errors.As(err, &reply):
		for _, p := range unusable {
			if redis.HasErrorPrefix(err, p) {
				return unreachable
			}
		}
		// Any other error reply is a mistake in the command, from a
		// Redis that answers.
		return answered
	}
	return unreachable
}

// observe records a command's result and reports whether it failed for
// want of Redis.
func (c *Conn) observe(err error) bool {
	switch classify(err) {
	case answered:
		c.inARow.Store(0)
		c.tripped.Store(false)
		if c.down.Load() && c.now().UnixNano()-c.lastFailure.Load() >= int64(steadyFor) {
			c.recovered()
		}
	case unreachable:
		c.failed(err)
		return true
	}
	return false
}

func (c *Conn) failed(err error) {
	c.failures.Add(1)
	now := c.now()
	n := c.inARow.Add(1)
	if n == 1 {
		c.streakStart.Store(now.UnixNano())
	}
	if !c.tripped.Load() && (n < tripAfter || timedOut(err) && now.UnixNano()-c.streakStart.Load() < int64(tripSpan)) {
		return
	}
	c.lastFailure.Store(now.UnixNano())
	// The next probe is due probeEvery after this failure, not after the
	// start of the probe that may have ended in it: a probe waiting out a
	// timeout must not let the commands behind it through as probes.
	c.lastProbe.Store(now.UnixNano())
	c.tripped.Store(true)
	msg := c.scrub(err)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastErr = msg
	if c.down.Load() {
		return
	}
	c.down.Store(true)
	c.since = now
	c.outages.Add(1)
	c.log.Error("Redis is unreachable: rate limits are not enforced, cached values are computed again, "+
		"authentication's caches are bypassed, and bearer tokens and sign-ins are refused with 503 until it answers", "error", msg)
}

// timedOut reports whether err is a timeout, which a stalled host gives as
// well as a hung Redis.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

func (c *Conn) recovered() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.down.Load() {
		return
	}
	c.down.Store(false)
	c.log.Info("Redis answers again", "outage", c.now().Sub(c.since).Round(time.Millisecond).String())
	c.since, c.lastErr = time.Time{}, ""
}

// unavailableError is a command's error marked as an outage.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string   { return "redis unavailable: " + e.err.Error() }
func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.err} }

// markUnavailable marks the error of a command of a failed pipeline.
func markUnavailable(cmd redis.Cmder) {
	if err := cmd.Err(); err != nil && !errors.Is(err, ErrUnavailable) && classify(err) == unreachable {
		cmd.SetErr(&unavailableError{err})
	}
}

// probing marks the context of a probe, which the commands that set up a
// new connection (HELLO, AUTH, SELECT) run with: they belong to the probe
// and must be let through with it.
type probing struct{}

// admit returns ctx for a command to run with, or false when the command is
// to fail without trying: while the last command failed for want of Redis,
// unless it is (part of) the probe of the current probeEvery.
func (c *Conn) admit(ctx context.Context) (context.Context, bool) {
	if !c.tripped.Load() || ctx.Value(probing{}) != nil {
		return ctx, true
	}
	now := c.now().UnixNano()
	last := c.lastProbe.Load()
	if now-last < int64(probeEvery) || !c.lastProbe.CompareAndSwap(last, now) {
		return ctx, false
	}
	return context.WithValue(ctx, probing{}, true), true
}

// callerGaveUp reports whether a command failed because its caller's own
// context ended first: a budget tighter than the client's timeouts (the
// rate limiter's, the change watcher's) that ran out says nothing of
// Redis, and on a host starved of CPU it runs out while Redis is well.
// Only the client's own timeouts and errors count as an outage.
func callerGaveUp(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil
}

// hook sees the result of every command the client runs.
type hook struct{ c *Conn }

func (h hook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		ctx, ok := h.c.admit(ctx)
		if !ok {
			h.c.failures.Add(1)
			err := &unavailableError{errNotTried}
			cmd.SetErr(err)
			return err
		}
		err := next(ctx, cmd)
		if errors.Is(err, ErrUnavailable) {
			// Observed already: a command that sets up a connection
			// failed within this one.
			return err
		}
		if callerGaveUp(ctx, err) {
			return err
		}
		if h.c.observe(err) {
			// The client sets the command's error from what the hook
			// returns.
			err = &unavailableError{err}
			cmd.SetErr(err)
		}
		return err
	}
}

func (h hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		ctx, ok := h.c.admit(ctx)
		if !ok {
			h.c.failures.Add(1)
			err := &unavailableError{errNotTried}
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		err := next(ctx, cmds)
		if errors.Is(err, ErrUnavailable) || callerGaveUp(ctx, err) {
			return err
		}
		if h.c.observe(err) {
			for _, cmd := range cmds {
				markUnavailable(cmd)
			}
			return &unavailableError{err}
		}
		return err
	}
}

var (
	upDesc       = prometheus.NewDesc("steward_redis_up", "1 while Redis answers, 0 during an outage.", nil, nil)
	outagesDesc  = prometheus.NewDesc("steward_redis_outages_total", "Times Redis became unreachable.", nil, nil)
	failuresDesc = prometheus.NewDesc("steward_redis_failed_commands_total", "Commands that failed for want of Redis.", nil, nil)
	connsDesc    = prometheus.NewDesc("steward_redis_pool_connections", "Connections in the pool, by state.", []string{"state"}, nil)
	timeoutsDesc = prometheus.NewDesc("steward_redis_pool_timeouts_total", "Times a command waited PoolTimeout for a free connection in vain.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *Conn) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upDesc, outagesDesc, failuresDesc, connsDesc, timeoutsDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Conn) Collect(ch chan<- prometheus.Metric) {
	up := 1.0
	if c.down.Load() {
		up = 0
	}
	ps := c.client.PoolStats()
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(outagesDesc, prometheus.CounterValue, float64(c.outages.Load()))
	ch <- prometheus.MustNewConstMetric(failuresDesc, prometheus.CounterValue, float64(c.failures.Load()))
	ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(ps.IdleConns), "idle")
	ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(ps.TotalConns-ps.IdleConns), "in_use")
	ch <- prometheus.MustNewConstMetric(timeoutsDesc, prometheus.CounterValue, float64(ps.Timeouts))
}
