// Package directory keeps each tenant's directory as Graph last reported
// it — users with their MFA registration, directory role holders, managed
// devices, access reviews and Conditional Access policies — with a daily
// snapshot of the MFA figures and the access posture, and syncs it from
// Graph.
package directory

import (
	"context"
	"embed"
	"io/fs"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/revcache"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the plugin's schema, applied by the host.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

// User is a directory user with its MFA registration.
type User struct {
	bun.BaseModel     `bun:"table:identity_users"`
	TenantID          string    `bun:"tenant_id,pk"`
	UserID            string    `bun:"user_id,pk"`
	DisplayName       string    `bun:"display_name"`
	UserPrincipalName string    `bun:"user_principal_name"`
	Mail              string    `bun:"mail"`
	UserType          string    `bun:"user_type"`
	AccountEnabled    bool      `bun:"account_enabled"`
	Created           time.Time `bun:"created_at,nullzero"`
	LastSignIn        time.Time `bun:"last_sign_in,nullzero"`
	// IsAdmin is set for a holder of a directory role, directly or as the
	// registration report says.
	IsAdmin       bool      `bun:"is_admin"`
	MFARegistered bool      `bun:"mfa_registered"`
	MFACapable    bool      `bun:"mfa_capable"`
	MFAMethods    string    `bun:"mfa_methods"`
	DefaultMethod string    `bun:"default_mfa_method"`
	SyncedAt      time.Time `bun:"synced_at"`
}

// RoleMember is a holder of a directory role.
type RoleMember struct {
	bun.BaseModel  `bun:"table:identity_role_members"`
	TenantID       string `bun:"tenant_id,pk"`
	RoleID         string `bun:"role_id,pk"`
	RoleName       string `bun:"role_name"`
	RoleTemplateID string `bun:"role_template_id"`
	MemberID       string `bun:"member_id,pk"`
	MemberType     string `bun:"member_type"`
	MemberName     string `bun:"member_name"`
	MemberUPN      string `bun:"member_upn"`
}

// Device is a managed device with its compliance state.
type Device struct {
	bun.BaseModel     `bun:"table:identity_devices"`
	TenantID          string    `bun:"tenant_id,pk"`
	DeviceID          string    `bun:"device_id,pk"`
	Name              string    `bun:"name"`
	UserID            string    `bun:"user_id"`
	UserPrincipalName string    `bun:"user_principal_name"`
	OperatingSystem   string    `bun:"operating_system"`
	OSVersion         string    `bun:"os_version"`
	ComplianceState   string    `bun:"compliance_state"`
	IsEncrypted       bool      `bun:"is_encrypted"`
	LastSync          time.Time `bun:"last_sync,nullzero"`
}

// AccessReview is an access review definition.
type AccessReview struct {
	bun.BaseModel `bun:"table:identity_access_reviews"`
	TenantID      string    `bun:"tenant_id,pk"`
	ReviewID      string    `bun:"review_id,pk"`
	Name          string    `bun:"name"`
	Status        string    `bun:"status"`
	Created       time.Time `bun:"created_at,nullzero"`
	// Ends is when the review's latest instance ends.
	Ends time.Time `bun:"ends_at,nullzero"`
}

// Decision is a reviewer's decision in one instance of an access review.
type Decision struct {
	bun.BaseModel  `bun:"table:identity_review_decisions"`
	TenantID       string    `bun:"tenant_id,pk"`
	ReviewID       string    `bun:"review_id,pk"`
	InstanceID     string    `bun:"instance_id,pk"`
	DecisionID     string    `bun:"decision_id,pk"`
	Decision       string    `bun:"decision"`
	Recommendation string    `bun:"recommendation"`
	PrincipalID    string    `bun:"principal_id"`
	PrincipalName  string    `bun:"principal_name"`
	PrincipalUPN   string    `bun:"principal_upn"`
	ReviewedBy     string    `bun:"reviewed_by"`
	Reviewed       time.Time `bun:"reviewed_at,nullzero"`
}

// Snapshot is a tenant's figures on one day, kept for the MFA trend.
type Snapshot struct {
	bun.BaseModel `bun:"table:identity_snapshots,alias:s"`
	TenantID      string `bun:"tenant_id,pk"`
	Day           string `bun:"day,pk"`
	TotalUsers    int64  `bun:"total_users"`
	AdminUsers    int64  `bun:"admin_users"`
	MFAUsers      int64  `bun:"mfa_users"`
	AdminMFAUsers int64  `bun:"admin_mfa_users"`
	GuestUsers    int64  `bun:"guest_users"`
	// DisabledUsers is 0 on the days before it was counted, except on
	// each tenant's latest snapshot of that time.
	DisabledUsers    int64 `bun:"disabled_users"`
	Devices          int64 `bun:"devices"`
	CompliantDevices int64 `bun:"compliant_devices"`
	// SecurityDefaults and the Conditional Access controls' states (see
	// Posture) are nil and empty on the days before they were read.
	SecurityDefaults *bool  `bun:"security_defaults"`
	CAMFAAllUsers    string `bun:"ca_mfa_all_users,nullzero"`
	CAMFAAdmins      string `bun:"ca_mfa_admins,nullzero"`
	CALegacyAuth     string `bun:"ca_legacy_auth_blocked,nullzero"`
	// GlobalAdmins counts the Global Administrators, active or eligible,
	// and GlobalAdminsEligible those only eligible; nil on the days before
	// they were counted.
	GlobalAdmins         *int64 `bun:"global_admins"`
	GlobalAdminsEligible *int64 `bun:"global_admins_eligible"`
	// RiskyUsers counts the users at risk now, HighRiskUsers those of
	// them at high risk; nil on the days before they were counted.
	RiskyUsers    *int64 `bun:"risky_users"`
	HighRiskUsers *int64 `bun:"high_risk_users"`
	// ExpiredCredentials counts the applications' credentials ended at the
	// sync, ExpiringCredentials those ending within 30 days of it; nil on
	// the days before they were counted.
	ExpiredCredentials  *int64 `bun:"expired_credentials"`
	ExpiringCredentials *int64 `bun:"expiring_credentials"`
	// AccessReviewFindings counts the access reviews' approvals of
	// directory role holders without MFA (see Store.ReviewFindings), and
	// OverdueAccessReviews the reviews overdue at the sync (see Overdue);
	// nil on the days before they were counted.
	AccessReviewFindings *int64 `bun:"access_review_findings"`
	OverdueAccessReviews *int64 `bun:"overdue_access_reviews"`
	// MemberUsers counts the enabled accounts that are not guests, the
	// population MFA coverage is measured on, and MemberMFAUsers those of
	// them registered for MFA; nil on the days before they were counted,
	// except on each tenant's latest snapshot of that time.
	MemberUsers    *int64    `bun:"member_users"`
	MemberMFAUsers *int64    `bun:"member_mfa_users"`
	SyncedAt       time.Time `bun:"synced_at"`
}

// Posture is the snapshot's Conditional Access posture; false when the
// snapshot predates its reading.
func (s Snapshot) Posture() (Posture, bool) {
	if s.SecurityDefaults == nil {
		return Posture{}, false
	}
	return Posture{SecurityDefaults: *s.SecurityDefaults, MFAAllUsers: s.CAMFAAllUsers, MFAAdmins: s.CAMFAAdmins, LegacyAuthBlocked: s.CALegacyAuth}, true
}

// Directory is everything one sync read of one tenant.
type Directory struct {
	Users     []User
	Roles     []RoleMember
	Devices   []Device
	Reviews   []AccessReview
	Decisions []Decision
	// Policies are the Conditional Access policies and SecurityDefaults
	// whether the tenant enforces security defaults.
	Policies         []CAPolicy
	SecurityDefaults bool
	// GlobalAdmins are the principals holding the Global Administrator
	// role or eligible for it.
	GlobalAdmins []GlobalAdmin
	// RiskyUsers are the users Identity Protection judged at risk.
	RiskyUsers []RiskyUser
	// Credentials are the applications' and service principals' client
	// secrets and certificates.
	Credentials []AppCredential
}

// Rows is how many rows the directory holds.
func (d *Directory) Rows() int64 {
	return int64(len(d.Users) + len(d.Roles) + len(d.Devices) + len(d.Reviews) + len(d.Decisions) + len(d.Policies) + len(d.GlobalAdmins) + len(d.RiskyUsers) + len(d.Credentials))
}

// RevisionTable is the identity data's revision table (see package
// revcache): Replace raises the revision of the tenant whose directory it
// replaces, in the transaction that replaces it.
const RevisionTable = "identity_tenant_revisions"

// cacheKeys bounds each of a Store's caches: the least recently used key
// is dropped first.
const cacheKeys = 256

// Store keeps the synced directories. Its reads of the latest snapshots
// (Latest, Counts), the trend, the stale accounts' count and the pages of
// users, role assignments and devices keep their results under the
// revision of the tenants' directories, so a read repeated between two
// syncs costs a lookup of the revision; a Replace through any Store on the
// same database raises it. It is safe for concurrent use.
type Store struct {
	db          *bun.DB
	latest      *revcache.Cache[[]Snapshot]
	trends      *revcache.Cache[[]DayFigures]
	stale       *revcache.Cache[staleHour]
	users       *revcache.Cache[listed[UserRow]]
	assignments *revcache.Cache[listed[Assignment]]
	devices     *revcache.Cache[listed[Device]]
}

// NewStore returns a Store on db.
func NewStore(db *bun.DB) *Store {
	return &Store{db: db,
		latest:      revcache.New[[]Snapshot](cacheKeys, revcache.MaxAge),
		trends:      revcache.New[[]DayFigures](cacheKeys, revcache.MaxAge),
		stale:       revcache.New[staleHour](cacheKeys, revcache.MaxAge),
		users:       revcache.New[listed[UserRow]](cacheKeys, revcache.MaxAge),
		assignments: revcache.New[listed[Assignment]](cacheKeys, revcache.MaxAge),
		devices:     revcache.New[listed[Device]](cacheKeys, revcache.MaxAge),
	}
}

// insertBatch keeps each INSERT under SQLite's and PostgreSQL's bound
// parameter limits for the widest table.
const insertBatch = 500

// Replace stores a tenant's directory as one unit, replacing the previous
// one, and records the day's snapshot computed from it: a reader never
// sees half a sync, and a tenant whose sync failed keeps what it had. The
// directory's rows are the tenant's (their TenantID is tenantID), so the
// tenant's revision is the one the same transaction raises.
func (s *Store) Replace(ctx context.Context, tenantID string, d *Directory, at time.Time) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// First: on PostgreSQL the revision's row stays locked until the
		// commit, so a second Replace of the tenant at once (a scheduled
		// and a manual run, or two replicas) waits here, then deletes the
		// rows the first stored instead of colliding with them.
		if err := revcache.Bump(ctx, tx, RevisionTable, tenantID); err != nil {
			return err
		}
		for _, m := range []any{(*User)(nil), (*RoleMember)(nil), (*Device)(nil), (*AccessReview)(nil), (*Decision)(nil), (*CAPolicy)(nil), (*GlobalAdmin)(nil), (*RiskyUser)(nil), (*AppCredential)(nil)} {
			if _, err := tx.NewDelete().Model(m).Where("tenant_id = ?", tenantID).Exec(ctx); err != nil {
				return err
			}
		}
		if err := insert(ctx, tx, d.Users); err != nil {
			return err
		}
		if err := insert(ctx, tx, d.Roles); err != nil {
			return err
		}
		if err := insert(ctx, tx, d.Devices); err != nil {
			return err
		}
		if err := insert(ctx, tx, d.Reviews); err != nil {
			return err
		}
		if err := insert(ctx, tx, d.Decisions); err != nil {
			return err
		}
		if err := insert(ctx, tx, d.Policies); err != nil {
			return err
		}
		if err := insert(ctx, tx, d.GlobalAdmins); err != nil {
			return err
		}
		if err := insert(ctx, tx, d.RiskyUsers); err != nil {
			return err
		}
		if err := insert(ctx, tx, d.Credentials); err != nil {
			return err
		}
		return snapshot(ctx, tx, tenantID, at, d)
	})
}

func insert[T any](ctx context.Context, tx bun.Tx, rows []T) error {
	for start := 0; start < len(rows); start += insertBatch {
		batch := rows[start:min(start+insertBatch, len(rows))]
		if _, err := tx.NewInsert().Model(&batch).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// snapshot records the tenant's figures for at's day, counted in the
// database from the rows just stored (among them the access reviews'
// findings and those overdue at at), with d's Conditional Access posture,
// Global Administrators, risky users and applications' credentials; a
// second sync the same day replaces the first's.
func snapshot(ctx context.Context, tx bun.Tx, tenantID string, at time.Time, d *Directory) error {
	p := posture(d.Policies, d.SecurityDefaults)
	admins, eligible := int64(len(d.GlobalAdmins)), int64(0)
	for _, a := range d.GlobalAdmins {
		if !a.Active {
			eligible++
		}
	}
	risky, highRisk := riskCounts(d.RiskyUsers)
	var members, memberMFA int64
	expired, expiring := credentialCounts(d.Credentials, at)
	day := at.UTC().Format(time.DateOnly)
	if _, err := tx.NewDelete().Model((*Snapshot)(nil)).Where("tenant_id = ? AND day = ?", tenantID, day).Exec(ctx); err != nil {
		return err
	}
	snap := Snapshot{TenantID: tenantID, Day: day, SyncedAt: at.UTC(), SecurityDefaults: &p.SecurityDefaults,
		CAMFAAllUsers: p.MFAAllUsers, CAMFAAdmins: p.MFAAdmins, CALegacyAuth: p.LegacyAuthBlocked,
		GlobalAdmins: &admins, GlobalAdminsEligible: &eligible, RiskyUsers: &risky, HighRiskUsers: &highRisk,
		ExpiredCredentials: &expired, ExpiringCredentials: &expiring}
	err := tx.NewSelect().Model((*User)(nil)).
		ColumnExpr("COUNT(*) AS total_users").
		ColumnExpr("COALESCE(SUM(CASE WHEN is_admin THEN 1 ELSE 0 END), 0) AS admin_users").
		ColumnExpr("COALESCE(SUM(CASE WHEN mfa_registered THEN 1 ELSE 0 END), 0) AS mfa_users").
		ColumnExpr("COALESCE(SUM(CASE WHEN is_admin AND mfa_registered THEN 1 ELSE 0 END), 0) AS admin_mfa_users").
		ColumnExpr("COALESCE(SUM(CASE WHEN user_type = 'Guest' THEN 1 ELSE 0 END), 0) AS guest_users").
		ColumnExpr("COALESCE(SUM(CASE WHEN account_enabled THEN 0 ELSE 1 END), 0) AS disabled_users").
		ColumnExpr("COALESCE(SUM(CASE WHEN account_enabled AND user_type <> 'Guest' THEN 1 ELSE 0 END), 0) AS member_users").
		ColumnExpr("COALESCE(SUM(CASE WHEN account_enabled AND user_type <> 'Guest' AND mfa_registered THEN 1 ELSE 0 END), 0) AS member_mfa_users").
		Where("tenant_id = ?", tenantID).
		Scan(ctx, &snap.TotalUsers, &snap.AdminUsers, &snap.MFAUsers, &snap.AdminMFAUsers, &snap.GuestUsers, &snap.DisabledUsers, &members, &memberMFA)
	if err != nil {
		return err
	}
	snap.MemberUsers, snap.MemberMFAUsers = &members, &memberMFA
	err = tx.NewSelect().Model((*Device)(nil)).
		ColumnExpr("COUNT(*) AS devices").
		ColumnExpr("COALESCE(SUM(CASE WHEN compliance_state = 'compliant' THEN 1 ELSE 0 END), 0) AS compliant_devices").
		Where("tenant_id = ?", tenantID).
		Scan(ctx, &snap.Devices, &snap.CompliantDevices)
	if err != nil {
		return err
	}
	findings, err := selectReviewFindings(tx, []string{tenantID}).Count(ctx)
	if err != nil {
		return err
	}
	overdue, err := whereOverdue(tx.NewSelect().TableExpr("identity_access_reviews AS a").Where("a.tenant_id = ?", tenantID), at).Count(ctx)
	if err != nil {
		return err
	}
	nFindings, nOverdue := int64(findings), int64(overdue)
	snap.AccessReviewFindings, snap.OverdueAccessReviews = &nFindings, &nOverdue
	_, err = tx.NewInsert().Model(&snap).Exec(ctx)
	return err
}
