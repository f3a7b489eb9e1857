package directory

import (
	"slices"
	"strings"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloud"
)

// The states of a Conditional Access control, strongest first: carried by
// an enabled policy, by a report-only one (evaluated and logged, never
// enforced), by a disabled one only, or by none. They are Graph's policy
// states, and StateNone.
const (
	StateEnabled    = "enabled"
	StateReportOnly = "enabledForReportingButNotEnforced"
	StateDisabled   = "disabled"
	StateNone       = "none"
)

// stateRank orders the states, strongest first.
var stateRank = []string{StateEnabled, StateReportOnly, StateDisabled, StateNone}

// globalAdministrator is the Global Administrator role's template id, the
// same in every directory.
const globalAdministrator = "62e90394-69f5-4237-9190-012177145e10"

// CAPolicy is a Conditional Access policy of a tenant with what it carries
// of the three controls the posture is judged on.
type CAPolicy struct {
	bun.BaseModel `bun:"table:identity_ca_policies"`
	TenantID      string `bun:"tenant_id,pk"`
	PolicyID      string `bun:"policy_id,pk"`
	Name          string `bun:"name"`
	// State is enabled, disabled or enabledForReportingButNotEnforced.
	State string `bun:"state"`
	// GrantOperator is AND or OR over GrantControls, Graph's built-in
	// controls (comma-separated), with "authenticationStrength" added when
	// the policy requires one.
	GrantOperator  string `bun:"grant_operator"`
	GrantControls  string `bun:"grant_controls"`
	ClientAppTypes string `bun:"client_app_types"`
	// IncludeUsers are the keywords of the users condition (All, None,
	// GuestsOrExternalUsers), without the users it names by id.
	IncludeUsers string `bun:"include_users"`
	IncludeRoles string `bun:"include_roles"`
	// Exclusions counts the users, groups and roles the policy leaves out.
	Exclusions int `bun:"exclusions"`
	// MFAAllUsers, MFAAdmins and BlocksLegacyAuth are what the policy
	// carries: see classify.
	MFAAllUsers      bool `bun:"mfa_all_users"`
	MFAAdmins        bool `bun:"mfa_admins"`
	BlocksLegacyAuth bool `bun:"blocks_legacy_auth"`
}

// Posture is a tenant's Conditional Access posture: whether it enforces
// security defaults, and the strongest state of a policy carrying each
// control.
type Posture struct {
	SecurityDefaults  bool
	MFAAllUsers       string
	MFAAdmins         string
	LegacyAuthBlocked string
}

// classify reads what a policy of the tenant carries. A policy counts
// only when it covers every cloud application. It requires MFA when its
// grant needs mfa (or an authentication strength) whatever else it
// offers: under OR, mfa must be its only control, as another (a compliant
// device, say) would let a user in without MFA. It carries MFA for all
// users when it includes All users from the modern clients (all client
// apps, or both browser and mobile and desktop apps: legacy clients cannot
// do MFA, which is why they are blocked), and MFA for admins when it does
// that for All users or for the Global Administrator role. It blocks
// legacy authentication when its grant is block, for All users, from
// Exchange ActiveSync and other clients (or all client apps). Excluded
// users, groups and roles do not stop a policy from counting, as an
// emergency access account is excluded by design; Exclusions shows them.
func classify(tenantID string, p cloud.ConditionalAccessPolicy) CAPolicy {
	controls := slices.Clone(p.BuiltInControls)
	if p.AuthenticationStrength != "" {
		controls = append(controls, "authenticationStrength")
	}
	requiresMFA := (slices.Contains(controls, "mfa") || slices.Contains(controls, "authenticationStrength")) &&
		(strings.EqualFold(p.GrantOperator, "AND") || len(controls) == 1)
	blocks := slices.Contains(controls, "block")
	allApps := slices.Contains(p.IncludeApplications, "All")
	clients := func(types ...string) bool {
		if len(p.ClientAppTypes) == 0 || slices.Contains(p.ClientAppTypes, "all") {
			return true
		}
		for _, t := range types {
			if !slices.Contains(p.ClientAppTypes, t) {
				return false
			}
		}
		return true
	}
	allUsers := slices.Contains(p.IncludeUsers, "All")
	admins := allUsers || slices.Contains(p.IncludeRoles, globalAdministrator) && !slices.Contains(p.ExcludeRoles, globalAdministrator)
	modern := clients("browser", "mobileAppsAndDesktopClients")
	var keywords []string
	for _, u := range p.IncludeUsers {
		if slices.Contains([]string{"All", "None", "GuestsOrExternalUsers"}, u) {
			keywords = append(keywords, u)
		}
	}
	return CAPolicy{TenantID: tenantID, PolicyID: p.ID, Name: p.DisplayName, State: p.State,
		GrantOperator: p.GrantOperator, GrantControls: strings.Join(controls, ","), ClientAppTypes: strings.Join(p.ClientAppTypes, ","),
		IncludeUsers: strings.Join(keywords, ","), IncludeRoles: strings.Join(p.IncludeRoles, ","),
		Exclusions:       len(p.ExcludeUsers) + len(p.ExcludeGroups) + len(p.ExcludeRoles),
		MFAAllUsers:      requiresMFA && allApps && modern && allUsers,
		MFAAdmins:        requiresMFA && allApps && modern && admins,
		BlocksLegacyAuth: blocks && allApps && allUsers && clients("exchangeActiveSync", "other"),
	}
}

// posture is the tenant's posture from its policies and its security
// defaults.
func posture(policies []CAPolicy, securityDefaults bool) Posture {
	out := Posture{SecurityDefaults: securityDefaults, MFAAllUsers: StateNone, MFAAdmins: StateNone, LegacyAuthBlocked: StateNone}
	for _, p := range policies {
		if p.MFAAllUsers {
			out.MFAAllUsers = stronger(out.MFAAllUsers, p.State)
		}
		if p.MFAAdmins {
			out.MFAAdmins = stronger(out.MFAAdmins, p.State)
		}
		if p.BlocksLegacyAuth {
			out.LegacyAuthBlocked = stronger(out.LegacyAuthBlocked, p.State)
		}
	}
	return out
}

// stronger is the stronger of two states; a state Graph may add later
// ranks below every known one.
func stronger(a, b string) string {
	ra, rb := slices.Index(stateRank, a), slices.Index(stateRank, b)
	if rb >= 0 && (ra < 0 || rb < ra) {
		return b
	}
	return a
}

// Enforced reports whether a control in state is enforced in a tenant:
// by an enabled policy, or by security defaults, which Microsoft offers
// tenants without Conditional Access in place of the three policies: they
// require every user to register for MFA and admins to use it, block
// legacy authentication, and prompt other users for MFA when Entra ID
// judges a sign-in risky rather than at every sign-in.
func Enforced(state string, securityDefaults bool) bool {
	return state == StateEnabled || securityDefaults
}
