package api

import "testing"

func TestCanSeeTenant(t *testing.T) {
	standard := Principal{ID: "u", Kind: KindUser, TenantIDs: []string{"t1", "t2"}}
	admin := Principal{ID: "a", Kind: KindUser, IsAdmin: true}
	tests := []struct {
		name   string
		p      Principal
		tenant string
		want   bool
	}{
		{"member", standard, "t2", true},
		{"non-member", standard, "t3", false},
		{"empty id", standard, "", false},
		{"admin without memberships", admin, "t3", true},
	}
	for _, tt := range tests {
		if got := tt.p.CanSeeTenant(tt.tenant); got != tt.want {
			t.Errorf("%s: CanSeeTenant(%q) = %v, want %v", tt.name, tt.tenant, got, tt.want)
		}
	}
}

func TestActorID(t *testing.T) {
	for _, tt := range []struct {
		p    Principal
		want string
	}{
		{Principal{ID: "u1", Kind: KindUser}, "u1"},
		{Principal{ID: "k1", Kind: KindAPIKey}, "apikey:k1"},
	} {
		if got := tt.p.ActorID(); got != tt.want {
			t.Errorf("%+v: ActorID() = %q, want %q", tt.p, got, tt.want)
		}
	}
}
