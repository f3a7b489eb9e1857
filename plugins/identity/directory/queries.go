package directory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/revcache"
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
	TenantID      string
	TotalUsers    int64
	GuestUsers    int64
	DisabledUsers int64
	AdminUsers    int64
	MFAUsers      int64
	AdminMFAUsers int64
	// MemberUsers are the enabled accounts that are not guests and
	// MemberMFAUsers those of them registered for MFA.
	MemberUsers      int64
	MemberMFAUsers   int64
	Devices          int64
	CompliantDevices int64
	SyncedAt         time.Time
}

// Counts returns the figures of each of the tenants that has synced
// users, ordered by tenant. They are the tenant's latest snapshot, which
// the sync counted in the database from the rows it stored, in the same
// transaction; so a read costs a row per tenant however large its
// directory, and none while the snapshots Latest keeps are current.
func (s *Store) Counts(ctx context.Context, tenantIDs []string) ([]TenantCounts, error) {
	snaps, err := s.keptLatest(ctx, tenantIDs)
	if err != nil {
		return nil, err
	}
	out := make([]TenantCounts, 0, len(snaps))
	for _, sn := range snaps {
		if sn.TotalUsers == 0 {
			continue
		}
		out = append(out, TenantCounts{TenantID: sn.TenantID, TotalUsers: sn.TotalUsers, GuestUsers: sn.GuestUsers, DisabledUsers: sn.DisabledUsers,
			AdminUsers: sn.AdminUsers, MFAUsers: sn.MFAUsers, AdminMFAUsers: sn.AdminMFAUsers, MemberUsers: deref(sn.MemberUsers),
			MemberMFAUsers: deref(sn.MemberMFAUsers), Devices: sn.Devices, CompliantDevices: sn.CompliantDevices, SyncedAt: sn.SyncedAt})
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

// listed is a page of a list and how many rows the whole list holds.
type listed[R any] struct {
	rows  []R
	total int
}

// keptPage returns the page p of a list with its further parameters
// params, kept under the revision of the page's tenants, the rest of the
// page and params; load reads it from the database. The rows returned are
// the caller's own.
func keptPage[R any](ctx context.Context, s *Store, c *revcache.Cache[listed[R]], p Page, params any,
	load func(context.Context) ([]R, int, error)) ([]R, int, error) {
	rest := p
	rest.TenantIDs = nil
	// In Go syntax, strings quoted, so that no two reads share a key.
	key := revcache.Key(p.TenantIDs, fmt.Sprintf("%#v", rest), fmt.Sprintf("%#v", params))
	l, err := c.Load(ctx, s.db, RevisionTable, p.TenantIDs, key, func(ctx context.Context) (listed[R], error) {
		rows, total, err := load(ctx)
		return listed[R]{rows: rows, total: total}, err
	})
	if err != nil {
		return nil, 0, err
	}
	return slices.Clone(l.rows), l.total, nil
}

// Users returns a page of the users f selects and how many it selects,
// kept under the tenants' revision, the page and f. A page of stale
// accounts is read from the database each time, as its cutoff moves with
// the clock; StaleCount keeps their count.
func (s *Store) Users(ctx context.Context, p Page, f UserFilter) ([]UserRow, int, error) {
	if len(p.TenantIDs) == 0 {
		return []UserRow{}, 0, nil
	}
	if !f.StaleBefore.IsZero() {
		return s.readUsers(ctx, p, f)
	}
	return keptPage(ctx, s, s.users, p, f, func(ctx context.Context) ([]UserRow, int, error) { return s.readUsers(ctx, p, f) })
}

// readUsers reads Users' page and count from the database.
func (s *Store) readUsers(ctx context.Context, p Page, f UserFilter) ([]UserRow, int, error) {
	out := []UserRow{}
	sel := s.db.NewSelect().Model((*User)(nil)).
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
		sel = staleBefore(sel, f.StaleBefore)
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

// staleBefore keeps the users UserFilter.StaleBefore selects at cutoff.
func staleBefore(sel *bun.SelectQuery, cutoff time.Time) *bun.SelectQuery {
	return sel.Where("account_enabled").WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("last_sign_in < ?", cutoff).
			WhereOr("last_sign_in IS NULL AND created_at < ?", cutoff)
	})
}

// staleHour is what StaleCount keeps of the tenants' stale accounts for
// one hour of cutoffs: how many are stale at the hour's start, and the
// times within the hour at which the others become stale, in order (one
// for each account whose last sign-in, or creation, falls in that hour).
type staleHour struct {
	atStart int
	within  []time.Time
}

// StaleCount returns how many accounts of the tenants Users selects with a
// StaleBefore of before. As the cutoff moves with the clock, what it keeps,
// under the tenants' revision and the cutoff's hour, is not the count at
// one cutoff but the count at the start of the hour and the times within
// it at which further accounts become stale; every cutoff of the hour is
// counted from them exactly. The cutoff is taken to the microsecond, the
// precision the databases store and compare times at.
func (s *Store) StaleCount(ctx context.Context, tenantIDs []string, before time.Time) (int, error) {
	if len(tenantIDs) == 0 {
		return 0, nil
	}
	before = before.Truncate(time.Microsecond)
	hour := before.Truncate(time.Hour)
	key := revcache.Key(tenantIDs, hour.UTC().Format(time.RFC3339))
	h, err := s.stale.Load(ctx, s.db, RevisionTable, tenantIDs, key, func(ctx context.Context) (staleHour, error) {
		return s.readStaleHour(ctx, tenantIDs, hour)
	})
	if err != nil {
		return 0, err
	}
	n, _ := slices.BinarySearchFunc(h.within, before, time.Time.Compare)
	return h.atStart + n, nil
}

// readStaleHour reads from the database the stale accounts' count at
// hour and the times in the hour after it at which others become stale:
// an account's last sign-in, or its creation when it never signed in.
func (s *Store) readStaleHour(ctx context.Context, tenantIDs []string, hour time.Time) (staleHour, error) {
	var out staleHour
	n, err := staleBefore(s.db.NewSelect().Model((*User)(nil)).Where("tenant_id IN (?)", bun.List(tenantIDs)), hour).Count(ctx)
	if err != nil {
		return out, err
	}
	out.atStart = int(n)
	end := hour.Add(time.Hour)
	var rows []struct {
		LastSignIn time.Time `bun:"last_sign_in"`
		Created    time.Time `bun:"created_at"`
	}
	err = s.db.NewSelect().Model((*User)(nil)).Column("last_sign_in", "created_at").
		Where("tenant_id IN (?)", bun.List(tenantIDs)).Where("account_enabled").
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("last_sign_in >= ? AND last_sign_in < ?", hour, end).
				WhereOr("last_sign_in IS NULL AND created_at >= ? AND created_at < ?", hour, end)
		}).Scan(ctx, &rows)
	if err != nil {
		return out, err
	}
	out.within = make([]time.Time, len(rows))
	for i, r := range rows {
		out.within[i] = r.LastSignIn
		if r.LastSignIn.IsZero() {
			out.within[i] = r.Created
		}
	}
	slices.SortFunc(out.within, time.Time.Compare)
	return out, nil
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
// disabled accounts when disabledOnly — and how many there are, kept under
// the tenants' revision, the page and disabledOnly.
func (s *Store) Assignments(ctx context.Context, p Page, disabledOnly bool) ([]Assignment, int, error) {
	if len(p.TenantIDs) == 0 {
		return []Assignment{}, 0, nil
	}
	return keptPage(ctx, s, s.assignments, p, disabledOnly, func(ctx context.Context) ([]Assignment, int, error) {
		return s.readAssignments(ctx, p, disabledOnly)
	})
}

// readAssignments reads Assignments' page and count from the database.
func (s *Store) readAssignments(ctx context.Context, p Page, disabledOnly bool) ([]Assignment, int, error) {
	out := []Assignment{}
	sel := s.db.NewSelect().TableExpr("identity_role_members AS r").
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
	Ends        time.Time `bun:"ends_at,nullzero"`
	Decisions   int64     `bun:"decisions"`
	Approved    int64     `bun:"approved"`
	Denied      int64     `bun:"denied"`
	NotReviewed int64     `bun:"not_reviewed"`
}

var reviewSorts = map[string]string{"name": "a.name", "status": "a.status", "created_at": "a.created_at", "ends_at": "a.ends_at"}

// reviewDone are the statuses of a review whose decisions are in: it is
// never overdue.
var reviewDone = []string{"Completing", "Completed", "AutoReviewing", "AutoReviewed", "Applying", "Applied"}

// Overdue reports whether a review of the status ending at ends is
// overdue at now: not done, and past its end.
func Overdue(status string, ends, now time.Time) bool {
	return !ends.IsZero() && ends.Before(now) && !slices.Contains(reviewDone, status)
}

// whereOverdue keeps the reviews, aliased a, that are overdue at now (see
// Overdue).
func whereOverdue(q *bun.SelectQuery, now time.Time) *bun.SelectQuery {
	return q.Where("a.ends_at < ?", now).Where("a.status NOT IN (?)", bun.List(reviewDone))
}

// ReviewFilter selects access reviews: of one status when Status is set,
// only the overdue ones at Now when Overdue is.
type ReviewFilter struct {
	Status  string
	Overdue bool
	Now     time.Time
}

// Reviews returns a page of the access reviews f selects and how many
// there are.
func (s *Store) Reviews(ctx context.Context, p Page, f ReviewFilter) ([]ReviewRow, int, error) {
	out := []ReviewRow{}
	if len(p.TenantIDs) == 0 {
		return out, 0, nil
	}
	filter := func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where("a.tenant_id IN (?)", bun.List(p.TenantIDs))
		if f.Status != "" {
			q = q.Where("a.status = ?", f.Status)
		}
		if f.Overdue {
			q = whereOverdue(q, f.Now)
		}
		return q
	}
	total, err := filter(s.db.NewSelect().TableExpr("identity_access_reviews AS a")).Count(ctx)
	if err != nil {
		return nil, 0, err
	}
	sel := filter(s.db.NewSelect().TableExpr("identity_access_reviews AS a").
		ColumnExpr("a.tenant_id, a.review_id, a.name, a.status, a.created_at, a.ends_at").
		ColumnExpr("COUNT(d.decision_id) AS decisions").
		ColumnExpr("SUM(CASE WHEN d.decision = 'Approve' THEN 1 ELSE 0 END) AS approved").
		ColumnExpr("SUM(CASE WHEN d.decision = 'Deny' THEN 1 ELSE 0 END) AS denied").
		ColumnExpr("SUM(CASE WHEN d.decision = 'NotReviewed' THEN 1 ELSE 0 END) AS not_reviewed").
		Join("LEFT JOIN identity_review_decisions AS d ON d.tenant_id = a.tenant_id AND d.review_id = a.review_id")).
		GroupExpr("a.tenant_id, a.review_id, a.name, a.status, a.created_at, a.ends_at")
	err = p.order(sel, reviewSorts, "a.tenant_id", "a.review_id").Scan(ctx, &out)
	return out, int(total), err
}

// DecisionsOf returns the decisions of the reviews, by tenant and review.
func (s *Store) DecisionsOf(ctx context.Context, reviews []ReviewRow) ([]Decision, error) {
	out := []Decision{}
	if len(reviews) == 0 {
		return out, nil
	}
	sel := s.db.NewSelect().Model(&out)
	for _, r := range reviews {
		sel = sel.WhereOr("tenant_id = ? AND review_id = ?", r.TenantID, r.ReviewID)
	}
	err := sel.Order("tenant_id", "review_id", "principal_name", "decision_id").Scan(ctx)
	return out, err
}

var deviceSorts = map[string]string{"name": "name", "compliance_state": "compliance_state", "last_sync": "last_sync"}

// Devices returns a page of the managed devices, of one compliance state
// when state is set, and how many there are, kept under the tenants'
// revision, the page and state.
func (s *Store) Devices(ctx context.Context, p Page, state string) ([]Device, int, error) {
	if len(p.TenantIDs) == 0 {
		return []Device{}, 0, nil
	}
	return keptPage(ctx, s, s.devices, p, state, func(ctx context.Context) ([]Device, int, error) {
		return s.readDevices(ctx, p, state)
	})
}

// readDevices reads Devices' page and count from the database.
func (s *Store) readDevices(ctx context.Context, p Page, state string) ([]Device, int, error) {
	out := []Device{}
	sel := s.db.NewSelect().Model(&out).Where("tenant_id IN (?)", bun.List(p.TenantIDs))
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

// DayFigures are the tenants' snapshots of one day, summed. The members'
// figures sum the snapshots that counted them.
type DayFigures struct {
	Day            string `bun:"day"`
	Tenants        int64  `bun:"tenants"`
	TotalUsers     int64  `bun:"total_users"`
	MFAUsers       int64  `bun:"mfa_users"`
	MemberUsers    int64  `bun:"member_users"`
	MemberMFAUsers int64  `bun:"member_mfa_users"`
	AdminUsers     int64  `bun:"admin_users"`
	AdminMFAUsers  int64  `bun:"admin_mfa_users"`
}

// Trend returns the tenants' snapshots summed per day from the day from
// (YYYY-MM-DD) on, oldest first, kept under the tenants' revision and
// from.
func (s *Store) Trend(ctx context.Context, tenantIDs []string, from string) ([]DayFigures, error) {
	if len(tenantIDs) == 0 {
		return []DayFigures{}, nil
	}
	out, err := s.trends.Load(ctx, s.db, RevisionTable, tenantIDs, revcache.Key(tenantIDs, from), func(ctx context.Context) ([]DayFigures, error) {
		return s.readTrend(ctx, tenantIDs, from)
	})
	if err != nil {
		return nil, err
	}
	return slices.Clone(out), nil
}

// readTrend reads Trend's days from the database.
func (s *Store) readTrend(ctx context.Context, tenantIDs []string, from string) ([]DayFigures, error) {
	out := []DayFigures{}
	err := s.db.NewSelect().Model((*Snapshot)(nil)).
		Column("day").
		ColumnExpr("COUNT(*) AS tenants").
		ColumnExpr("SUM(total_users) AS total_users").
		ColumnExpr("SUM(mfa_users) AS mfa_users").
		ColumnExpr("COALESCE(SUM(member_users), 0) AS member_users").
		ColumnExpr("COALESCE(SUM(member_mfa_users), 0) AS member_mfa_users").
		ColumnExpr("SUM(admin_users) AS admin_users").
		ColumnExpr("SUM(admin_mfa_users) AS admin_mfa_users").
		Where("tenant_id IN (?)", bun.List(tenantIDs)).Where("day >= ?", from).
		Group("day").Order("day").Scan(ctx, &out)
	return out, err
}

// Latest returns each tenant's most recent snapshot, ordered by tenant and
// kept under the tenants' revision.
func (s *Store) Latest(ctx context.Context, tenantIDs []string) ([]Snapshot, error) {
	out, err := s.keptLatest(ctx, tenantIDs)
	if err != nil {
		return nil, err
	}
	return slices.Clone(out), nil
}

// keptLatest is Latest's snapshots as kept, shared with every other
// caller: they must not be changed.
func (s *Store) keptLatest(ctx context.Context, tenantIDs []string) ([]Snapshot, error) {
	if len(tenantIDs) == 0 {
		return []Snapshot{}, nil
	}
	return s.latest.Load(ctx, s.db, RevisionTable, tenantIDs, revcache.Key(tenantIDs), func(ctx context.Context) ([]Snapshot, error) {
		return s.readLatest(ctx, tenantIDs)
	})
}

// readLatest reads Latest's snapshots from the database.
func (s *Store) readLatest(ctx context.Context, tenantIDs []string) ([]Snapshot, error) {
	out := []Snapshot{}
	latest := s.db.NewSelect().Model((*Snapshot)(nil)).Column("tenant_id").ColumnExpr("MAX(day) AS day").
		Where("tenant_id IN (?)", bun.List(tenantIDs)).Group("tenant_id")
	err := s.db.NewSelect().Model(&out).
		Join("JOIN (?) AS l ON l.tenant_id = s.tenant_id AND l.day = s.day", latest).
		Order("s.tenant_id").Scan(ctx)
	return out, err
}

// TenantPosture is a tenant's Conditional Access posture at its latest
// sync, with its policies.
type TenantPosture struct {
	TenantID string
	Posture
	Policies []CAPolicy
	SyncedAt time.Time
}

// Postures returns the posture of each of the tenants whose latest sync
// read it, ordered by tenant, each with its policies by name. A tenant
// whose latest snapshot predates the reading of the posture is left out.
func (s *Store) Postures(ctx context.Context, tenantIDs []string) ([]TenantPosture, error) {
	snaps, err := s.keptLatest(ctx, tenantIDs)
	if err != nil {
		return nil, err
	}
	out := []TenantPosture{}
	var ids []string
	for _, sn := range snaps {
		if p, ok := sn.Posture(); ok {
			out = append(out, TenantPosture{TenantID: sn.TenantID, Posture: p, Policies: []CAPolicy{}, SyncedAt: sn.SyncedAt})
			ids = append(ids, sn.TenantID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	var policies []CAPolicy
	if err := s.db.NewSelect().Model(&policies).Where("tenant_id IN (?)", bun.List(ids)).Order("tenant_id", "name", "policy_id").Scan(ctx); err != nil {
		return nil, err
	}
	at := map[string]int{}
	for i, p := range out {
		at[p.TenantID] = i
	}
	for _, p := range policies {
		i := at[p.TenantID]
		out[i].Policies = append(out[i].Policies, p)
	}
	return out, nil
}

// deref is the value p points at, or 0.
func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
