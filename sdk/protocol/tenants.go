package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// Where a route's requests name their tenants (TenantInput.in).
const (
	TenantInQuery = "query"
	TenantInPath  = "path"
	TenantInBody  = "body"
)

// MsgNoTenantAccess is the one answer, as a 403's detail, to a request that
// names a tenant its caller may not see. It never repeats the id, so a
// refusal carries no tenant's identifiers.
const MsgNoTenantAccess = "no access to the requested tenant"

// Tenant is where a declared route's requests name their tenants.
type Tenant struct {
	// In is TenantInQuery, TenantInPath or TenantInBody.
	In   string
	Name string
}

func parseTenantInput(ti *pluginv1.TenantInput, op map[string]bool) (*Tenant, error) {
	if ti == nil {
		return nil, nil
	}
	switch ti.In {
	case TenantInQuery, TenantInPath, TenantInBody:
	default:
		return nil, fmt.Errorf("tenant input: in is %q, want query, path or body", ti.In)
	}
	if ti.Name == "" {
		return nil, fmt.Errorf("tenant input: no name")
	}
	if ti.In != TenantInBody && !op[ti.In+"."+ti.Name] {
		return nil, fmt.Errorf("tenant input: the operation declares no %s parameter %q", ti.In, ti.Name)
	}
	return &Tenant{In: ti.In, Name: ti.Name}, nil
}

// NeedsBody reports whether CheckTenant reads the request body: the route
// names its tenants in a JSON body member.
func (r *Route) NeedsBody() bool { return r.Tenant != nil && r.Tenant.In == TenantInBody }

// CheckTenant enforces the route's tenant input on a request the caller
// makes: every tenant the request names must be one principal may see (an
// admin's principal lists every tenant). query returns every value of a
// query parameter; body is the request body, read only when NeedsBody. It
// returns 0 when the request may go on and http.StatusForbidden when it
// names a tenant outside the caller's scope. A query's ids are checked as
// the plugin reads them, split at commas and not trimmed: "t-1 " is not
// "t-1". The host calls it before
// proxying and the test harness before calling the plugin, so a handler
// that forgets its own check still leaks nothing.
//
// A body that is not a JSON object, or whose member is neither a string
// nor a list of strings, passes here: it names no tenant, and the plugin's
// own validation refuses it.
func (r *Route) CheckTenant(principal *pluginv1.Principal, query func(string) []string, pathParams map[string]string, body []byte) int {
	if r.Tenant == nil {
		return 0
	}
	var named []string
	switch r.Tenant.In {
	case TenantInPath:
		named = []string{pathParams[r.Tenant.Name]}
	case TenantInQuery:
		for _, v := range query(r.Tenant.Name) {
			for item := range strings.SplitSeq(v, ",") {
				if item != "" {
					named = append(named, item)
				}
			}
		}
	case TenantInBody:
		named = bodyTenants(body, r.Tenant.Name)
	}
	visible := principal.GetTenantIds()
	for _, id := range named {
		if !slices.Contains(visible, id) {
			return http.StatusForbidden
		}
	}
	return 0
}

// bodyTenants reads the tenant ids a JSON object body's member holds: one
// string or a list of strings. The member's name is matched without regard
// to case, as encoding/json matches a struct field, so a plugin decoding
// the body into a struct cannot see a member the host did not check.
func bodyTenants(body []byte, member string) []string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return nil
	}
	var out []string
	for key, raw := range obj {
		if !strings.EqualFold(key, member) {
			continue
		}
		var one string
		if json.Unmarshal(raw, &one) == nil {
			out = append(out, one)
			continue
		}
		var many []string
		if json.Unmarshal(raw, &many) == nil {
			out = append(out, many...)
		}
	}
	return slices.DeleteFunc(out, func(id string) bool { return id == "" })
}
