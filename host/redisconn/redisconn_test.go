package redisconn

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/internal/logsink"
)

// secret is the password of every URL here; no error, log line or status
// may contain it.
const secret = "s3cret-canary"

func noSecret(t *testing.T, what, text string) {
	t.Helper()
	if strings.Contains(text, secret) {
		t.Errorf("%s repeats the password: %s", what, text)
	}
}

func TestOptionsErrorsNameTheVariableNotThePassword(t *testing.T) {
	tests := []struct{ name, url string }{
		{"not a URL", "redis://:" + secret + "@127.0.0.1:port/0"},
		{"wrong scheme", "http://:" + secret + "@127.0.0.1:6379/0"},
		{"bad database", "redis://:" + secret + "@127.0.0.1:6379/x"},
		{"bad option", "redis://:" + secret + "@127.0.0.1:6379/0?pool_size=x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Options(tt.url)
			if err == nil {
				t.Fatal("Options succeeded, want an error")
			}
			if !strings.Contains(err.Error(), Variable) {
				t.Errorf("error does not name %s: %v", Variable, err)
			}
			noSecret(t, "error", err.Error())
		})
	}
}

func TestOptionsSetTimeoutsTheURLMayOverride(t *testing.T) {
	opts, _, err := Options("redis://127.0.0.1:6379/0?read_timeout=2s&pool_size=7")
	if err != nil {
		t.Fatal(err)
	}
	if opts.ReadTimeout != 2*time.Second || opts.PoolSize != 7 {
		t.Errorf("the URL's settings are not kept: read %v, pool %d", opts.ReadTimeout, opts.PoolSize)
	}
	if opts.DialTimeout != DialTimeout || opts.WriteTimeout != WriteTimeout || opts.PoolTimeout != PoolTimeout ||
		opts.MinIdleConns != MinIdleConns || opts.MaxRetries != MaxRetries || opts.ConnMaxIdleTime != ConnMaxIdleTime ||
		opts.DialerRetries != DialerRetries {
		t.Errorf("defaults not applied: %+v", opts)
	}
	if !opts.ContextTimeoutEnabled {
		t.Error("context deadlines are ignored")
	}
}

func TestOpenUnreachableNeverEchoesPassword(t *testing.T) {
	var logs logsink.Buffer
	// Port 1 on loopback refuses at once.
	_, err := Open(context.Background(), "redis://:"+secret+"@127.0.0.1:1/0", logger(&logs))
	if err == nil {
		t.Fatal("Open succeeded with nothing listening")
	}
	if !strings.Contains(err.Error(), Variable) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("error does not say which setting and server: %v", err)
	}
	noSecret(t, "error", err.Error())
	noSecret(t, "log", logs.String())
}

func TestOpenWrongPasswordNeverEchoesIt(t *testing.T) {
	u, err := url.Parse(storetest.RedisUserURL(t, secret))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), secret+"-wrong")
	var logs logsink.Buffer
	_, err = Open(context.Background(), u.String(), logger(&logs))
	if err == nil {
		t.Fatal("Open succeeded with a wrong password")
	}
	if !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("the error does not say the password is wrong: %v", err)
	}
	noSecret(t, "error", err.Error())
	noSecret(t, "log", logs.String())
}

// TestOutageIsReportedOncePerTransition: while Redis is away every command
// fails at once with ErrUnavailable; the outage is logged once and its end
// once, and the status and metrics follow; no report repeats the password.
func TestOutageIsReportedOncePerTransition(t *testing.T) {
	proxy := storetest.NewRedisProxy(t, storetest.RedisUserURL(t, secret))
	var logs logsink.Buffer
	c, err := Open(context.Background(), proxy.URL, logger(&logs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	ctx := context.Background()
	key := "steward_test_outage_" + proxy.URL

	proxy.Cut()
	for range 20 {
		err := c.Client().Get(ctx, key).Err()
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Get during the outage: %v, want ErrUnavailable", err)
		}
		noSecret(t, "error", err.Error())
	}
	_, err = c.Client().TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, key)
		p.Expire(ctx, key, time.Minute)
		return nil
	})
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("pipeline during the outage: %v, want ErrUnavailable", err)
	}
	st := c.Status()
	if st.Up || st.Since.IsZero() || st.Error == "" {
		t.Errorf("Status during the outage = %+v", st)
	}
	noSecret(t, "status", st.Error)
	if got := testutil.ToFloat64(gauge(t, reg, "steward_redis_up")); got != 0 {
		t.Errorf("steward_redis_up = %v during the outage", got)
	}

	proxy.Restore()
	deadline := time.Now().Add(5 * time.Second)
	for !c.Status().Up {
		if time.Now().After(deadline) {
			t.Fatal("Redis not reported up again")
		}
		if err := c.Client().Get(ctx, key).Err(); err != nil && !errors.Is(err, redis.Nil) && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Get after the outage: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	out := logs.String()
	if n := strings.Count(out, "Redis is unreachable"); n != 1 {
		t.Errorf("the outage is logged %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "Redis answers again"); n != 1 {
		t.Errorf("the recovery is logged %d times, want once:\n%s", n, out)
	}
	noSecret(t, "log", out)
	if got := testutil.ToFloat64(gauge(t, reg, "steward_redis_up")); got != 1 {
		t.Errorf("steward_redis_up = %v after the outage", got)
	}
	if got := testutil.ToFloat64(gauge(t, reg, "steward_redis_outages_total")); got != 1 {
		t.Errorf("steward_redis_outages_total = %v, want 1", got)
	}
}

// TestHungRedisFailsFast: once a command has timed out on a Redis that
// stopped answering, the next ones fail at once rather than each waiting
// out the timeouts, and a probe finds Redis again when it is back.
func TestHungRedisFailsFast(t *testing.T) {
	proxy := storetest.NewRedisProxy(t, storetest.RedisURL(t))
	c, err := Open(context.Background(), proxy.URL, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	key := storetest.RedisPrefix(t, storetest.RedisURL(t)) + ":k"

	proxy.Hang()
	if err := c.Client().Get(ctx, key).Err(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Get from a hung Redis: %v, want ErrUnavailable", err)
	}
	const n = 20
	fast := 0
	for range n {
		start := time.Now()
		if err := c.Client().Get(ctx, key).Err(); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Get from a hung Redis: %v, want ErrUnavailable", err)
		}
		if time.Since(start) < 20*time.Millisecond {
			fast++
		}
	}
	// The probes (one a probeEvery) wait out the timeout; no other may.
	if fast < n-3 {
		t.Errorf("%d of %d commands failed at once, want all but the probes", fast, n)
	}

	proxy.Restore()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := c.Client().Get(ctx, key).Err()
		if err == nil || errors.Is(err, redis.Nil) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Redis not found again: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestErrorReplyIsNotAnOutage: a command Redis refuses is the caller's
// mistake, not an outage.
func TestErrorReplyIsNotAnOutage(t *testing.T) {
	c, err := Open(context.Background(), storetest.RedisURL(t), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	key := storetest.RedisPrefix(t, storetest.RedisURL(t)) + ":k"
	if err := c.Client().Set(ctx, key, "not a number", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	err = c.Client().Incr(ctx, key).Err()
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("INCR of a string: %v, want an error reply", err)
	}
	if !c.Status().Up {
		t.Error("an error reply is reported as an outage")
	}
}

// gauge is the one metric named name in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	return collectorFunc(func(ch chan<- prometheus.Metric) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				m := mf.GetMetric()[0]
				v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
				ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, "", nil, nil), prometheus.GaugeValue, v)
				return
			}
		}
		t.Fatalf("no metric %s", name)
	})
}

type collectorFunc func(chan<- prometheus.Metric)

func (f collectorFunc) Describe(chan<- *prometheus.Desc)    {}
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }

func logger(w *logsink.Buffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: w, Level: hclog.Debug})
}

// TestCallerDeadlineIsNotAnOutage: a command whose caller's own, tighter
// deadline ran out fails, but Redis is not reported unreachable for it (a
// host starved of CPU misses such budgets while Redis is well); the
// client's own timeouts still are, tripAfter of them in a row.
func TestCallerDeadlineIsNotAnOutage(t *testing.T) {
	proxy := storetest.NewRedisProxy(t, storetest.RedisURL(t))
	c, err := Open(context.Background(), proxy.URL, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	key := storetest.RedisPrefix(t, storetest.RedisURL(t)) + ":k"

	proxy.Hang()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	err = c.Client().Get(ctx, key).Err()
	cancel()
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Get past the caller's deadline: %v, want a failure that is not ErrUnavailable", err)
	}
	if !c.Status().Up {
		t.Fatal("the caller's deadline is reported as an outage")
	}
	// The next commands are tried, not failed at once, and fail on the
	// client's own timeout: one is not an outage yet, tripAfter in a row
	// are.
	for i := 1; i <= tripAfter; i++ {
		if err := c.Client().Get(context.Background(), key).Err(); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Get %d from a hung Redis within the client's own timeout: %v, want ErrUnavailable", i, err)
		}
		if up := c.Status().Up; up != (i < tripAfter) {
			t.Fatalf("after %d timeouts in a row Redis is reported up: %v", i, up)
		}
	}
}

// TestStallIsNotAnOutage: many commands timing out at one moment, as on a
// host that stalled longer than the timeouts, are not an outage when the
// next command is answered; timeouts that go on for tripSpan are, and
// refused connections are at once.
func TestStallIsNotAnOutage(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	c := &Conn{log: hclog.NewNullLogger(), now: func() time.Time { return at }}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for range 50 {
		c.observe(timeout)
	}
	if !c.Status().Up {
		t.Fatal("50 commands timing out at one moment are reported as an outage")
	}
	c.observe(nil)
	for i := range 3 {
		at = at.Add(tripSpan / 2)
		c.observe(timeout)
		if up := c.Status().Up; up != (i < 2) {
			t.Fatalf("after %d timeouts over %s Redis is reported up: %v", i+1, time.Duration(i)*tripSpan/2, up)
		}
	}

	c = &Conn{log: hclog.NewNullLogger(), now: func() time.Time { return at }}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for i := range tripAfter {
		c.observe(refused)
		if up := c.Status().Up; up != (i < tripAfter-1) {
			t.Fatalf("after %d refused connections at one moment Redis is reported up: %v", i+1, up)
		}
	}
}
