package directory

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// ControlItem is the state of one Conditional Access control in a tenant.
type ControlItem struct {
	State string `json:"state" enum:"enabled,enabledForReportingButNotEnforced,disabled,none" doc:"Strongest state of a policy carrying the control: enabled, report-only (enabledForReportingButNotEnforced), disabled, or none when no policy carries it"`
	// Enforced is what a tenant is held to.
	Enforced bool     `json:"enforced" doc:"An enabled policy carries the control, or the tenant enforces security defaults"`
	Policies []string `json:"policies" doc:"Names of the policies carrying the control, whatever their state, by name"`
}

// PolicyItem is a Conditional Access policy with what it carries.
type PolicyItem struct {
	PolicyID         string   `json:"policy_id"`
	Name             string   `json:"name"`
	State            string   `json:"state" enum:"enabled,enabledForReportingButNotEnforced,disabled"`
	GrantOperator    string   `json:"grant_operator" doc:"AND or OR over grant_controls; empty when the policy grants nothing"`
	GrantControls    []string `json:"grant_controls" doc:"Graph's built-in controls (block, mfa, compliantDevice, …), and authenticationStrength when the policy requires one"`
	ClientAppTypes   []string `json:"client_app_types" doc:"all, browser, mobileAppsAndDesktopClients, exchangeActiveSync or other"`
	IncludeUsers     []string `json:"include_users" doc:"The keywords of the users condition: All, None, GuestsOrExternalUsers (users named by id are not listed)"`
	IncludeRoles     []string `json:"include_roles" doc:"Directory role template ids the policy includes"`
	Exclusions       int      `json:"exclusions" doc:"Users, groups and roles the policy excludes"`
	MFAAllUsers      bool     `json:"mfa_all_users" doc:"Requires MFA of all users from the modern clients for every cloud app"`
	MFAAdmins        bool     `json:"mfa_admins" doc:"Requires MFA of all users or of the Global Administrator role from the modern clients for every cloud app"`
	BlocksLegacyAuth bool     `json:"blocks_legacy_auth" doc:"Blocks Exchange ActiveSync and other legacy clients for all users and every cloud app"`
}

// AccessPosture is one tenant's Conditional Access posture at its latest
// sync.
type AccessPosture struct {
	TenantID          string       `json:"tenant_id"`
	TenantName        string       `json:"tenant_name"`
	SecurityDefaults  bool         `json:"security_defaults_enabled" doc:"The tenant enforces Entra ID's security defaults"`
	MFAAllUsers       ControlItem  `json:"mfa_all_users" doc:"MFA required of every user"`
	MFAAdmins         ControlItem  `json:"mfa_admins" doc:"MFA required of the Global Administrators"`
	LegacyAuthBlocked ControlItem  `json:"legacy_auth_blocked" doc:"Legacy authentication blocked"`
	Policies          []PolicyItem `json:"policies" doc:"Every Conditional Access policy of the tenant, by name"`
	SyncedAt          time.Time    `json:"synced_at"`
}

// splitList is a comma-separated column as a list, empty for "".
func splitList(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

// control is one control's item: its state, whether it is enforced and
// the policies carrying it.
func control(state string, securityDefaults bool, policies []CAPolicy, carries func(CAPolicy) bool) ControlItem {
	out := ControlItem{State: state, Enforced: Enforced(state, securityDefaults), Policies: []string{}}
	for _, p := range policies {
		if carries(p) {
			out.Policies = append(out.Policies, p.Name)
		}
	}
	return out
}

func (h *Handlers) conditionalAccess(ctx context.Context, in *tenantsIn) (*[]AccessPosture, error) {
	postures, err := h.Store.Postures(ctx, in.Tenants)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	if len(postures) > 0 {
		known, err := h.Host.Tenants(ctx, in.Tenants...)
		if err != nil {
			return nil, err
		}
		for _, t := range known {
			names[t.ID] = t.Name
		}
	}
	out := make([]AccessPosture, len(postures))
	for i, tp := range postures {
		sd := tp.SecurityDefaults
		out[i] = AccessPosture{TenantID: tp.TenantID, TenantName: names[tp.TenantID], SecurityDefaults: sd,
			MFAAllUsers:       control(tp.MFAAllUsers, sd, tp.Policies, func(p CAPolicy) bool { return p.MFAAllUsers }),
			MFAAdmins:         control(tp.MFAAdmins, sd, tp.Policies, func(p CAPolicy) bool { return p.MFAAdmins }),
			LegacyAuthBlocked: control(tp.LegacyAuthBlocked, sd, tp.Policies, func(p CAPolicy) bool { return p.BlocksLegacyAuth }),
			Policies:          make([]PolicyItem, len(tp.Policies)), SyncedAt: tp.SyncedAt.UTC()}
		for k, p := range tp.Policies {
			out[i].Policies[k] = PolicyItem{PolicyID: p.PolicyID, Name: p.Name, State: p.State, GrantOperator: p.GrantOperator,
				GrantControls: splitList(p.GrantControls), ClientAppTypes: splitList(p.ClientAppTypes), IncludeUsers: splitList(p.IncludeUsers),
				IncludeRoles: splitList(p.IncludeRoles), Exclusions: p.Exclusions, MFAAllUsers: p.MFAAllUsers, MFAAdmins: p.MFAAdmins,
				BlocksLegacyAuth: p.BlocksLegacyAuth}
		}
	}
	return &out, nil
}

// accessCard is the page's Conditional Access card: each tenant's
// security defaults and controls as badges, by tenant name (or id when
// names has none), and, for one tenant, its policies.
func accessCard(postures []TenantPosture, names map[string]string) template.HTML {
	many := len(postures) > 1
	if len(postures) == 0 {
		return sdkui.Empty("No Conditional Access posture yet. It arrives with the next identity sync.")
	}
	columns := []string{"Security defaults", "MFA for all users", "MFA for admins", "Legacy authentication blocked"}
	if many {
		columns = slices.Insert(columns, 0, "Tenant")
	}
	rows := make([][]any, 0, len(postures))
	for _, tp := range postures {
		sd := sdkui.Badge("Off", sdkui.Unknown)
		if tp.SecurityDefaults {
			sd = sdkui.Badge("On", sdkui.OK)
		}
		row := []any{sd, controlBadge(tp.MFAAllUsers, tp.SecurityDefaults), controlBadge(tp.MFAAdmins, tp.SecurityDefaults),
			controlBadge(tp.LegacyAuthBlocked, tp.SecurityDefaults)}
		if many {
			row = slices.Insert(row, 0, any(cmp.Or(names[tp.TenantID], tp.TenantID)))
		}
		rows = append(rows, row)
	}
	slices.SortStableFunc(rows, func(a, b []any) int { return strings.Compare(fmt.Sprint(a[0]), fmt.Sprint(b[0])) })
	parts := []template.HTML{sdkui.Table(columns, rows, "Conditional Access controls of each tenant"),
		render("note", "Enforced by an enabled policy or by security defaults. A report-only policy is evaluated and logged, never enforced.")}
	if !many {
		parts = append(parts, policyTable(postures[0].Policies))
	}
	return stack(parts...)
}

// controlBadge is a control's state as a badge.
func controlBadge(state string, securityDefaults bool) template.HTML {
	switch {
	case state == StateEnabled:
		return sdkui.Badge("Enforced", sdkui.OK)
	case securityDefaults:
		return sdkui.Badge("Security defaults", sdkui.OK)
	case state == StateReportOnly:
		return sdkui.Badge("Report-only", sdkui.Warning)
	case state == StateDisabled:
		return sdkui.Badge("Disabled", sdkui.Critical)
	}
	return sdkui.Badge("No policy", sdkui.Critical)
}

// policyTable lists a tenant's policies with their state, grant and what
// each carries.
func policyTable(policies []CAPolicy) template.HTML {
	if len(policies) == 0 {
		return sdkui.Empty("No Conditional Access policies.")
	}
	states := map[string]template.HTML{StateEnabled: sdkui.Badge("Enabled", sdkui.OK), StateReportOnly: sdkui.Badge("Report-only", sdkui.Warning),
		StateDisabled: sdkui.Badge("Disabled", sdkui.Unknown)}
	rows := make([][]any, 0, len(policies))
	for _, p := range policies {
		var carries []string
		for _, c := range []struct {
			on   bool
			name string
		}{{p.MFAAllUsers, "MFA for all users"}, {p.MFAAdmins, "MFA for admins"}, {p.BlocksLegacyAuth, "legacy authentication blocked"}} {
			if c.on {
				carries = append(carries, c.name)
			}
		}
		state, ok := states[p.State]
		if !ok {
			state = sdkui.Badge(p.State, sdkui.Unknown)
		}
		grant := strings.ReplaceAll(p.GrantControls, ",", " "+strings.ToLower(cmp.Or(p.GrantOperator, "or"))+" ")
		rows = append(rows, []any{p.Name, state, grant, strings.Join(carries, ", "), count(int64(p.Exclusions))})
	}
	return sdkui.Table([]string{"Policy", "State", "Grant", "Carries", "Exclusions"}, rows, "Conditional Access policies")
}
