package sdk

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
)

// LocalAPI serves a plugin's own API routes in its process, for the
// plugin's other routes to act through them: a page's form route that
// creates a budget calls POST /api/v1/budgets here rather than writing to
// the store itself, so the form meets the API's validation, defaults and
// audit exactly as a call of the API would, and cannot drift from it.
//
// A call reaches the route's handler as the caller of the calling route
// (its principal and request id, from Info), with no host in between: the
// host's checks, rate limits and audit of the calling route stand for it,
// and the route's own checks run as for any request.
type LocalAPI struct {
	// Routes are the routes served. It is called once, at the first call,
	// so it may be a method value of handlers filled in after the LocalAPI
	// is declared.
	Routes func() []Route

	once    sync.Once
	handler http.Handler
}

// Answer is a route's answer to a LocalAPI call.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Problem is the answer as a problem: the problem+json it carries, or,
// for an answer of any other body, a problem of its status alone. Call it
// on an answer whose status is not the one wanted.
func (a *Answer) Problem() *Problem {
	var p Problem
	if json.Unmarshal(a.Body, &p) != nil || p.Status == 0 {
		return newProblem(a.Status, "")
	}
	return &p
}

// Decode decodes the answer's JSON body into v.
func (a *Answer) Decode(v any) error { return json.Unmarshal(a.Body, v) }

// Call serves a request of the API with body, if not nil, encoded as JSON.
//
// With a tenant, the caller is narrowed to that one tenant for the call.
// The host checked the calling route's tenant (its tenant_id), not the
// members of a body the plugin builds, so a body naming another of the
// caller's tenants must be refused as the host would refuse it, and a
// list must show that tenant's items only. A tenant the caller may not see
// is refused with a 403 problem as the error, so a call never widens the
// caller's scope. With no tenant the caller keeps all its tenants, for a
// route that checks them against its object's itself.
//
// The error is one of the call, not of its answer: a refusal is an Answer
// whose Problem says why.
func (l *LocalAPI) Call(ctx context.Context, tenant, method, path string, body any) (*Answer, error) {
	if body == nil {
		return l.CallRaw(ctx, tenant, method, path, "", nil)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return l.CallRaw(ctx, tenant, method, path, "application/json", raw)
}

// CallRaw is Call with a body sent as it is, of the content type, such as
// a multipart form passed on as it came. An empty content type sends none.
func (l *LocalAPI) CallRaw(ctx context.Context, tenant, method, path, contentType string, body []byte) (*Answer, error) {
	info := Info(ctx)
	if tenant != "" {
		if !slices.Contains(info.Principal.TenantIDs, tenant) {
			return nil, Forbidden("the caller may not see tenant " + tenant)
		}
		info.Principal.TenantIDs = []string{tenant}
	}
	req, err := http.NewRequestWithContext(WithRequestInfo(ctx, info), method, path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	l.once.Do(func() { l.handler = (&Plugin{Routes: l.Routes()}).HTTPHandler() })
	w := &answerWriter{header: http.Header{}}
	l.handler.ServeHTTP(w, req)
	return &Answer{Status: cmp.Or(w.status, http.StatusOK), Header: w.header, Body: w.body.Bytes()}, nil
}

// answerWriter records a route's answer; only its first status counts, as
// on the wire.
type answerWriter struct {
	status int
	header http.Header
	body   bytes.Buffer
}

func (w *answerWriter) Header() http.Header { return w.header }

func (w *answerWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *answerWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}
