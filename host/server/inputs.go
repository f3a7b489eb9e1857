package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humafiber"
	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/host/redisconn"
)

const msgControlChars = "must be UTF-8 text without control characters"

// controlChars reports whether s holds a control character or is not
// UTF-8 (which PostgreSQL refuses as well). Multi-line
// text may carry tabs and line breaks; nothing else below space, nor DEL,
// belongs in a name, an id or a filter, and the databases refuse NUL.
func controlChars(s string, multiline bool) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			if multiline && (r == '\t' || r == '\n' || r == '\r') {
				continue
			}
			return true
		}
	}
	return false
}

// inputErrors names every path parameter, query parameter, form field and
// JSON string of the request that carries a control character, as a 422
// names them: "path.tenant_id", "query.actor_email", "body.name",
// "body.thresholds[0].contact_emails[1]". It runs before any handler, host
// or plugin, so no such value reaches a store.
func inputErrors(c *fiber.Ctx, params map[string]string) []*huma.ErrorDetail {
	var errs []*huma.ErrorDetail
	add := func(loc string) {
		errs = append(errs, &huma.ErrorDetail{Location: loc, Message: msgControlChars})
	}
	names := make([]string, 0, len(params))
	for name := range params {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if controlChars(params[name], false) {
			add("path." + name)
		}
	}
	seen := map[string]bool{}
	for k, v := range c.Context().QueryArgs().All() {
		name := string(k)
		if !seen[name] && (controlChars(name, false) || controlChars(string(v), false)) {
			seen[name] = true
			add("query." + strings.ToValidUTF8(strings.Map(printable, name), ""))
		}
	}
	ct, _, _ := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	switch {
	case ct == fiber.MIMEApplicationForm:
		for k, v := range c.Request().PostArgs().All() {
			if controlChars(string(k), false) || controlChars(string(v), true) {
				add("body." + strings.ToValidUTF8(strings.Map(printable, string(k)), ""))
			}
		}
	case ct == fiber.MIMEApplicationJSON || strings.HasSuffix(ct, "+json"):
		body := c.Body()
		// Only a body with an escape that can spell a control character
		// (or a raw DEL) is decoded a second time to find the field.
		if bytes.Contains(body, []byte(`\u`)) || bytes.Contains(body, []byte(`\b`)) || bytes.Contains(body, []byte(`\f`)) || bytes.IndexByte(body, 0x7f) >= 0 {
			var v any
			if json.Unmarshal(body, &v) == nil {
				walkJSON(v, "body", add)
			}
		}
	}
	return errs
}

// printable drops control characters from a name echoed in a location.
func printable(r rune) rune {
	if r < 0x20 || r == 0x7f {
		return -1
	}
	return r
}

func walkJSON(v any, loc string, add func(string)) {
	switch x := v.(type) {
	case string:
		if controlChars(x, true) {
			add(loc)
		}
	case []any:
		for i, e := range x {
			walkJSON(e, fmt.Sprintf("%s[%d]", loc, i), add)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name := strings.Map(printable, k)
			if name != k {
				add(loc + "." + name)
				continue
			}
			walkJSON(x[k], loc+"."+k, add)
		}
	}
}

const localInternalError = "steward.internal_error"

// A handler's unexpected error becomes a 500 whose body says only that
// something failed and under which request id; the error itself — SQL,
// file paths, driver text — goes to the log beside that id (accessLog).
//
// A client error keeps its details, but never echoes a secret back: the
// value of a field named like a credential, or a whole object (huma
// reports an unexpected property with the entire body as its value, the
// password of a sign-in form included).
func init() {
	huma.NewErrorWithContext = func(ctx huma.Context, status int, msg string, errs ...error) huma.StatusError {
		if status < http.StatusInternalServerError || ctx == nil {
			for _, e := range errs {
				if d, ok := e.(*huma.ErrorDetail); ok && !echoable(d) {
					d.Value = nil
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

// secretFields are the last segments of locations whose values a 422 must
// not repeat.
var secretFields = []string{"password", "secret", "client_secret", "token", "refresh_token", "access_token", "code", "code_verifier", "client_assertion"}

func echoable(d *huma.ErrorDetail) bool {
	switch d.Value.(type) {
	case map[string]any, []any:
		return false
	}
	loc := d.Location
	if i := strings.LastIndexByte(loc, '.'); i >= 0 {
		loc = loc[i+1:]
	}
	return !slices.Contains(secretFields, strings.ToLower(loc))
}
