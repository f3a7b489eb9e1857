package ui

import (
	"net/http"
	"net/url"

	"github.com/stewardhq/steward/sdk"
)

// Tenants are the tenants a page or fragment shows: the one the host's
// tenant picker names in tenant_id (which the SDK has already refused
// when the caller may not see it), else all the caller's — a picked
// brand's, when the request names one in brand_id, as the host then
// hands the plugin a caller of the brand's tenants alone.
func Tenants(r *http.Request) []string {
	if id := r.URL.Query().Get("tenant_id"); id != "" {
		return []string{id}
	}
	return sdk.PrincipalFrom(r.Context()).TenantIDs
}

// WithTenant is path with the request's tenant_id, or else its brand_id,
// when the picker names one, so a link or an htmx request stays on the
// picked tenant or brand.
func WithTenant(path string, r *http.Request) string {
	q := r.URL.Query()
	if id := q.Get("tenant_id"); id != "" {
		return path + "?tenant_id=" + url.QueryEscape(id)
	}
	if id := q.Get("brand_id"); id != "" {
		return path + "?brand_id=" + url.QueryEscape(id)
	}
	return path
}
