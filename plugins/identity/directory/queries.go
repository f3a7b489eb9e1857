package directory

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// Page narrows a list read: its tenants, its order and its window.
type Page struct {
	TenantIDs []string
	// SortBy is a key of the list's sort columns; Desc reverses it.
	SortBy string
	Desc   bool
	Limit  int
	Offset int
}

// order sorts by the named column with NULLs last in both dialects, then
// by the tie-breaking columns.
func (p Page) order(sel *bun.SelectQuery, columns map[string]string, ties ...string) *bun.SelectQuery {
	dir := " ASC"
	if p.Desc {
		dir = " DESC"
	}
	col := columns[p.SortBy]
	sel = sel.OrderExpr("CASE WHEN " + col + " IS NULL THEN 1 ELSE 0 END").OrderExpr(col + dir)
	for _, t := range ties {
		sel = sel.OrderExpr(t)
	}
	return sel.Limit(int64(p.Limit)).Offset(int64(p.Offset))
}

// TenantCounts are one tenant's figures at its latest sync.
type TenantCounts struct {
	TenantID         string
	TotalUsers       int64
	GuestUsers       int64
	DisabledUsers    int64
	AdminUsers       int64
	MFAUsers         int64
	AdminMFAUsers    int64
	Devices          int64
	CompliantDevices int64
	SyncedAt         time.Time
}

// Counts returns the figures of each of the tenants that has synced
// users, ordered by tenant. They are the tenant's latest snapshot, which
// the sync counted in the database from the rows it stored, in the same
// transaction; so a read costs a row per tenant however large its
// directory.
func (s *Store) Counts(ctx context.Context, tenantIDs []string) ([]TenantCounts, error) {
	snaps, err := s.Latest(ctx, tenantIDs)
	if err != nil {
		return nil, err
	}
	out := make([]TenantCounts, 0, len(snaps))
	for _, sn := range snaps {
		if sn.TotalUsers == 0 {
			continue
		}
		out = append(out, TenantCounts{TenantID: sn.TenantID, TotalUsers: sn.TotalUsers, GuestUsers: sn.GuestUsers, DisabledUsers: sn.DisabledUsers,
			AdminUsers: sn.AdminUsers, MFAUsers: sn.MFAUsers, AdminMFAUsers: sn.AdminMFAUsers, Devices: sn.Devices,
			CompliantDevices: sn.CompliantDevices, SyncedAt: sn.SyncedAt})
	}
	return out, nil
}

// UserRow is a user as the lists show it.
type UserRow struct {
	TenantID          string    `bun:"tenant_id"`
	UserID            string    `bun:"user_id"`
	DisplayName       string    `bun:"display_name"`
	UserPrincipalName string    `bun:"user_principal_name"`
	Mail              string    `bun:"mail"`
	UserType          string    `bun:"user_type"`
	AccountEnabled    bool      `bun:"account_enabled"`
	IsAdmin           bool      `bun:"is_admin"`
	MFARegistered     bool      `bun:"mfa_registered"`
	MFAMethods        string    `bun:"mfa_methods"`
	Created           time.Time `bun:"created_at"`
	LastSignIn        time.Time `bun:"last_sign_in"`
}

var userSorts = map[string]string{"display_name": "display_name", "last_sign_in": "last_sign_in", "created_at": "created_at"}

// UserFilter selects users.
type UserFilter struct {
	WithoutMFA bool
	AdminsOnly bool
	Guests     bool
	// StaleBefore, when set, keeps enabled accounts whose last sign-in is
	// before it, or that never signed in and were created before it.
	StaleBefore time.Time
	// AdminsFirst orders the directory role holders before the others,
	// each in the page's order.
	AdminsFirst bool
}

// Users returns a page of the users f selects and how many it selects.
func (s *Store) Users(ctx context.Context, p Page, f UserFilter) ([]UserRow, int, error) {
	out := []UserRow{}
	if len(p.TenantIDs) == 0 {
		return out, 0, nil
	}
	sel := s.DB.NewSelect().Model((*User)(nil)).
		Column("tenant_id", "user_id", "display_name", "user_principal_name", "mail", "user_type", "account_enabled",
			"is_admin", "mfa_registered", "mfa_methods", "created_at", "last_sign_in").
		Where("tenant_id IN (?)", bun.List(p.TenantIDs))
	if f.WithoutMFA {
		sel = sel.Where("NOT mfa_registered")
	}
	if f.AdminsOnly {
		sel = sel.Where("is_admin")
	}
	if f.Guests {
		sel = sel.Where("user_type = 'Guest'")
	}
	if !f.StaleBefore.IsZero() {
		sel = sel.Where("account_enabled").WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("last_sign_in < ?", f.StaleBefore).
				WhereOr("last_sign_in IS NULL AND created_at < ?", f.StaleBefore)
		})
	}
	total, err := sel.Count(ctx)
	if err != nil {
		return nil, 0, err
	}
	if f.AdminsFirst {
		sel = sel.OrderExpr("CASE WHEN is_admin THEN 0 ELSE 1 END")
	}
	err = p.order(sel, userSorts, "tenant_id", "user_id").Scan(ctx, &out)
	return out, int(total), err
}

// Assignment is a directory role held by a principal, with the holder's
// account state when it is a user.
type Assignment struct {
	TenantID       string    `bun:"tenant_id"`
	RoleID         string    `bun:"role_id"`
	RoleName       string    `bun:"role_name"`
	RoleTemplateID string    `bun:"role_template_id"`
	MemberID       string    `bun:"member_id"`
	MemberType     string    `bun:"member_type"`
	MemberName     string    `bun:"member_name"`
	MemberUPN      string    `bun:"member_upn"`
	AccountEnabled *bool     `bun:"account_enabled"`
	MFARegistered  *bool     `bun:"mfa_registered"`
	LastSignIn     time.Time `bun:"last_sign_in"`
}

var assignmentSorts = map[string]string{"role_name": "r.role_name", "display_name": "r.member_name", "last_sign_in": "u.last_sign_in"}

// Assignments returns a page of the role assignments — only those of
// disabled accounts when disabledOnly — and how many there are.
func (s *Store) Assignments(ctx context.Context, p Page, disabledOnly bool) ([]Assignment, int, error) {
	out := []Assignment{}
	if len(p.TenantIDs) == 0 {
		return out, 0, nil
	}
	sel := s.DB.NewSelect().TableExpr("identity_role_members AS r").
		ColumnExpr("r.tenant_id, r.role_id, r.role_name, r.role_template_id, r.member_id, r.member_type, r.member_name, r.member_upn").
		ColumnExpr("u.account_enabled, u.mfa_registered, u.last_sign_in").
		Join("LEFT JOIN identity_users AS u ON u.tenant_id = r.tenant_id AND u.user_id = r.member_id").
		Where("r.tenant_id IN (?)", bun.List(p.TenantIDs))
	if disabledOnly {
		sel = sel.Where("NOT u.account_enabled")
	}
	total, err := sel.Count(ctx)
	if err != nil {
		return nil, 0, err
	}
	err = p.order(sel, assignmentSorts, "r.tenant_id", "r.member_id", "r.role_id").Scan(ctx, &out)
	return out, int(total), err
}

// ReviewRow is an access review with its decisions counted.
type ReviewRow struct {
	TenantID    string    `bun:"tenant_id"`
	ReviewID    string    `bun:"review_id"`
	Name        string    `bun:"name"`
	Status      string    `bun:"status"`
	Created     time.Time `bun:"created_at"`
	Decisions   int64     `bun:"decisions"`
	Approved    int64     `bun:"approved"`
	Denied      int64     `bun:"denied"`
	NotReviewed int64     `bun:"not_reviewed"`
}

var reviewSorts = map[string]string{"name": "a.name", "status": "a.status", "created_at": "a.created_at"}

// Reviews returns a page of the access reviews, of one status when status
// is set, and how many there are.
func (s *Store) Reviews(ctx context.Context, p Page, status string) ([]ReviewRow, int, error) {
	out := []ReviewRow{}
	if len(p.TenantIDs) == 0 {
		return out, 0, nil
	}
	filter := func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where("a.tenant_id IN (?)", bun.List(p.TenantIDs))
		if status != "" {
			q = q.Where("a.status = ?", status)
		}
		return q
	}
	total, err := filter(s.DB.NewSelect().TableExpr("identity_access_reviews AS a")).Count(ctx)
	if err != nil {
		return nil, 0, err
	}
	sel := filter(s.DB.NewSelect().TableExpr("identity_access_reviews AS a").
		ColumnExpr("a.tenant_id, a.review_id, a.name, a.status, a.created_at").
		ColumnExpr("COUNT(d.decision_id) AS decisions").
		ColumnExpr("SUM(CASE WHEN d.decision = 'Approve' THEN 1 ELSE 0 END) AS approved").
		ColumnExpr("SUM(CASE WHEN d.decision = 'Deny' THEN 1 ELSE 0 END) AS denied").
		ColumnExpr("SUM(CASE WHEN d.decision = 'NotReviewed' THEN 1 ELSE 0 END) AS not_reviewed").
		Join("LEFT JOIN identity_review_decisions AS d ON d.tenant_id = a.tenant_id AND d.review_id = a.review_id")).
		GroupExpr("a.tenant_id, a.review_id, a.name, a.status, a.created_at")
	err = p.order(sel, reviewSorts, "a.tenant_id", "a.review_id").Scan(ctx, &out)
	return out, int(total), err
}

// DecisionsOf returns the decisions of the reviews, by tenant and review.
func (s *Store) DecisionsOf(ctx context.Context, reviews []ReviewRow) ([]Decision, error) {
	out := []Decision{}
	if len(reviews) == 0 {
		return out, nil
	}
	sel := s.DB.NewSelect().Model(&out)
	for _, r := range reviews {
		sel = sel.WhereOr("tenant_id = ? AND review_id = ?", r.TenantID, r.ReviewID)
	}
	err := sel.Order("tenant_id", "review_id", "principal_name", "decision_id").Scan(ctx)
	return out, err
}

var deviceSorts = map[string]string{"name": "name", "compliance_state": "compliance_state", "last_sync": "last_sync"}

// Devices returns a page of the managed devices, of one compliance state
// when state is set, and how many there are.
func (s *Store) Devices(ctx context.Context, p Page, state string) ([]Device, int, error) {
	out := []Device{}
	if len(p.TenantIDs) == 0 {
		return out, 0, nil
	}
	sel := s.DB.NewSelect().Model(&out).Where("tenant_id IN (?)", bun.List(p.TenantIDs))
	if state != "" {
		sel = sel.Where("compliance_state = ?", state)
	}
	total, err := sel.Count(ctx)
	if err != nil {
		return nil, 0, err
	}
	err = p.order(sel, deviceSorts, "tenant_id", "device_id").Scan(ctx)
	return out, int(total), err
}

// DayFigures are the tenants' snapshots of one day, summed.
type DayFigures struct {
	Day           string `bun:"day"`
	Tenants       int64  `bun:"tenants"`
	TotalUsers    int64  `bun:"total_users"`
	MFAUsers      int64  `bun:"mfa_users"`
	AdminUsers    int64  `bun:"admin_users"`
	AdminMFAUsers int64  `bun:"admin_mfa_users"`
}

// Trend returns the tenants' snapshots summed per day from the day from
// (YYYY-MM-DD) on, oldest first.
func (s *Store) Trend(ctx context.Context, tenantIDs []string, from string) ([]DayFigures, error) {
	out := []DayFigures{}
	if len(tenantIDs) == 0 {
		return out, nil
	}
	err := s.DB.NewSelect().Model((*Snapshot)(nil)).
		Column("day").
		ColumnExpr("COUNT(*) AS tenants").
		ColumnExpr("SUM(total_users) AS total_users").
		ColumnExpr("SUM(mfa_users) AS mfa_users").
		ColumnExpr("SUM(admin_users) AS admin_users").
		ColumnExpr("SUM(admin_mfa_users) AS admin_mfa_users").
		Where("tenant_id IN (?)", bun.List(tenantIDs)).Where("day >= ?", from).
		Group("day").Order("day").Scan(ctx, &out)
	return out, err
}

// Latest returns each tenant's most recent snapshot.
func (s *Store) Latest(ctx context.Context, tenantIDs []string) ([]Snapshot, error) {
	out := []Snapshot{}
	if len(tenantIDs) == 0 {
		return out, nil
	}
	latest := s.DB.NewSelect().Model((*Snapshot)(nil)).Column("tenant_id").ColumnExpr("MAX(day) AS day").
		Where("tenant_id IN (?)", bun.List(tenantIDs)).Group("tenant_id")
	err := s.DB.NewSelect().Model(&out).
		Join("JOIN (?) AS l ON l.tenant_id = s.tenant_id AND l.day = s.day", latest).
		Order("s.tenant_id").Scan(ctx)
	return out, err
}
