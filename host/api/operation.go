package api

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// MetaAuth is the operation metadata key saying who may call an operation:
// AuthNone, AuthUser (the default) or AuthAdmin. The server enforces it
// before the handler runs.
const (
	MetaAuth  = "steward-auth"
	AuthNone  = "none"
	AuthUser  = "user"
	AuthAdmin = "admin"
)

// ExtTenantScoped marks, in /openapi.json, an operation that acts on one
// tenant's data on behalf of a caller limited to its tenant scope, and says
// which parameter names the tenant ({"path": "tenant_id"}, {"query":
// "tenant_ids"}, ..., or {"body": "tenant_id"}, a property of the JSON
// request body). The isolation tests are generated from it, so a new
// operation is checked as soon as it carries the mark, which Handle adds to
// every operation with a tenant input. Admin-only operations take none
// and are not marked: the admin role, not the tenant scope, guards them,
// so a standard user is refused whichever tenant it names.
const ExtTenantScoped = "x-steward-tenant-scoped"

// ExtAdmin marks an operation only an admin may call, so tests can walk
// every such operation as a standard user.
const ExtAdmin = "x-steward-admin"

// Handle adds a host operation served by a typed handler, the idiom of a
// plugin's typed routes (see sdk.Handle): huma binds and validates I's
// parameters and Body, and the same types document the operation, with
// every status the host's middleware and validation may answer it with
// (see DefaultErrors). O is the response body, unless it is a struct with a
// Body field (huma's output struct, whose other fields tagged `header` are
// response headers), or sdk.Empty for an answer without a body.
//
// op.Auth says who may call it, which the server enforces before the
// handler runs. A TenantID or TenantIDs field of I (a query or path
// parameter, or a member of Body) is the operation's tenant input: a
// request naming a tenant its caller may not see is a 403 before the
// handler runs, an empty TenantIDs reaches the handler as every tenant the
// caller may see, and the operation carries ExtTenantScoped. A host
// operation's rate budget follows its path (host/server), so op.RateClass
// must be left at its default. A declaration the types contradict panics:
// it is a programming error, found as the host starts.
func Handle[I, O any](a huma.API, method, path string, op sdk.Op, h func(context.Context, *I) (*O, error)) {
	if op.RateClass != sdk.RateDefault {
		panic(fmt.Sprintf("%s %s: a host operation's rate class follows its path; Op.RateClass is a plugin route's", method, path))
	}
	tenant, err := protocol.FindTenant(reflect.TypeFor[I]())
	if err != nil {
		panic(fmt.Sprintf("%s %s: %v", method, path, err))
	}
	hop := huma.Operation{OperationID: op.ID, Method: method, Path: path, Summary: op.Summary, Description: op.Description,
		Tags: op.Tags, DefaultStatus: op.Status, Errors: slices.Clone(op.Errors), Responses: op.Responses,
		Metadata: map[string]any{MetaAuth: AuthUser}, Security: BearerOrKey(), Extensions: map[string]any{}}
	switch op.Auth {
	case sdk.AuthNone:
		hop.Metadata[MetaAuth], hop.Security = AuthNone, []map[string][]string{}
	case sdk.AuthAdmin:
		hop.Metadata[MetaAuth], hop.Extensions[ExtAdmin] = AuthAdmin, true
	}
	call := h
	if tenant != nil {
		hop.Extensions[ExtTenantScoped] = map[string]string{tenant.In: tenant.Name}
		call = func(ctx context.Context, in *I) (*O, error) {
			p := PrincipalFrom(ctx)
			for _, id := range tenant.Named(in) {
				if p == nil || !p.CanSeeTenant(id) {
					return nil, huma.Error403Forbidden(protocol.MsgNoTenantAccess)
				}
			}
			if p != nil {
				tenant.FillEmpty(in, p.TenantIDs)
			}
			return h(ctx, in)
		}
	}
	if len(hop.Extensions) == 0 {
		hop.Extensions = nil
	}
	params, body := inputShape(reflect.TypeFor[I]())
	for _, code := range DefaultErrors(op.Auth != sdk.AuthNone, params, body) {
		// A status the operation documents itself, with its own body,
		// keeps that body: huma would replace it with the problem schema.
		if _, own := op.Responses[strconv.Itoa(code)]; !own && !slices.Contains(hop.Errors, code) {
			hop.Errors = append(hop.Errors, code)
		}
	}
	own := maps.Clone(op.Responses)
	protocol.RegisterTyped(a, hop, call)
	// huma declares 422 and 500 for every operation with input, replacing
	// a body the operation declared for them itself.
	registered := *protocol.OperationSlot(a.OpenAPI().Paths[path], method)
	for code, r := range own {
		registered.Responses[code] = r
	}
	if op.RequestBody != nil {
		registered.RequestBody = op.RequestBody
	}
}

// Get adds a GET operation; see Handle.
func Get[I, O any](a huma.API, path string, op sdk.Op, h func(context.Context, *I) (*O, error)) {
	Handle(a, http.MethodGet, path, op, h)
}

// Post adds a POST operation; see Handle.
func Post[I, O any](a huma.API, path string, op sdk.Op, h func(context.Context, *I) (*O, error)) {
	Handle(a, http.MethodPost, path, op, h)
}

// Put adds a PUT operation; see Handle.
func Put[I, O any](a huma.API, path string, op sdk.Op, h func(context.Context, *I) (*O, error)) {
	Handle(a, http.MethodPut, path, op, h)
}

// Patch adds a PATCH operation; see Handle.
func Patch[I, O any](a huma.API, path string, op sdk.Op, h func(context.Context, *I) (*O, error)) {
	Handle(a, http.MethodPatch, path, op, h)
}

// Delete adds a DELETE operation; see Handle.
func Delete[I, O any](a huma.API, path string, op sdk.Op, h func(context.Context, *I) (*O, error)) {
	Handle(a, http.MethodDelete, path, op, h)
}

// BearerOrKey is the security requirement of an authenticated operation:
// a bearer token or an API key.
func BearerOrKey() []map[string][]string {
	return []map[string][]string{{"OAuth2PasswordBearer": {}}, {"APIKeyHeader": {}}}
}

// inputShape reports whether an operation's input type has parameters and
// a body, which decide the validation statuses it may answer.
func inputShape(t reflect.Type) (params, body bool) {
	for f := range t.Fields() {
		switch {
		case f.Name == "Body":
			body = true
		case f.Tag.Get("path") != "" || f.Tag.Get("query") != "" || f.Tag.Get("header") != "" || f.Tag.Get("cookie") != "":
			params = true
		}
	}
	return params, body
}

// DefaultErrors are the statuses the host answers before or around an
// operation's handler: 401 and 403 from authentication, and 503 from it
// while the token revocation list's Redis is unreachable (and from the
// handler while the database is unreachable or full), 413 (over
// STEWARD_MAX_BODY_BYTES), 415 (a content type the operation does not take)
// and 422 (validation, a body missing or not parsing included) from reading
// its input, 429 from the rate limit.
func DefaultErrors(authenticated, params, body bool) []int {
	var codes []int
	if authenticated {
		codes = append(codes, http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable)
	}
	if body {
		codes = append(codes, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	}
	if params || body {
		codes = append(codes, http.StatusUnprocessableEntity)
	}
	return append(codes, http.StatusTooManyRequests)
}
