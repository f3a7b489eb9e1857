package api

import (
	"context"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

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

// Anonymous is the metadata of an operation anyone may call; its handler
// sees a nil principal for an anonymous caller.
func Anonymous() map[string]any { return map[string]any{MetaAuth: AuthNone} }

// AdminOnly is the metadata of an operation only an admin may call.
func AdminOnly() map[string]any { return map[string]any{MetaAuth: AuthAdmin} }

// ExtTenantScoped marks, in /openapi.json, an operation that acts on one
// tenant's data on behalf of a caller limited to its tenant scope, and says
// which parameter names the tenant ({"path": "tenant_id"}, {"query":
// "tenant_ids"}, ..., or {"body": "tenant_id"}, a property of the JSON
// request body). The isolation tests are generated from it, so a new
// operation is checked as soon as it carries the mark. Admin-only
// operations are not marked: the admin role, not the tenant scope, guards
// them, so a standard user is refused whichever tenant it names.
const ExtTenantScoped = "x-steward-tenant-scoped"

// ExtAdmin marks an operation only an admin may call, so tests can walk
// every such operation as a standard user.
const ExtAdmin = "x-steward-admin"

// ErrNoTenantAccess refuses a tenant outside the caller's scope without
// repeating the id, so no refusal ever carries a tenant's identifiers.
const ErrNoTenantAccess = "no access to the requested tenant"

// TenantScoped is the extension for an operation naming its tenant in the
// parameter name, located in ("path" or "query").
func TenantScoped(in, name string) map[string]any {
	return map[string]any{ExtTenantScoped: map[string]string{in: name}}
}

// Register adds a host operation: huma validates its input against the
// declaration and the same declaration documents it, with every status the
// host's middleware and validation may answer it with (see DefaultErrors).
func Register[I, O any](api huma.API, op huma.Operation, h func(context.Context, *I) (*O, error)) {
	if op.Metadata == nil {
		op.Metadata = map[string]any{}
	}
	if _, ok := op.Metadata[MetaAuth]; !ok {
		op.Metadata[MetaAuth] = AuthUser
	}
	authenticated := op.Metadata[MetaAuth] != AuthNone
	if authenticated {
		op.Security = BearerOrKey()
	} else {
		op.Security = []map[string][]string{}
	}
	if op.Metadata[MetaAuth] == AuthAdmin {
		if op.Extensions == nil {
			op.Extensions = map[string]any{}
		}
		op.Extensions[ExtAdmin] = true
	}
	params, body := inputShape(reflect.TypeFor[I]())
	for _, code := range DefaultErrors(authenticated, params, body) {
		// A status the operation documents itself, with its own body,
		// keeps that body: huma would replace it with the problem schema.
		if _, own := op.Responses[strconv.Itoa(code)]; !own && !slices.Contains(op.Errors, code) {
			op.Errors = append(op.Errors, code)
		}
	}
	own := maps.Clone(op.Responses)
	huma.Register(api, op, h)
	// huma declares 422 and 500 for every operation with input, replacing
	// a body the operation declared for them itself.
	registered := *protocol.OperationSlot(api.OpenAPI().Paths[op.Path], op.Method)
	for code, r := range own {
		registered.Responses[code] = r
	}
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
// while the token revocation list's Redis is unreachable, 400 (a body that
// does not decode), 413 (over STEWARD_MAX_BODY_BYTES), 415 (a content type
// the operation does not take) and 422 (validation) from reading its
// input, 429 from the rate limit.
func DefaultErrors(authenticated, params, body bool) []int {
	var codes []int
	if authenticated {
		codes = append(codes, http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable)
	}
	if body {
		codes = append(codes, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	}
	if params || body {
		codes = append(codes, http.StatusUnprocessableEntity)
	}
	return append(codes, http.StatusTooManyRequests)
}
