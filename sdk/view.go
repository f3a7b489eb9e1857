package sdk

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
)

// View is the handler of a fragment or page whose query parameters are
// declared on I as a typed route's are (Handle): `query` tags with their
// bounds, defaults and enums, an sdk.TenantID `query:"tenant_id"` for the
// tenant the view is asked for. A request with a bad parameter is answered
// 422 naming it, and render is not called; otherwise render writes the
// view with the bound input. It panics, when called, on an input type huma
// cannot bind, as a route declared with a mistake refuses to start.
//
//	type pageIn struct {
//		Tenant   sdk.TenantID `query:"tenant_id"`
//		Location string       `query:"location" default:"eastus" pattern:"^[a-z0-9]+$"`
//	}
//
//	sdk.Page{Path: "/acme", Title: "Acme", Handler: sdk.View(h.page)}
//
//	func (h *handlers) page(w http.ResponseWriter, r *http.Request, in *pageIn) { … }
func View[I any](render func(w http.ResponseWriter, r *http.Request, in *I)) http.HandlerFunc {
	capture := &viewAdapter{}
	api := huma.NewAPI(apiConfig(), capture)
	op := huma.Operation{OperationID: "view", Method: http.MethodGet, Path: "/"}
	huma.Register(api, op, func(ctx context.Context, in *I) (*huma.StreamResponse, error) {
		call := ctx.Value(viewCallKey{}).(viewCall)
		return &huma.StreamResponse{Body: func(huma.Context) { render(call.w, call.r, in) }}, nil
	})
	return func(w http.ResponseWriter, r *http.Request) {
		inner := r.WithContext(context.WithValue(r.Context(), viewCallKey{}, viewCall{w: w, r: r}))
		capture.handler(humago.NewContext(capture.op, hostQuery(inner, capture.lists), w))
	}
}

type viewCallKey struct{}

// viewCall is the request a view's render receives, carried through huma's
// binding in the request's context.
type viewCall struct {
	w http.ResponseWriter
	r *http.Request
}

// viewAdapter keeps the one operation View registers, which its handler
// serves whatever the request's path: the view's path is the host's
// concern and the plugin's router has already matched it.
type viewAdapter struct {
	op      *huma.Operation
	lists   []string
	handler func(huma.Context)
}

func (a *viewAdapter) Handle(op *huma.Operation, handler func(huma.Context)) {
	a.op, a.handler, a.lists = op, handler, listParams(op)
}

func (a *viewAdapter) ServeHTTP(http.ResponseWriter, *http.Request) {}
