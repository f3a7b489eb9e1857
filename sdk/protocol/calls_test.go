package protocol_test

import (
	"slices"
	"testing"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

func TestCallsNarrowDatasetReads(t *testing.T) {
	var calls protocol.Calls
	brandA := &pluginv1.Principal{Id: "u-a", TenantIds: []string{"t-a"}}
	admin := &pluginv1.Principal{Id: "admin", IsAdmin: true, TenantIds: []string{"t-a", "t-b", "t-c"}}
	endA := calls.Begin("req-a", brandA)
	endAdmin := calls.Begin("req-admin", admin)
	endAnon := calls.Begin("req-anon", nil)
	defer endAdmin()
	defer endAnon()

	for _, c := range []struct {
		name    string
		request string
		asked   []string
		ok      bool
		want    []string
	}{
		{"a job's read is left as it is", "", []string{"t-b"}, true, []string{"t-b"}},
		{"a job's read of every tenant stays so", "", nil, true, nil},
		{"another tenant is nothing", "req-a", []string{"t-b"}, false, nil},
		{"the caller's own tenant is kept", "req-a", []string{"t-a"}, true, []string{"t-a"}},
		{"a mixed list keeps the visible", "req-a", []string{"t-b", "t-a", "t-c"}, true, []string{"t-a"}},
		{"no tenant named means the caller's", "req-a", nil, true, []string{"t-a"}},
		{"an admin sees every tenant", "req-admin", []string{"t-b", "t-c"}, true, []string{"t-b", "t-c"}},
		{"an anonymous caller sees none", "req-anon", nil, false, nil},
		{"a request not in flight sees none", "req-gone", []string{"t-a"}, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := &pluginv1.ReadDatasetRequest{Dataset: "d", RequestId: c.request, TenantIds: slices.Clone(c.asked)}
			if ok := calls.Narrow(req); ok != c.ok || (ok && !slices.Equal(req.TenantIds, c.want)) {
				t.Errorf("Narrow = %v with %q, want %v with %q", ok, req.TenantIds, c.ok, c.want)
			}
		})
	}

	// Two requests in flight under one id (a caller's X-Request-Id): a
	// read naming it sees what both may see, so the admin's request cannot
	// widen Brand A's.
	endShared := calls.Begin("req-a", admin)
	req := &pluginv1.ReadDatasetRequest{RequestId: "req-a", TenantIds: []string{"t-a", "t-b"}}
	if !calls.Narrow(req) || !slices.Equal(req.TenantIds, []string{"t-a"}) {
		t.Errorf("a shared id: %q, want only t-a", req.TenantIds)
	}
	endShared()
	endShared()

	endA()
	if req := (&pluginv1.ReadDatasetRequest{RequestId: "req-a", TenantIds: []string{"t-a"}}); calls.Narrow(req) {
		t.Errorf("after the request ended the read still sees %q", req.TenantIds)
	}
}
