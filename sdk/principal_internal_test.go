package sdk

import (
	"slices"
	"testing"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

func TestPrincipalWireForm(t *testing.T) {
	for _, p := range []*pluginv1.Principal{
		{Id: "u1", Email: "a@example.com", Name: "Ann", Roles: []string{"reader", "auditor"}, Kind: "user", TenantIds: []string{"t1", "t2"}},
		{Id: "k9", IsAdmin: true, Kind: "apikey"},
		{},
	} {
		got := principalFromProto(p)
		if got.ID != p.Id || got.Email != p.Email || got.Name != p.Name || got.IsAdmin != p.IsAdmin || got.Kind != p.Kind ||
			!slices.Equal(got.Roles, p.Roles) || !slices.Equal(got.TenantIDs, p.TenantIds) {
			t.Errorf("principalFromProto(%v) = %+v", p, got)
		}
		back := principalProto(got)
		if back.Id != p.Id || back.Email != p.Email || back.Name != p.Name || back.IsAdmin != p.IsAdmin || back.Kind != p.Kind ||
			!slices.Equal(back.Roles, p.Roles) || !slices.Equal(back.TenantIds, p.TenantIds) {
			t.Errorf("principalProto(%+v) = %v, want %v", got, back, p)
		}
	}
	if !principalFromProto(nil).Anonymous() {
		t.Error("a nil principal is not anonymous")
	}
}
