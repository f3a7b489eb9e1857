package e2e

import (
	"net/url"
	"testing"
)

// checkDatasetsKeptToTheRequest: a plugin handler that reads another
// plugin's dataset for tenants it never checked against its caller (the
// test plugin's relay, asked for them in "ask") gets the records of the
// caller's tenants only: Brand A's user asking for Brand B reads nothing of
// the resources or identity_mfa datasets, asking for nobody reads Brand A's,
// and an admin asking for Brand B reads Brand B's. The host narrows the
// read by the request it was made for; the test plugin declares no check.
func checkDatasetsKeptToTheRequest(t *testing.T, h *host, admin, tokA string) {
	t.Helper()
	ids := h.tenantIDs(t, admin)
	a, b := ids["Brand A"], ids["Brand B"]
	if a == "" || b == "" {
		t.Fatalf("tenants %v, want Brand A and Brand B", ids)
	}
	type relay struct {
		Records  int            `json:"records"`
		ByTenant map[string]int `json:"by_tenant"`
	}
	read := func(token, dataset string, ask ...string) relay {
		q := url.Values{"dataset": {dataset}}
		for _, id := range ask {
			q.Add("ask", id)
		}
		var r relay
		h.get("/api/v1/testplugin/relay?"+q.Encode(), token).json(t, &r)
		return r
	}
	for _, dataset := range []string{"resources", "identity_mfa"} {
		if r := read(tokA, dataset, b); r.Records != 0 {
			t.Errorf("%s: Brand A's user asking for Brand B read %+v, want nothing", dataset, r)
		}
		if r := read(tokA, dataset, b, a); r.Records == 0 || r.ByTenant[a] != r.Records {
			t.Errorf("%s: Brand A's user asking for both brands read %+v, want Brand A's only", dataset, r)
		}
		if r := read(tokA, dataset); r.Records == 0 || r.ByTenant[a] != r.Records {
			t.Errorf("%s: Brand A's user asking for nobody read %+v, want Brand A's", dataset, r)
		}
		if r := read(admin, dataset, b); r.Records == 0 || r.ByTenant[b] != r.Records {
			t.Errorf("%s: the admin asking for Brand B read %+v, want Brand B's", dataset, r)
		}
	}
}
