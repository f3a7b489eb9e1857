package directory

import (
	"testing"

	"github.com/stewardhq/steward/core/cloud"
)

// TestClassify: what a policy carries of each control, by its grant,
// users, roles, applications and client apps.
func TestClassify(t *testing.T) {
	all := []string{"All"}
	base := func(edit func(*cloud.ConditionalAccessPolicy)) cloud.ConditionalAccessPolicy {
		p := cloud.ConditionalAccessPolicy{ID: "p", DisplayName: "P", State: StateEnabled, IncludeUsers: all, IncludeApplications: all,
			ClientAppTypes: []string{"all"}, GrantOperator: "OR", BuiltInControls: []string{"mfa"}}
		edit(&p)
		return p
	}
	legacy := func(p *cloud.ConditionalAccessPolicy) {
		p.ClientAppTypes, p.BuiltInControls = []string{"exchangeActiveSync", "other"}, []string{"block"}
	}
	cases := []struct {
		name                     string
		policy                   cloud.ConditionalAccessPolicy
		allUsers, admins, blocks bool
	}{
		{"mfa for all", base(func(*cloud.ConditionalAccessPolicy) {}), true, true, false},
		{"mfa for all, no client condition", base(func(p *cloud.ConditionalAccessPolicy) { p.ClientAppTypes = nil }), true, true, false},
		{"mfa from the modern clients", base(func(p *cloud.ConditionalAccessPolicy) {
			p.ClientAppTypes = []string{"browser", "mobileAppsAndDesktopClients"}
		}), true, true, false},
		{"mfa in the browser only", base(func(p *cloud.ConditionalAccessPolicy) { p.ClientAppTypes = []string{"browser"} }), false, false, false},
		{"mfa or a compliant device", base(func(p *cloud.ConditionalAccessPolicy) { p.BuiltInControls = []string{"mfa", "compliantDevice"} }), false, false, false},
		{"mfa and a compliant device", base(func(p *cloud.ConditionalAccessPolicy) {
			p.BuiltInControls, p.GrantOperator = []string{"mfa", "compliantDevice"}, "AND"
		}), true, true, false},
		{"an authentication strength", base(func(p *cloud.ConditionalAccessPolicy) {
			p.BuiltInControls, p.AuthenticationStrength = nil, "00000000-0000-0000-0000-000000000002"
		}), true, true, false},
		{"office only", base(func(p *cloud.ConditionalAccessPolicy) { p.IncludeApplications = []string{"Office365"} }), false, false, false},
		{"guests only", base(func(p *cloud.ConditionalAccessPolicy) { p.IncludeUsers = []string{"GuestsOrExternalUsers"} }), false, false, false},
		{"global administrators", base(func(p *cloud.ConditionalAccessPolicy) {
			p.IncludeUsers, p.IncludeRoles = nil, []string{globalAdministrator}
		}), false, true, false},
		{"another role", base(func(p *cloud.ConditionalAccessPolicy) {
			p.IncludeUsers, p.IncludeRoles = nil, []string{"e8611ab8-c189-46e8-94e1-60213ab1f814"}
		}), false, false, false},
		{"legacy blocked", base(legacy), false, false, true},
		{"legacy blocked, all clients", base(func(p *cloud.ConditionalAccessPolicy) { p.BuiltInControls = []string{"block"} }), false, false, true},
		{"active sync only", base(func(p *cloud.ConditionalAccessPolicy) { legacy(p); p.ClientAppTypes = []string{"exchangeActiveSync"} }), false, false, false},
		{"legacy blocked for admins only", base(func(p *cloud.ConditionalAccessPolicy) {
			legacy(p)
			p.IncludeUsers, p.IncludeRoles = nil, []string{globalAdministrator}
		}), false, false, false},
	}
	for _, c := range cases {
		got := classify("t", c.policy)
		if got.MFAAllUsers != c.allUsers || got.MFAAdmins != c.admins || got.BlocksLegacyAuth != c.blocks {
			t.Errorf("%s: carries all users %v, admins %v, legacy blocked %v; want %v, %v, %v", c.name,
				got.MFAAllUsers, got.MFAAdmins, got.BlocksLegacyAuth, c.allUsers, c.admins, c.blocks)
		}
	}
}

// TestPostureTakesTheStrongestState: each control is in the strongest
// state of the policies carrying it, none without one.
func TestPostureTakesTheStrongestState(t *testing.T) {
	p := posture([]CAPolicy{
		{State: StateDisabled, MFAAllUsers: true},
		{State: StateReportOnly, MFAAllUsers: true, MFAAdmins: true},
		{State: StateDisabled, MFAAdmins: true},
		{State: StateEnabled, MFAAdmins: true},
	}, false)
	if p != (Posture{MFAAllUsers: StateReportOnly, MFAAdmins: StateEnabled, LegacyAuthBlocked: StateNone}) {
		t.Fatalf("posture %+v", p)
	}
	if s := stronger(StateNone, "somethingNew"); s != StateNone {
		t.Fatalf("an unknown state outranks none: %s", s)
	}
	if Enforced(StateReportOnly, false) || !Enforced(StateReportOnly, true) || !Enforced(StateEnabled, false) || Enforced(StateNone, false) {
		t.Fatal("enforcement")
	}
}
