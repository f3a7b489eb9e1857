package notifications

import (
	"context"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// DeliveryOptions tune the delivery worker; zero values take the
// defaults named on each field.
type DeliveryOptions struct {
	// PollInterval is how often the worker looks for due deliveries
	// besides when an event is raised on this replica (5s).
	PollInterval time.Duration
	// RetryMin and RetryMax bound the backoff after a failed attempt: it
	// doubles from RetryMin with each attempt up to RetryMax, less up to a
	// quarter at random so that replicas do not retry in step (30s, 1h).
	RetryMin time.Duration
	RetryMax time.Duration
	// MaxAttempts is how many attempts a delivery gets before it is dead
	// (10).
	MaxAttempts int
	// Timeout bounds one attempt: an HTTP request, or an SMTP session
	// from dial to QUIT (10s).
	Timeout time.Duration
	// Concurrency is how many sends run at once (4); each round claims at
	// most this many deliveries or digests.
	Concurrency int
	// Lease is how long a claim holds a delivery from other replicas; a
	// delivery whose replica died is claimed again after it (two
	// timeouts and a minute).
	Lease time.Duration
	// StopTimeout is how long Stop waits for sends in flight (Timeout
	// and five seconds).
	StopTimeout time.Duration
	// AllowPrivateNetworks lets channels reach loopback, private,
	// link-local and unspecified addresses, refused otherwise.
	AllowPrivateNetworks bool
	// RootCAs are the authorities trusted by TLS to SMTP servers and
	// webhooks; nil trusts the system's.
	RootCAs *x509.CertPool
	// PublicOrigin (scheme://host[:port]) makes an event's link absolute.
	PublicOrigin string
	// Logger logs failed attempts and dead deliveries (none when nil).
	Logger hclog.Logger
	// Registerer registers the worker's metrics (none when nil).
	Registerer prometheus.Registerer
}

func (o *DeliveryOptions) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.PollInterval, 5*time.Second)
	def(&o.RetryMin, 30*time.Second)
	def(&o.RetryMax, time.Hour)
	def(&o.Timeout, 10*time.Second)
	def(&o.Lease, 2*o.Timeout+time.Minute)
	def(&o.StopTimeout, o.Timeout+5*time.Second)
	if o.RetryMax < o.RetryMin {
		o.RetryMax = o.RetryMin
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 10
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
}

// Worker works through the outbox: every replica runs one, and the lease
// on each claim keeps two from sending a delivery at once, while one that
// died leaves its claims to the others when the lease runs out. A
// delivery is sent at least once: a replica that dies after sending and
// before recording it leaves it to be sent again, which is why receivers
// are told to deduplicate on the event id.
type Worker struct {
	store   *Store
	opts    DeliveryOptions
	send    *senders
	metrics deliveryMetrics
	wake    chan struct{}
	// sends bounds the context of sends in flight, which Stop cancels
	// only after StopTimeout.
	sends  context.Context
	abort  context.CancelFunc
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// NewWorker returns the store's delivery worker; Start starts it. It
// takes over the store's wake hook (OnRaise), so that an event raised on
// this replica goes out without waiting for the next poll.
func NewWorker(s *Store, o DeliveryOptions) *Worker {
	o.defaults()
	w := &Worker{
		store: s, opts: o, wake: make(chan struct{}, 1), done: make(chan struct{}),
		send:    newSenders(o),
		metrics: newDeliveryMetrics(o.Registerer, o.Logger),
	}
	s.OnRaise(w.Wake)
	return w
}

// Wake makes the worker look for due deliveries now.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Start runs the worker until ctx ends or Stop is called.
func (w *Worker) Start(ctx context.Context) {
	ctx, w.cancel = context.WithCancel(ctx)
	w.sends, w.abort = context.WithCancel(context.WithoutCancel(ctx))
	go w.run(ctx)
}

// Stop stops claiming, waits up to StopTimeout for the sends in flight to
// finish and be recorded, then cancels them; a cancelled send is retried
// by another replica, or by this one when it starts again, after its
// lease.
func (w *Worker) Stop() {
	w.once.Do(func() {
		if w.cancel == nil {
			return
		}
		w.cancel()
		t := time.AfterFunc(w.opts.StopTimeout, w.abort)
		<-w.done
		t.Stop()
		w.abort()
	})
}

func (w *Worker) run(ctx context.Context) {
	defer close(w.done)
	tick := time.NewTicker(w.opts.PollInterval)
	defer tick.Stop()
	for {
		w.poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-w.wake:
		}
	}
}

// poll claims and sends rounds of due deliveries until none is left or
// the worker stops, then updates the outbox gauges.
func (w *Worker) poll(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := w.round(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.opts.Logger.Error("notification deliveries not claimed", "error", err)
			}
			break
		}
		if n < w.opts.Concurrency {
			break
		}
	}
	if ctx.Err() == nil {
		w.metrics.observeOutbox(ctx, w.store, w.opts.Logger)
	}
}

// round claims up to Concurrency units (a delivery, or a digest's due
// deliveries of one channel) and sends them in parallel, recording each
// outcome. It returns how many units it claimed.
func (w *Worker) round(ctx context.Context) (int, error) {
	units, err := w.store.claim(ctx, w.opts.Concurrency, w.opts.Lease)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, u := range units {
		wg.Go(func() { w.deliver(u) })
	}
	wg.Wait()
	return len(units), nil
}

// deliver sends one unit and records the outcome. It runs on the sends
// context, so that stopping the worker lets it finish.
func (w *Worker) deliver(u unit) {
	ctx := w.sends
	ch, err := w.store.deliveryChannel(ctx, u.channelID)
	if errors.Is(err, ErrNotFound) {
		// The channel was deleted while its deliveries were claimed; they
		// went with it.
		return
	}
	if err != nil {
		w.record(ctx, u, "", failure{err: err}, time.Now())
		return
	}
	if !ch.Enabled {
		w.record(ctx, u, ch.Kind, failure{err: errChannelDisabled, final: true}, time.Now())
		return
	}
	msg, err := w.store.message(ctx, u, w.opts.PublicOrigin)
	if err != nil {
		w.record(ctx, u, ch.Kind, failure{err: err}, time.Now())
		return
	}
	start := time.Now()
	sendCtx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	err = w.send.send(sendCtx, ch, u.recipient, msg)
	cancel()
	w.metrics.duration.WithLabelValues(ch.Kind).Observe(time.Since(start).Seconds())
	if err != nil {
		var f failure
		if !errors.As(err, &f) {
			f = failure{err: err}
		}
		f.err = errors.New(scrub(f.err.Error(), ch.secrets))
		w.record(ctx, u, ch.Kind, f, start)
		return
	}
	w.record(ctx, u, ch.Kind, failure{}, start)
}

// record writes a unit's outcome: delivered when f has no error, else a
// failure that is retried after the backoff or, final or on the last
// attempt, dead.
func (w *Worker) record(ctx context.Context, u unit, kind string, f failure, at time.Time) {
	log := w.opts.Logger.With("channel_id", u.channelID, "deliveries", len(u.deliveries), "kind", kind)
	if f.err == nil {
		if err := w.store.complete(ctx, u.ids()); err != nil {
			log.Error("delivery sent but not recorded; it will be sent again", "error", err)
			return
		}
		w.metrics.results.WithLabelValues(kind, "delivered").Add(float64(len(u.deliveries)))
		// Latency counts from when the delivery was first due: when its
		// event was raised, or its digest's period ended.
		for _, d := range u.deliveries {
			w.metrics.latency.WithLabelValues(kind).Observe(time.Since(DigestDue(d.Digest, d.CreatedAt)).Seconds())
		}
		return
	}
	attempts := 0
	for _, d := range u.deliveries {
		attempts = max(attempts, d.Attempts+1)
	}
	next := at.Add(w.backoff(attempts))
	dead, err := w.store.fail(ctx, u.ids(), truncate(f.err.Error(), maxLastError), next, w.opts.MaxAttempts, f)
	if err != nil {
		log.Error("delivery failure not recorded", "error", err)
		return
	}
	w.metrics.results.WithLabelValues(kind, "failed").Add(float64(len(u.deliveries) - dead))
	w.metrics.results.WithLabelValues(kind, "dead").Add(float64(dead))
	if dead > 0 {
		log.Warn("notification delivery dead", "attempts", attempts, "error", f.err.Error())
	} else {
		log.Info("notification delivery failed; will retry", "attempts", attempts, "next_attempt_at", next, "error", f.err.Error())
	}
}

// backoff is the wait after the attempts-th failed attempt: RetryMin
// doubled for each attempt before it, at most RetryMax, less a random part
// of up to a quarter, never under RetryMin.
func (w *Worker) backoff(attempts int) time.Duration {
	d := w.opts.RetryMin
	for i := 1; i < attempts && d < w.opts.RetryMax; i++ {
		d *= 2
	}
	d = min(d, w.opts.RetryMax)
	if q := int64(d / 4); q > 0 {
		d -= time.Duration(rand.Int64N(q + 1))
	}
	return max(d, w.opts.RetryMin)
}

// failure is a failed send: final when retrying cannot help (a channel
// disabled, a webhook gone).
type failure struct {
	err   error
	final bool
}

func (f failure) Error() string { return f.err.Error() }

var errChannelDisabled = errors.New("channel disabled: its pending deliveries are dropped")

// maxLastError bounds a delivery's recorded error.
const maxLastError = 500
