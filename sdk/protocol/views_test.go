package protocol_test

import (
	"net/http"
	"testing"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

func TestAllRoutesServeViews(t *testing.T) {
	desc := &pluginv1.DescribeResponse{
		Name:      "resources",
		Routes:    []*pluginv1.Route{{Method: "GET", Path: "/api/v1/resources/quotas"}},
		Fragments: []*pluginv1.Fragment{{Path: "/partials/resource-stats", Title: "Resources", Slot: "dashboard", RefreshSeconds: 60}},
		Pages:     []*pluginv1.Page{{Path: "/resources", Title: "Resources"}},
	}
	routes, err := protocol.ParseRoutes(protocol.AllRoutes(desc))
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) != 3 || routes[0].Pattern != "/api/v1/resources/quotas" {
		t.Fatalf("routes %+v", routes)
	}
	frag, page := routes[1], routes[2]
	for _, r := range []*protocol.Route{frag, page} {
		if r.Method != http.MethodGet || r.Auth != pluginv1.Auth_AUTH_USER || !r.TenantScoped || r.Operation == nil {
			t.Fatalf("%s: %+v", r.Pattern, r)
		}
		if ct := r.Operation.Responses["200"].Content["text/html"]; ct == nil {
			t.Errorf("%s: 200 is not HTML: %+v", r.Pattern, r.Operation.Responses["200"])
		}
		if errs := r.Validate(func(string) []string { return []string{"t-1"} }, nil); len(errs) != 0 {
			t.Errorf("%s: tenant_id refused: %v", r.Pattern, errs)
		}
	}
	if frag.Operation.OperationID != "resources-fragment-partials-resource-stats" || page.Operation.OperationID != "resources-page-resources" {
		t.Errorf("operation ids %q, %q", frag.Operation.OperationID, page.Operation.OperationID)
	}
	meta, _ := frag.Operation.Extensions[protocol.ExtFragment].(map[string]any)
	if meta["slot"] != "dashboard" || meta["title"] != "Resources" || meta["refresh_seconds"] != 60.0 {
		t.Errorf("fragment extension %v", frag.Operation.Extensions)
	}
	if frag.View != protocol.ViewFragment || frag.Title != "Resources" || page.View != protocol.ViewPage || page.Title != "Resources" || routes[0].View != "" {
		t.Errorf("views: %q %q, %q %q, route %q", frag.View, frag.Title, page.View, page.Title, routes[0].View)
	}
	if _, ok := page.Operation.Extensions[protocol.ExtPage].(map[string]any); !ok {
		t.Errorf("page extension %v", page.Operation.Extensions)
	}
	if errs := frag.Validate(func(string) []string { return []string{string(make([]byte, 65))} }, nil); len(errs) != 1 || errs[0].Location != "query.tenant_id" {
		t.Errorf("an overlong tenant_id: %v", errs)
	}
}
