package directory

import (
	"context"
	"html/template"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloud"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// RiskyUser is a user Identity Protection judged at risk, now or before.
type RiskyUser struct {
	bun.BaseModel     `bun:"table:identity_risky_users"`
	TenantID          string `bun:"tenant_id,pk"`
	UserID            string `bun:"user_id,pk"`
	DisplayName       string `bun:"display_name"`
	UserPrincipalName string `bun:"user_principal_name"`
	// RiskLevel is low, medium, high, hidden or none; RiskState atRisk,
	// confirmedCompromised, remediated, dismissed or confirmedSafe.
	RiskLevel  string    `bun:"risk_level"`
	RiskState  string    `bun:"risk_state"`
	RiskDetail string    `bun:"risk_detail"`
	Updated    time.Time `bun:"risk_updated_at,nullzero"`
}

// atRiskStates are the states of a user still at risk: the others were
// remediated, dismissed or judged safe.
var atRiskStates = []string{"atRisk", "confirmedCompromised"}

func riskyUser(tenantID string, r cloud.RiskyUser) RiskyUser {
	return RiskyUser{TenantID: tenantID, UserID: r.ID, DisplayName: r.UserDisplayName, UserPrincipalName: r.UserPrincipalName,
		RiskLevel: r.RiskLevel, RiskState: r.RiskState, RiskDetail: r.RiskDetail, Updated: r.LastUpdated.UTC()}
}

// riskCounts are how many of the users are at risk, and of those at high
// risk.
func riskCounts(users []RiskyUser) (atRisk, high int64) {
	for _, u := range users {
		for _, s := range atRiskStates {
			if u.RiskState == s {
				atRisk++
				if u.RiskLevel == "high" {
					high++
				}
			}
		}
	}
	return atRisk, high
}

// riskSorts sort by risk, highest first in ascending order, by when the
// risk last changed, or by name.
var riskSorts = map[string]string{
	"risk_level":      "CASE risk_level WHEN 'high' THEN 0 WHEN 'medium' THEN 1 WHEN 'low' THEN 2 ELSE 3 END",
	"risk_updated_at": "risk_updated_at",
	"display_name":    "display_name",
}

// RiskFilter selects risky users.
type RiskFilter struct {
	// AtRisk keeps the users still at risk (atRisk or
	// confirmedCompromised); Level and State keep one of each when set.
	AtRisk bool
	Level  string
	State  string
}

// RiskyUsers returns a page of the risky users f selects and how many it
// selects.
func (s *Store) RiskyUsers(ctx context.Context, p Page, f RiskFilter) ([]RiskyUser, int, error) {
	out := []RiskyUser{}
	if len(p.TenantIDs) == 0 {
		return out, 0, nil
	}
	sel := s.db.NewSelect().Model(&out).Where("tenant_id IN (?)", bun.List(p.TenantIDs))
	if f.AtRisk {
		sel = sel.Where("risk_state IN (?)", bun.List(atRiskStates))
	}
	if f.Level != "" {
		sel = sel.Where("risk_level = ?", f.Level)
	}
	if f.State != "" {
		sel = sel.Where("risk_state = ?", f.State)
	}
	total, err := sel.Count(ctx)
	if err != nil {
		return nil, 0, err
	}
	err = p.order(sel, riskSorts, "tenant_id", "user_id").Scan(ctx)
	return out, int(total), err
}

// RiskyUserItem is a risky user in a list.
type RiskyUserItem struct {
	TenantID          string     `json:"tenant_id"`
	UserID            string     `json:"user_id"`
	DisplayName       string     `json:"display_name"`
	UserPrincipalName string     `json:"user_principal_name"`
	RiskLevel         string     `json:"risk_level" doc:"low, medium, high, hidden or none"`
	RiskState         string     `json:"risk_state" doc:"atRisk, confirmedCompromised, remediated, dismissed or confirmedSafe"`
	RiskDetail        string     `json:"risk_detail" doc:"Why the state is what it is, as Identity Protection says"`
	AtRisk            bool       `json:"at_risk" doc:"The state is atRisk or confirmedCompromised"`
	RiskUpdatedAt     *time.Time `json:"risk_updated_at"`
}

// RiskyUserList is a page of risky users.
type RiskyUserList struct {
	Items  []RiskyUserItem `json:"items"`
	Total  int             `json:"total"`
	Limit  int             `json:"limit"`
	Offset int             `json:"offset"`
}

type riskyUsersIn struct {
	ListParams
	SortBy    string `query:"sort_by" enum:"risk_level,risk_updated_at,display_name" default:"risk_level" doc:"risk_level sorts the highest risk first in ascending order"`
	AtRisk    bool   `query:"at_risk" default:"false" doc:"Only users still at risk: atRisk or confirmedCompromised"`
	RiskLevel string `query:"risk_level" enum:"low,medium,high,hidden,none" doc:"Only users of this risk level"`
	RiskState string `query:"risk_state" enum:"atRisk,confirmedCompromised,remediated,dismissed,confirmedSafe,none" doc:"Only users in this risk state"`
}

func riskyUserItem(u RiskyUser) RiskyUserItem {
	atRisk := false
	for _, s := range atRiskStates {
		atRisk = atRisk || u.RiskState == s
	}
	return RiskyUserItem{TenantID: u.TenantID, UserID: u.UserID, DisplayName: u.DisplayName, UserPrincipalName: u.UserPrincipalName,
		RiskLevel: u.RiskLevel, RiskState: u.RiskState, RiskDetail: u.RiskDetail, AtRisk: atRisk, RiskUpdatedAt: timePtr(u.Updated)}
}

func (h *Handlers) riskyUsers(ctx context.Context, in *riskyUsersIn) (*RiskyUserList, error) {
	p := in.page(in.SortBy)
	rows, total, err := h.Store.RiskyUsers(ctx, p, RiskFilter{AtRisk: in.AtRisk, Level: in.RiskLevel, State: in.RiskState})
	if err != nil {
		return nil, err
	}
	out := RiskyUserList{Items: make([]RiskyUserItem, len(rows)), Total: total, Limit: p.Limit, Offset: p.Offset}
	for i, u := range rows {
		out.Items[i] = riskyUserItem(u)
	}
	return &out, nil
}

// risky is the page's list of the users at risk, highest risk first.
func (l lists) risky() (template.HTML, error) {
	rows, total, err := l.h.Store.RiskyUsers(l.ctx, l.page("risk_level", false), RiskFilter{AtRisk: true})
	if err != nil {
		return "", err
	}
	levels := map[string]sdkui.Health{"high": sdkui.Critical, "medium": sdkui.Warning}
	out := make([][]any, 0, len(rows))
	for _, u := range rows {
		health, ok := levels[u.RiskLevel]
		if !ok {
			health = sdkui.Unknown
		}
		since := "unknown"
		if !u.Updated.IsZero() {
			since = u.Updated.UTC().Format(time.DateOnly)
		}
		out = append(out, l.row(u.TenantID, account(u.DisplayName, u.UserPrincipalName), sdkui.Badge(u.RiskLevel, health), u.RiskState, since))
	}
	return l.table(l.columns("User", "Risk", "State", "Risk since"), out, "Users at risk, highest risk first",
		"users at risk", total, "/api/v1/identity/risky-users", "at_risk=true&sort_by=risk_level"), nil
}
