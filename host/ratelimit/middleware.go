package ratelimit

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Response headers describing the client's budget.
const (
	HeaderLimit     = "X-RateLimit-Limit"
	HeaderRemaining = "X-RateLimit-Remaining"
	HeaderReset     = "X-RateLimit-Reset"
)

// LimitedFunc writes the response for a request refused for lack of budget
// or capacity. The status and Retry-After header are already set when it
// runs; retryAfter is passed for the body.
type LimitedFunc func(c *fiber.Ctx, retryAfter time.Duration) error

// MiddlewareOptions tailors Middleware. Every field is optional.
type MiddlewareOptions struct {
	// ClassOf picks the budget for a request; nil counts everything against
	// Default.
	ClassOf func(c *fiber.Ctx) Class
	// KeyOf identifies the client; nil keys by "ip:" plus the client address.
	KeyOf func(c *fiber.Ctx) string
	// OnLimited writes the 429 body; nil uses DefaultOnLimited.
	OnLimited LimitedFunc
	// OnStoreError is told, once per affected request, when the store could
	// not be asked and the request was let through; nil ignores it, for a
	// host whose Redis connection reports outages itself (see redisconn).
	OnStoreError func(c *fiber.Ctx, err error)
}

// Middleware counts every request against its client's budget and answers
// 429 with Retry-After once the budget is spent. Register it before all
// routes, including health checks, so that every response carries the
// X-RateLimit-* headers.
//
// A Costly request is counted against Default as well as Costly, and its
// headers describe the budget that refused it or, when both allow it, the
// one with fewer requests left, so that a client pacing itself by the
// headers is not refused by the other.
//
// The headers are set before the rest of the chain runs, which keeps them on
// responses that fiber's ErrorHandler builds from a returned error (404s
// included), as long as that handler does not reset the response. They are
// set again once the chain returns because a handler that replaces the whole
// response, such as a proxy copying a plugin's reply, would otherwise drop
// them.
//
// When the store fails, for instance because Redis is down, the middleware
// fails open: the request goes through, OnStoreError is told, and the
// headers describe a fresh window (full limit less this request, reset one
// window from now), the only state it can vouch for. Refusing every request
// while Redis is away would turn a cache outage into a full outage.
func Middleware(l *Limiter, opts MiddlewareOptions) fiber.Handler {
	classOf := opts.ClassOf
	if classOf == nil {
		classOf = func(*fiber.Ctx) Class { return Default }
	}
	keyOf := opts.KeyOf
	if keyOf == nil {
		keyOf = func(c *fiber.Ctx) string { return "ip:" + c.IP() }
	}
	onLimited := opts.OnLimited
	if onLimited == nil {
		onLimited = DefaultOnLimited
	}
	onStoreError := opts.OnStoreError
	if onStoreError == nil {
		onStoreError = func(*fiber.Ctx, error) {}
	}

	return func(c *fiber.Ctx) error {
		class := classOf(c)
		res, err := l.take(c.UserContext(), class, keyOf(c))
		if err != nil {
			onStoreError(c, err)
			res = l.failOpen(class, time.Now())
		}
		setHeaders(c, res)
		if !res.Allowed {
			retryAfter := retryAfterFrom(res.Reset, time.Now())
			c.Status(fiber.StatusTooManyRequests)
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(retryAfter/time.Second)))
			return onLimited(c, retryAfter)
		}
		err = c.Next()
		setHeaders(c, res)
		return err
	}
}

func setHeaders(c *fiber.Ctx, res Result) {
	c.Set(HeaderLimit, strconv.FormatInt(res.Limit, 10))
	c.Set(HeaderRemaining, strconv.FormatInt(res.Remaining, 10))
	c.Set(HeaderReset, strconv.FormatInt(res.Reset.Unix(), 10))
}

// retryAfterFrom rounds up to whole seconds, as Retry-After requires, and
// never says 0: a client told to retry at once would only be refused again.
func retryAfterFrom(reset, now time.Time) time.Duration {
	wait := reset.Sub(now)
	secs := int64((wait + time.Second - 1) / time.Second)
	return time.Duration(max(secs, 1)) * time.Second
}

type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// DefaultOnLimited answers with an RFC 9457 problem document.
func DefaultOnLimited(c *fiber.Ctx, retryAfter time.Duration) error {
	return writeTooMany(c, fmt.Sprintf("rate limit exceeded; retry after %d seconds", int(retryAfter/time.Second)))
}

func defaultOnBusy(c *fiber.Ctx, _ time.Duration) error {
	return writeTooMany(c, "too many requests in progress; retry after 1 second")
}

func writeTooMany(c *fiber.Ctx, detail string) error {
	body, err := json.Marshal(problem{
		Type:   "about:blank",
		Title:  "Too Many Requests",
		Status: fiber.StatusTooManyRequests,
		Detail: detail,
	})
	if err != nil {
		return err
	}
	c.Status(fiber.StatusTooManyRequests)
	c.Set(fiber.HeaderContentType, "application/problem+json")
	return c.Send(body)
}

// Concurrency lets at most n requests run through the rest of the chain at
// once and answers any excess immediately with 429 and Retry-After: 1,
// written by onBusy (nil writes a problem document like DefaultOnLimited).
//
// Excess requests are refused rather than queued: sync requests run for a
// long time, so a queue would hold connections and goroutines open for
// minutes and push callers into their own timeouts, while a prompt 429 lets
// them back off and try again.
//
// The count lives in this process, so with several host replicas the cap is
// n per replica, not n overall. It panics if n < 1, which is a programming
// error.
func Concurrency(n int, onBusy LimitedFunc) fiber.Handler {
	if n < 1 {
		panic("ratelimit: concurrency limit must be at least 1")
	}
	if onBusy == nil {
		onBusy = defaultOnBusy
	}
	slots := make(chan struct{}, n)
	return func(c *fiber.Ctx) error {
		select {
		case slots <- struct{}{}:
		default:
			c.Status(fiber.StatusTooManyRequests)
			c.Set(fiber.HeaderRetryAfter, "1")
			return onBusy(c, time.Second)
		}
		defer func() { <-slots }()
		return c.Next()
	}
}
