package ui_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

func TestTenantsAndWithTenant(t *testing.T) {
	request := func(target string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		return r.WithContext(sdk.WithRequestInfo(r.Context(), sdk.RequestInfo{Principal: sdk.Principal{ID: "u", TenantIDs: []string{"t1", "t2"}}}))
	}
	all := request("/costs")
	if got := sdkui.Tenants(all); !slices.Equal(got, []string{"t1", "t2"}) {
		t.Errorf("no tenant picked: %v", got)
	}
	if got := sdkui.WithTenant("/partials/x", all); got != "/partials/x" {
		t.Errorf("no tenant picked: %q", got)
	}
	picked := request("/costs?tenant_id=t+2%26")
	if got := sdkui.Tenants(picked); !slices.Equal(got, []string{"t 2&"}) {
		t.Errorf("a picked tenant: %v", got)
	}
	if got := sdkui.WithTenant("/partials/x", picked); got != "/partials/x?tenant_id=t+2%26" {
		t.Errorf("a picked tenant: %q", got)
	}
	// A picked brand's request carries the caller narrowed to its
	// tenants, and its links carry the brand.
	brand := request("/costs?brand_id=b-1")
	if got := sdkui.Tenants(brand); !slices.Equal(got, []string{"t1", "t2"}) {
		t.Errorf("a picked brand: %v", got)
	}
	if got := sdkui.WithTenant("/partials/x", brand); got != "/partials/x?brand_id=b-1" {
		t.Errorf("a picked brand: %q", got)
	}
	if got := sdkui.WithTenant("/partials/x", request("/costs?brand_id=b-1&tenant_id=t1")); got != "/partials/x?tenant_id=t1" {
		t.Errorf("a tenant picked within a brand: %q", got)
	}
}
