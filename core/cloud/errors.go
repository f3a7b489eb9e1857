package cloud

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// Kinds of failure callers test for with errors.Is. Throttling and
// unavailability are reported only once the retries are exhausted.
var (
	ErrUnauthorized = errors.New("not authenticated")
	ErrForbidden    = errors.New("access denied")
	ErrNotFound     = errors.New("not found")
	ErrThrottled    = errors.New("throttled")
	ErrUnavailable  = errors.New("service unavailable")
	// ErrBillingAccessRequired is a 403 from a billing scope: the
	// principal has no billing reader role on the billing account. It also
	// matches ErrForbidden.
	ErrBillingAccessRequired = errors.New("billing access required")
)

// Error is a request the cloud refused: what Steward was doing, the HTTP
// status and Azure's error code. It unwraps to the SDK's
// *azcore.ResponseError.
type Error struct {
	// Op is what was being done, e.g. "list subscriptions".
	Op         string
	StatusCode int
	// Code is Azure's error code, e.g. "SubscriptionNotFound".
	Code string
	// RetryAfter is how long the service asked the caller to wait, when it
	// said so (on 429 and 503), for callers that schedule the next attempt.
	RetryAfter time.Duration

	kinds []error
	err   error
}

func (e *Error) Error() string {
	return fmt.Sprintf("cloud: %s: %d %s (%s)", e.Op, e.StatusCode, http.StatusText(e.StatusCode), e.Code)
}

// Unwrap returns the SDK's error.
func (e *Error) Unwrap() error { return e.err }

// Is matches the kinds of failure: ErrNotFound, ErrForbidden and so on.
func (e *Error) Is(target error) bool {
	for _, k := range e.kinds {
		if k == target {
			return true
		}
	}
	return false
}

// wrap turns the SDK's response errors into *Error; other errors (a
// cancelled context, a credential that could not get a token) keep their
// type and gain the operation's name.
func wrap(op string, err error) error {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return fmt.Errorf("cloud: %s: %w", op, err)
	}
	e := &Error{Op: op, StatusCode: re.StatusCode, Code: re.ErrorCode, err: err}
	switch {
	case re.StatusCode == http.StatusUnauthorized:
		e.kinds = append(e.kinds, ErrUnauthorized)
	case re.StatusCode == http.StatusForbidden:
		e.kinds = append(e.kinds, ErrForbidden)
	case re.StatusCode == http.StatusNotFound:
		e.kinds = append(e.kinds, ErrNotFound)
	case re.StatusCode == http.StatusTooManyRequests:
		e.kinds = append(e.kinds, ErrThrottled)
	case re.StatusCode >= 500:
		e.kinds = append(e.kinds, ErrUnavailable)
	}
	if re.RawResponse != nil {
		if s, err := strconv.Atoi(re.RawResponse.Header.Get("Retry-After")); err == nil && s > 0 {
			e.RetryAfter = time.Duration(s) * time.Second
		}
	}
	return e
}

// failAs wraps a failed page of a listing as op's error.
func failAs(op string) func(error) error {
	return func(err error) error { return wrap(op, err) }
}
