package directory

import (
	"context"
	"html/template"
	"time"

	"github.com/uptrace/bun"

	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// ReviewFinding is an access review decision that kept a privileged
// account without MFA: a reviewer approved the access of a directory role
// holder who has no MFA method registered.
type ReviewFinding struct {
	TenantID          string    `bun:"tenant_id"`
	ReviewID          string    `bun:"review_id"`
	ReviewName        string    `bun:"review_name"`
	DecisionID        string    `bun:"decision_id"`
	UserID            string    `bun:"user_id"`
	DisplayName       string    `bun:"display_name"`
	UserPrincipalName string    `bun:"user_principal_name"`
	AccountEnabled    bool      `bun:"account_enabled"`
	ReviewedBy        string    `bun:"reviewed_by"`
	ReviewedAt        time.Time `bun:"reviewed_at,nullzero"`
}

// reviewFindingSorts sort by when the decision was made, or by name.
var reviewFindingSorts = map[string]string{"reviewed_at": "d.reviewed_at", "display_name": "u.display_name"}

// ReviewFindings returns a page of the approvals of privileged accounts
// without MFA in the tenants' access reviews and how many there are, joined
// and counted in the database: decisions of Approve on a user who holds a
// directory role (is_admin) and has no MFA method registered.
func (s *Store) ReviewFindings(ctx context.Context, p Page) ([]ReviewFinding, int, error) {
	out := []ReviewFinding{}
	if len(p.TenantIDs) == 0 {
		return out, 0, nil
	}
	sel := selectReviewFindings(s.db, p.TenantIDs)
	total, err := sel.Count(ctx)
	if err != nil {
		return nil, 0, err
	}
	sel = sel.ColumnExpr("d.tenant_id, d.review_id, a.name AS review_name, d.decision_id, u.user_id, u.display_name, " +
		"u.user_principal_name, u.account_enabled, d.reviewed_by, d.reviewed_at")
	err = p.order(sel, reviewFindingSorts, "d.tenant_id", "d.review_id", "d.decision_id").Scan(ctx, &out)
	return out, int(total), err
}

// selectReviewFindings selects the tenants' approvals of privileged
// accounts without MFA (see ReviewFindings) on db, the decisions aliased d,
// their users u and their reviews a.
func selectReviewFindings(db bun.IDB, tenantIDs []string) *bun.SelectQuery {
	return db.NewSelect().TableExpr("identity_review_decisions AS d").
		Join("JOIN identity_users AS u ON u.tenant_id = d.tenant_id AND u.user_id = d.principal_id").
		Join("JOIN identity_access_reviews AS a ON a.tenant_id = d.tenant_id AND a.review_id = d.review_id").
		Where("d.tenant_id IN (?)", bun.List(tenantIDs)).
		Where("d.decision = 'Approve'").Where("u.is_admin").Where("NOT u.mfa_registered")
}

// ReviewFindingItem is an approval of a privileged account without MFA.
type ReviewFindingItem struct {
	TenantID          string     `json:"tenant_id"`
	ReviewID          string     `json:"review_id"`
	ReviewName        string     `json:"review_name"`
	DecisionID        string     `json:"decision_id"`
	Finding           string     `json:"finding" enum:"approved_privileged_without_mfa" doc:"What is wrong: the review approved a directory role holder with no MFA method registered"`
	UserID            string     `json:"user_id"`
	DisplayName       string     `json:"display_name"`
	UserPrincipalName string     `json:"user_principal_name"`
	AccountEnabled    bool       `json:"account_enabled"`
	ReviewedBy        string     `json:"reviewed_by" doc:"The reviewer, as the review names them; empty when it names none"`
	ReviewedAt        *time.Time `json:"reviewed_at"`
}

// ReviewFindingList is a page of access review findings.
type ReviewFindingList struct {
	Items  []ReviewFindingItem `json:"items"`
	Total  int                 `json:"total"`
	Limit  int                 `json:"limit"`
	Offset int                 `json:"offset"`
}

type reviewFindingsIn struct {
	ListParams
	SortBy string `query:"sort_by" enum:"reviewed_at,display_name" default:"reviewed_at"`
}

func (h *Handlers) reviewFindings(ctx context.Context, in *reviewFindingsIn) (*ReviewFindingList, error) {
	p := in.page(in.SortBy)
	rows, total, err := h.Store.ReviewFindings(ctx, p)
	if err != nil {
		return nil, err
	}
	out := ReviewFindingList{Items: make([]ReviewFindingItem, len(rows)), Total: total, Limit: p.Limit, Offset: p.Offset}
	for i, r := range rows {
		out.Items[i] = ReviewFindingItem{TenantID: r.TenantID, ReviewID: r.ReviewID, ReviewName: r.ReviewName, DecisionID: r.DecisionID,
			Finding: "approved_privileged_without_mfa", UserID: r.UserID, DisplayName: r.DisplayName, UserPrincipalName: r.UserPrincipalName,
			AccountEnabled: r.AccountEnabled, ReviewedBy: r.ReviewedBy, ReviewedAt: timePtr(r.ReviewedAt)}
	}
	return &out, nil
}

// reviewFindings is the page's list of the approvals of privileged
// accounts without MFA, latest first.
func (l lists) reviewFindings() (template.HTML, error) {
	rows, total, err := l.h.Store.ReviewFindings(l.ctx, l.page("reviewed_at", true))
	if err != nil {
		return "", err
	}
	out := make([][]any, 0, len(rows))
	for _, r := range rows {
		when := "unknown"
		if !r.ReviewedAt.IsZero() {
			when = r.ReviewedAt.UTC().Format(time.DateOnly)
		}
		out = append(out, l.row(r.TenantID, account(r.DisplayName, r.UserPrincipalName), r.ReviewName,
			sdkui.Badge("approved without MFA", sdkui.Critical), when))
	}
	return l.table(l.columns("Account", "Review", "Finding", "Reviewed"), out, "Privileged accounts approved without MFA, latest first",
		"approvals of privileged accounts without MFA", total, "/api/v1/identity/access-review-findings", "sort_by=reviewed_at&sort_order=desc"), nil
}

// overdueReviews is the page's list of the access reviews overdue now,
// the longest overdue first.
func (l lists) overdueReviews() (template.HTML, error) {
	now := l.h.now()
	rows, total, err := l.h.Store.Reviews(l.ctx, l.page("ends_at", false), ReviewFilter{Overdue: true, Now: now})
	if err != nil {
		return "", err
	}
	out := make([][]any, 0, len(rows))
	for _, r := range rows {
		late := sdkui.Badge("overdue by "+count(int64(now.Sub(r.Ends)/(24*time.Hour)))+" days", sdkui.Warning)
		out = append(out, l.row(r.TenantID, r.Name, r.Status, r.Ends.UTC().Format(time.DateOnly), late))
	}
	return l.table(l.columns("Review", "Status", "Ended", "Overdue"), out, "Access reviews past their end and not done, longest overdue first",
		"overdue access reviews", total, "/api/v1/identity/access-reviews", "overdue=true&sort_by=ends_at"), nil
}
