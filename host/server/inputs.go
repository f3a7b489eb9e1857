package server

import (
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humafiber"
	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/host/redisconn"
	"github.com/stewardhq/steward/sdk/protocol"
)

// inputErrors decodes the request's path parameters, which the router
// matches on the path as sent (percent-encoded), and names every input that
// does not decode or carries a control character (see
// protocol.DecodePathParams and protocol.InputErrors). It runs before any
// handler, host or plugin, so no such value reaches a store. The decoded
// parameters are what a plugin's handler is given.
func inputErrors(c *fiber.Ctx, rawParams map[string]string) (map[string]string, []*huma.ErrorDetail) {
	params, errs := protocol.DecodePathParams(rawParams)
	if len(errs) > 0 {
		return nil, errs
	}
	in := protocol.Inputs{PathParams: params, ContentType: c.Get(fiber.HeaderContentType), Body: c.Body()}
	for k, v := range c.Context().QueryArgs().All() {
		in.Query = append(in.Query, [2]string{string(k), string(v)})
	}
	if in.IsForm() {
		for k, v := range c.Request().PostArgs().All() {
			in.Form = append(in.Form, [2]string{string(k), string(v)})
		}
	}
	return params, protocol.InputErrors(in)
}

const localInternalError = "steward.internal_error"

// A handler's unexpected error becomes a 500 whose body says only that
// something failed and under which request id; the error itself — SQL,
// file paths, driver text — goes to the log beside that id (accessLog).
//
// A client error keeps its details, a missing member named as a plugin's
// typed route names it (body.name, not body), but never echoes a secret
// back: the value of a field named like a credential, or a whole object
// (huma reports an unexpected property with the entire body as its value,
// the password of a sign-in form included).
func init() {
	huma.NewErrorWithContext = func(ctx huma.Context, status int, msg string, errs ...error) huma.StatusError {
		if status == http.StatusBadRequest {
			status, msg, errs = http.StatusUnprocessableEntity, protocol.MsgValidationFailed, unreadableBody(msg, errs)
		}
		if status < http.StatusInternalServerError || ctx == nil {
			for _, e := range errs {
				if d, ok := e.(*huma.ErrorDetail); ok {
					protocol.NameMissingMember(d)
					if !protocol.Echoable(d.Location, d.Value) {
						d.Value = nil
					}
				}
			}
			return huma.NewError(status, msg, errs...)
		}
		c := humafiber.Unwrap(ctx)
		cause := errors.Join(errs...)
		if status == http.StatusInternalServerError && errors.Is(cause, redisconn.ErrUnavailable) {
			c.Set(fiber.HeaderRetryAfter, redisRetryAfter)
			return huma.NewError(http.StatusServiceUnavailable, redisUnavailable)
		}
		if cause != nil {
			c.Locals(localInternalError, cause)
		}
		if status == http.StatusInternalServerError {
			msg = "internal error; request id " + requestID(c)
		}
		return huma.NewError(status, msg)
	}
}

// unreadableBody names the body in huma's 400s, which it answers only for
// a body it cannot read: one that is missing though required, or that does
// not parse as its content type (JSON, a form). The contract makes those a
// 422 naming the body, as every other input problem and as a plugin's
// routes answer them (sdk). The body is not echoed: it may hold a
// credential, in a member a parse error leaves unnamed.
func unreadableBody(msg string, errs []error) []error {
	named := false
	for _, e := range errs {
		if d, ok := e.(*huma.ErrorDetail); ok && d.Location == "body" {
			d.Value, named = nil, true
		}
	}
	if !named {
		errs = append(errs, &huma.ErrorDetail{Location: "body", Message: msg})
	}
	return errs
}
