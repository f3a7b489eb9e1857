package directory

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloud"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Microsoft's guidance on the Global Administrator role: at least two, so
// that losing one account does not lock the tenant out, and fewer than
// five, as each one can do anything.
const (
	minGlobalAdmins = 2
	maxGlobalAdmins = 4
)

// The statuses of a tenant's Global Administrator count.
const (
	AdminsOK      = "ok"
	AdminsTooFew  = "too_few"
	AdminsTooMany = "too_many"
)

// adminsStatus judges a count of Global Administrators.
func adminsStatus(n int64) string {
	switch {
	case n < minGlobalAdmins:
		return AdminsTooFew
	case n > maxGlobalAdmins:
		return AdminsTooMany
	}
	return AdminsOK
}

// GlobalAdmin is a principal holding the Global Administrator role, or
// eligible for it, directly or through groups.
type GlobalAdmin struct {
	bun.BaseModel `bun:"table:identity_global_admins"`
	TenantID      string `bun:"tenant_id,pk"`
	PrincipalID   string `bun:"principal_id,pk"`
	// PrincipalType is user or servicePrincipal: a group is replaced by
	// its members.
	PrincipalType     string `bun:"principal_type"`
	DisplayName       string `bun:"display_name"`
	UserPrincipalName string `bun:"user_principal_name"`
	// Active is set when the principal holds the role now, Eligible when
	// it may activate it.
	Active   bool `bun:"active"`
	Eligible bool `bun:"eligible"`
	// ViaGroups are the names of the groups it holds the role through,
	// comma-separated; empty for a direct assignment alone.
	ViaGroups string `bun:"via_groups"`
}

// globalAdmins reads the tenant's Global Administrators: the active and
// eligible assignments of the role, each group's members (its nested
// groups' included) in place of the group. A principal assigned both
// ways, or through several groups, is one administrator.
func globalAdmins(ctx context.Context, g Graph, tenantID string) ([]GlobalAdmin, error) {
	byID := map[string]*GlobalAdmin{}
	var order []string
	add := func(id, typ, name, upn string, active bool, group string) {
		a, ok := byID[id]
		if !ok {
			a = &GlobalAdmin{TenantID: tenantID, PrincipalID: id, PrincipalType: typ, DisplayName: name, UserPrincipalName: upn}
			byID[id] = a
			order = append(order, id)
		}
		a.Active = a.Active || active
		a.Eligible = a.Eligible || !active
		if groups := splitList(a.ViaGroups); group != "" && !slices.Contains(groups, group) {
			a.ViaGroups = strings.Join(append(groups, group), ",")
		}
	}
	members := map[string][]cloud.RoleMember{}
	for _, active := range []bool{true, false} {
		list := g.EligibleRoleAssignments
		if active {
			list = g.ActiveRoleAssignments
		}
		err := list(ctx, globalAdministrator, func(in cloud.RoleScheduleInstance) error {
			if in.PrincipalType != "group" {
				add(in.PrincipalID, in.PrincipalType, in.PrincipalName, in.PrincipalUPN, active, "")
				return nil
			}
			if _, ok := members[in.PrincipalID]; !ok {
				err := g.GroupMembers(ctx, in.PrincipalID, func(m cloud.RoleMember) error {
					if m.Type != "group" {
						members[in.PrincipalID] = append(members[in.PrincipalID], m)
					}
					return nil
				})
				if err != nil {
					return fmt.Errorf("group %s holding Global Administrator: %w", in.PrincipalName, err)
				}
			}
			for _, m := range members[in.PrincipalID] {
				add(m.ID, m.Type, m.DisplayName, m.UserPrincipalName, active, in.PrincipalName)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]GlobalAdmin, len(order))
	for i, id := range order {
		out[i] = *byID[id]
	}
	return out, nil
}

// TenantAdmins are a tenant's Global Administrators at its latest sync.
type TenantAdmins struct {
	TenantID string
	// Count counts them all, Eligible those only eligible.
	Count    int64
	Eligible int64
	Admins   []GlobalAdmin
	SyncedAt time.Time
}

// GlobalAdmins returns the Global Administrators of each of the tenants
// whose latest sync counted them, ordered by tenant, each tenant's by
// name. A tenant whose latest snapshot predates the count is left out.
func (s *Store) GlobalAdmins(ctx context.Context, tenantIDs []string) ([]TenantAdmins, error) {
	snaps, err := s.keptLatest(ctx, tenantIDs)
	if err != nil {
		return nil, err
	}
	out := []TenantAdmins{}
	at := map[string]int{}
	for _, sn := range snaps {
		if sn.GlobalAdmins != nil && sn.GlobalAdminsEligible != nil {
			at[sn.TenantID] = len(out)
			out = append(out, TenantAdmins{TenantID: sn.TenantID, Count: *sn.GlobalAdmins, Eligible: *sn.GlobalAdminsEligible,
				Admins: []GlobalAdmin{}, SyncedAt: sn.SyncedAt})
		}
	}
	if len(out) == 0 {
		return out, nil
	}
	var admins []GlobalAdmin
	err = s.db.NewSelect().Model(&admins).Where("tenant_id IN (?)", bun.List(slices.Collect(maps.Keys(at)))).
		Order("tenant_id", "display_name", "principal_id").Scan(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range admins {
		i := at[a.TenantID]
		out[i].Admins = append(out[i].Admins, a)
	}
	return out, nil
}

// AdminItem is a Global Administrator.
type AdminItem struct {
	PrincipalID       string   `json:"principal_id"`
	PrincipalType     string   `json:"principal_type" doc:"user or servicePrincipal; a group holding the role is listed as its members"`
	DisplayName       string   `json:"display_name"`
	UserPrincipalName string   `json:"user_principal_name"`
	Active            bool     `json:"active" doc:"Holds the role now, permanently or activated"`
	Eligible          bool     `json:"eligible" doc:"May activate the role in Privileged Identity Management"`
	ViaGroups         []string `json:"via_groups" doc:"Groups the principal holds the role or its eligibility through; empty for a direct assignment alone"`
}

// GlobalAdminsItem is a tenant's Global Administrator count.
type GlobalAdminsItem struct {
	TenantID     string      `json:"tenant_id"`
	TenantName   string      `json:"tenant_name"`
	GlobalAdmins int64       `json:"global_admins" doc:"Principals holding the Global Administrator role or eligible for it, each once, a group's members in its stead"`
	Active       int64       `json:"active" doc:"Those holding it now"`
	EligibleOnly int64       `json:"eligible_only" doc:"Those only eligible for it"`
	Status       string      `json:"status" enum:"ok,too_few,too_many" doc:"too_few below 2, too_many above 4 (Microsoft's guidance), else ok"`
	Admins       []AdminItem `json:"admins" doc:"The Global Administrators, by name"`
	SyncedAt     time.Time   `json:"synced_at"`
}

func (h *Handlers) globalAdmins(ctx context.Context, in *tenantsIn) (*[]GlobalAdminsItem, error) {
	tenants, err := h.Store.GlobalAdmins(ctx, in.Tenants)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	if len(tenants) > 0 {
		known, err := h.Host.Tenants(ctx, in.Tenants...)
		if err != nil {
			return nil, err
		}
		for _, t := range known {
			names[t.ID] = t.Name
		}
	}
	out := make([]GlobalAdminsItem, len(tenants))
	for i, t := range tenants {
		out[i] = GlobalAdminsItem{TenantID: t.TenantID, TenantName: names[t.TenantID], GlobalAdmins: t.Count, Active: t.Count - t.Eligible,
			EligibleOnly: t.Eligible, Status: adminsStatus(t.Count), Admins: make([]AdminItem, len(t.Admins)), SyncedAt: t.SyncedAt.UTC()}
		for k, a := range t.Admins {
			out[i].Admins[k] = AdminItem{PrincipalID: a.PrincipalID, PrincipalType: a.PrincipalType, DisplayName: a.DisplayName,
				UserPrincipalName: a.UserPrincipalName, Active: a.Active, Eligible: a.Eligible, ViaGroups: splitList(a.ViaGroups)}
		}
	}
	return &out, nil
}

// adminsCard is the page's Global Administrators card: each tenant's
// count, judged, by tenant name (or id when names has none), and for one
// tenant who they are.
func adminsCard(tenants []TenantAdmins, names map[string]string) template.HTML {
	if len(tenants) == 0 {
		return sdkui.Empty("No Global Administrator count yet. It arrives with the next identity sync.")
	}
	many := len(tenants) > 1
	columns := []string{"Global Administrators", "Active", "Eligible only", "Status"}
	if many {
		columns = slices.Insert(columns, 0, "Tenant")
	}
	rows := make([][]any, 0, len(tenants))
	for _, t := range tenants {
		status := sdkui.Badge("2 to 4", sdkui.OK)
		switch adminsStatus(t.Count) {
		case AdminsTooFew:
			status = sdkui.Badge("Fewer than 2", sdkui.Critical)
		case AdminsTooMany:
			status = sdkui.Badge("More than 4", sdkui.Warning)
		}
		row := []any{count(t.Count), count(t.Count - t.Eligible), count(t.Eligible), status}
		if many {
			row = slices.Insert(row, 0, any(cmp.Or(names[t.TenantID], t.TenantID)))
		}
		rows = append(rows, row)
	}
	if many {
		slices.SortStableFunc(rows, func(a, b []any) int { return strings.Compare(fmt.Sprint(a[0]), fmt.Sprint(b[0])) })
	}
	parts := []template.HTML{sdkui.Table(columns, rows, "Global Administrators of each tenant"),
		render("note", "Active and eligible holders of the role in Privileged Identity Management, each once, a group's members in its stead. Microsoft advises at least 2 and fewer than 5.")}
	if !many {
		admins := make([][]any, 0, len(tenants[0].Admins))
		for _, a := range tenants[0].Admins {
			how := "Eligible"
			if a.Active {
				how = "Active"
			}
			via := "directly"
			if a.ViaGroups != "" {
				via = "through " + strings.ReplaceAll(a.ViaGroups, ",", ", ")
			}
			admins = append(admins, []any{account(a.DisplayName, a.UserPrincipalName), how, via})
		}
		if len(admins) > 0 {
			parts = append(parts, sdkui.Table([]string{"Administrator", "Assignment", "Held"}, admins, "Global Administrators by name"))
		}
	}
	return stack(parts...)
}
