package protocol

import (
	"net/http"
	"testing"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// TestCheckTenantQueryAsThePluginReadsIt: a query's tenant ids are checked
// exactly as the plugin's handler receives them, so an id padded with
// spaces (a "+" in the query) is another tenant, not the caller's.
func TestCheckTenantQueryAsThePluginReadsIt(t *testing.T) {
	r := &Route{Tenant: &Tenant{In: TenantInQuery, Name: "tenant_ids"}}
	principal := &pluginv1.Principal{TenantIds: []string{"t-1", "t-2"}}
	for _, c := range []struct {
		values []string
		want   int
	}{
		{nil, 0},
		{[]string{"t-1"}, 0},
		{[]string{"t-1,t-2"}, 0},
		{[]string{"t-1", "t-2"}, 0},
		{[]string{"t-1,"}, 0},
		{[]string{"t-1 "}, http.StatusForbidden},
		{[]string{" t-1"}, http.StatusForbidden},
		{[]string{"t-1, t-2"}, http.StatusForbidden},
		{[]string{"t-1,t-3"}, http.StatusForbidden},
		{[]string{"t-1", "t-3"}, http.StatusForbidden},
	} {
		got := r.CheckTenant(principal, func(string) []string { return c.values }, nil, nil)
		if got != c.want {
			t.Errorf("tenant_ids %q: %d, want %d", c.values, got, c.want)
		}
	}
}
