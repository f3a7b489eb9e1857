// Package tenancy keeps the tenant directory, the users who sign in and
// which tenants each user may see. Tenant scope is decided here once, so
// host routes and plugins apply the same rule.
//
// [Routes] serve the directory over HTTP: the tenants a caller may see, and
// an admin's changes to tenants and their members.
package tenancy

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Tenant is one brand's cloud tenant as Steward manages it.
type Tenant struct {
	bun.BaseModel     `bun:"table:tenants"`
	ID                string    `bun:"id,pk" json:"id"`
	Name              string    `bun:"name" json:"name"`
	Description       string    `bun:"description" json:"description"`
	DirectoryTenantID string    `bun:"directory_tenant_id" json:"directory_tenant_id"`
	SubscriptionID    string    `bun:"subscription_id" json:"subscription_id"`
	UseDelegation     bool      `bun:"use_delegation" json:"use_delegation"`
	BillingAccountID  *string   `bun:"billing_account_id" json:"billing_account_id"`
	BrandColor        string    `bun:"brand_color" json:"brand_color" doc:"#rrggbb accenting the web pages scoped to the tenant; empty for the default"`
	BrandID           *string   `bun:"brand_id" json:"brand_id" doc:"The brand the tenant is in (/api/v1/brands); null for none"`
	AccessGroups      []string  `bun:"access_groups,type:text" json:"-"`
	IsActive          bool      `bun:"is_active" json:"is_active"`
	CreatedAt         time.Time `bun:"created_at" json:"created_at"`
	UpdatedAt         time.Time `bun:"updated_at" json:"-"`
}

// User is a person who signed in. The pair (DirectoryTenantID, Subject)
// is who the user is; the e-mail address is an attribute that another
// directory may share and that may change.
type User struct {
	bun.BaseModel `bun:"table:users"`
	ID            string `bun:"id,pk" json:"id"`
	// DirectoryTenantID is the directory the user belongs to: the ID
	// token's tid (its issuer for a provider without tenants), or
	// LocalDirectory.
	DirectoryTenantID string `bun:"directory_tenant_id" json:"directory_tenant_id"`
	// Subject is the user's immutable id in its directory: the ID token's
	// oid (sub without one).
	Subject     string     `bun:"subject" json:"-"`
	Email       string     `bun:"email" json:"email"`
	Name        string     `bun:"name" json:"name"`
	IsAdmin     bool       `bun:"is_admin" json:"is_admin"`
	Roles       []string   `bun:"roles,type:text" json:"roles"`
	Groups      []string   `bun:"groups,type:text" json:"groups"`
	CreatedAt   time.Time  `bun:"created_at" json:"created_at"`
	LastLoginAt *time.Time `bun:"last_login_at" json:"last_login_at"`
}

// LocalDirectory is the directory of accounts Steward signs in itself (the
// development login), whose subject is the lower-cased user name. No
// identity provider's directory is empty: a token names its tid or issuer.
const LocalDirectory = ""

// ErrNotFound is returned for an unknown tenant or user.
var ErrNotFound = errors.New("not found")

// ErrDuplicate is returned when a tenant's directory id is already managed.
var ErrDuplicate = errors.New("duplicate")

// Store reads and writes tenants, users and memberships.
type Store struct {
	db      *bun.DB
	changed func(context.Context)
	// active keeps the list of active tenants, which every page, scope
	// and plugin's tenant list starts from, when CacheActive set it.
	active ActiveCache
}

// ActiveCache keeps the list of active tenants between the writes that
// change it (the host's is an authcache.Cache dropped by the changes
// OnChange announces).
type ActiveCache interface {
	Load(key struct{}, load func() ([]Tenant, error)) ([]Tenant, error)
}

// CacheActive has the list of active tenants kept in c. It is set once,
// before the Store is used.
func (s *Store) CacheActive(c ActiveCache) { s.active = c }

// New returns a Store on db.
func New(db *bun.DB) *Store { return &Store{db: db, changed: func(context.Context) {}} }

// OnChange has fn called after every committed write to tenants, users or
// memberships, so that what is cached of tenant scopes can be dropped. It
// is set once, before the Store is used.
func (s *Store) OnChange(fn func(context.Context)) { s.changed = fn }

// Tenants lists tenants ordered by name; ids narrows the list when given.
// The list is the caller's own, but the tenants' AccessGroups may be
// shared with other callers' and must not be changed.
func (s *Store) Tenants(ctx context.Context, ids []string, includeInactive bool) ([]Tenant, error) {
	if s.active != nil && !includeInactive {
		all, err := s.active.Load(struct{}{}, func() ([]Tenant, error) { return s.read(ctx, nil, false) })
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return slices.Clone(all), nil
		}
		out := []Tenant{}
		for _, t := range all {
			if slices.Contains(ids, t.ID) {
				out = append(out, t)
			}
		}
		return out, nil
	}
	return s.read(ctx, ids, includeInactive)
}

func (s *Store) read(ctx context.Context, ids []string, includeInactive bool) ([]Tenant, error) {
	out := []Tenant{}
	q := s.db.NewSelect().Model(&out).Order("name", "id")
	if len(ids) > 0 {
		q = q.Where("id IN (?)", bun.List(ids))
	}
	if !includeInactive {
		q = q.Where("is_active = ?", true)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// Tenant returns one tenant.
func (s *Store) Tenant(ctx context.Context, id string) (Tenant, error) {
	var t Tenant
	err := s.db.NewSelect().Model(&t).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return t, ErrNotFound
	}
	return t, err
}

// ManagesDirectory reports whether an active tenant has the directory id
// dir (compared without regard to case, as directory ids are GUIDs).
func (s *Store) ManagesDirectory(ctx context.Context, dir string) (bool, error) {
	return s.db.NewSelect().Model((*Tenant)(nil)).Where("lower(directory_tenant_id) = lower(?)", dir).Where("is_active = ?", true).Exists(ctx)
}

// CreateTenant stores a new tenant; a directory id already managed is
// ErrDuplicate.
func (s *Store) CreateTenant(ctx context.Context, t *Tenant) error {
	if t.ID == "" {
		t.ID = uuid.NewString()
	}
	now := time.Now().UTC()
	t.CreatedAt, t.UpdatedAt = now, now
	if t.AccessGroups == nil {
		t.AccessGroups = []string{}
	}
	_, err := s.db.NewInsert().Model(t).Exec(ctx)
	if err != nil && isUniqueViolation(err) {
		return fmt.Errorf("%w: directory tenant %s is already managed", ErrDuplicate, t.DirectoryTenantID)
	}
	if err != nil {
		return err
	}
	s.changed(ctx)
	return nil
}

// UpsertUser creates the user on first sign-in, or refreshes its e-mail
// address, name, roles, groups and admin flag from the identity provider.
// The user is found by (DirectoryTenantID, Subject) only, never by e-mail
// address; u gets the stored id and creation time.
func (s *Store) UpsertUser(ctx context.Context, u *User) error {
	if u.Subject == "" {
		return errors.New("tenancy: a user needs its subject at the identity provider")
	}
	now := time.Now().UTC()
	u.LastLoginAt, u.CreatedAt = &now, now
	u.Email = strings.ToLower(u.Email)
	if u.ID == "" {
		u.ID = uuid.NewString()
	}
	if u.Roles == nil {
		u.Roles = []string{}
	}
	if u.Groups == nil {
		u.Groups = []string{}
	}
	// One statement, so two first sign-ins of one user at once make one row.
	// It writes only a new user or one whose identity changed: that is a
	// change to announce, which drops every replica's cached scopes. A
	// sign-in that changes nothing else only records its time below, so
	// that sign-ins do not empty the caches each request relies on.
	res, err := s.db.NewInsert().Model(u).
		On("CONFLICT (directory_tenant_id, subject) DO UPDATE").
		Set("email = EXCLUDED.email").Set("name = EXCLUDED.name").Set("is_admin = EXCLUDED.is_admin").
		Set("roles = EXCLUDED.roles").Set(`"groups" = EXCLUDED."groups"`).Set("last_login_at = EXCLUDED.last_login_at").
		Where(`(?TableAlias.email, ?TableAlias.name, ?TableAlias.is_admin, ?TableAlias.roles, ?TableAlias."groups") IS DISTINCT FROM (EXCLUDED.email, EXCLUDED.name, EXCLUDED.is_admin, EXCLUDED.roles, EXCLUDED."groups")`).
		Returning("id, created_at").Exec(ctx)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		s.changed(ctx)
		return err
	}
	_, err = s.db.NewUpdate().Model(u).Set("last_login_at = ?", u.LastLoginAt).
		Where("directory_tenant_id = ? AND subject = ?", u.DirectoryTenantID, u.Subject).
		Returning("id, created_at").Exec(ctx)
	return err
}

// User returns one user.
func (s *Store) User(ctx context.Context, id string) (User, error) {
	var u User
	err := s.db.NewSelect().Model(&u).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return u, ErrNotFound
	}
	return u, err
}

// UserNames returns, for each of ids that is a user, how to name it to a
// person: its name, or its e-mail address when it has none. Other ids
// (an API key's "apikey:<id>", a user since removed) are left out.
func (s *Store) UserNames(ctx context.Context, ids []string) (map[string]string, error) {
	names := make(map[string]string, len(ids))
	if len(ids) == 0 {
		return names, nil
	}
	var users []User
	if err := s.db.NewSelect().Model(&users).Column("id", "name", "email").Where("id IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, err
	}
	for _, u := range users {
		names[u.ID] = cmp.Or(u.Name, u.Email)
	}
	return names, nil
}

// AddMember lets a user see a tenant (an admin's assignment).
func (s *Store) AddMember(ctx context.Context, tenantID, userID string) error {
	_, err := s.db.NewInsert().Model(&member{TenantID: tenantID, UserID: userID, CreatedAt: time.Now().UTC()}).
		On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return err
	}
	s.changed(ctx)
	return nil
}

// TenantPatch names the fields an update changes; a nil field is left as
// it is, so two admins editing different fields do not undo each other.
type TenantPatch struct {
	Name              *string
	Description       *string
	DirectoryTenantID *string
	SubscriptionID    *string
	// BillingAccountID set to "" clears the billing account.
	BillingAccountID *string
	AccessGroups     *[]string
	UseDelegation    *bool
	IsActive         *bool
	// BrandColor set to "" restores the default colour.
	BrandColor *string
}

// UpdateTenant applies p to the tenant and returns it as stored. An unknown
// id is ErrNotFound; a directory id another tenant has is ErrDuplicate.
func (s *Store) UpdateTenant(ctx context.Context, id string, p TenantPatch) (Tenant, error) {
	t, err := s.Tenant(ctx, id)
	if err != nil {
		return t, err
	}
	cols := []string{"updated_at"}
	set := func(col string, apply func()) {
		apply()
		cols = append(cols, col)
	}
	if p.Name != nil {
		set("name", func() { t.Name = *p.Name })
	}
	if p.Description != nil {
		set("description", func() { t.Description = *p.Description })
	}
	if p.DirectoryTenantID != nil {
		set("directory_tenant_id", func() { t.DirectoryTenantID = *p.DirectoryTenantID })
	}
	if p.SubscriptionID != nil {
		set("subscription_id", func() { t.SubscriptionID = *p.SubscriptionID })
	}
	if p.BillingAccountID != nil {
		set("billing_account_id", func() {
			t.BillingAccountID = nil
			if *p.BillingAccountID != "" {
				t.BillingAccountID = p.BillingAccountID
			}
		})
	}
	if p.AccessGroups != nil {
		set("access_groups", func() {
			t.AccessGroups = *p.AccessGroups
			if t.AccessGroups == nil {
				t.AccessGroups = []string{}
			}
		})
	}
	if p.UseDelegation != nil {
		set("use_delegation", func() { t.UseDelegation = *p.UseDelegation })
	}
	if p.BrandColor != nil {
		set("brand_color", func() { t.BrandColor = *p.BrandColor })
	}
	if p.IsActive != nil {
		set("is_active", func() { t.IsActive = *p.IsActive })
	}
	t.UpdatedAt = time.Now().UTC()
	// Only the named columns are written, so a concurrent update of other
	// fields survives.
	_, err = s.db.NewUpdate().Model(&t).Column(cols...).WherePK().Exec(ctx)
	if err != nil && isUniqueViolation(err) {
		return t, fmt.Errorf("%w: directory tenant %s is already managed", ErrDuplicate, t.DirectoryTenantID)
	}
	if err != nil {
		return t, err
	}
	s.changed(ctx)
	return t, nil
}

// DeactivateTenant marks a tenant inactive: it leaves every scope and list
// at once, while its record, data and memberships stay for the audit trail
// and for a later reactivation. An unknown id is ErrNotFound.
func (s *Store) DeactivateTenant(ctx context.Context, id string) error {
	res, err := s.db.NewUpdate().Model((*Tenant)(nil)).Set("is_active = ?", false).Set("updated_at = ?", time.Now().UTC()).
		Where("id = ?", id).Exec(ctx)
	if err != nil {
		return err
	}
	return s.changedUnless(ctx, res)
}

// Member is a user assigned to a tenant.
type Member struct {
	UserID string `bun:"user_id" json:"user_id"`
	// DirectoryTenantID tells apart users of one address in two directories.
	DirectoryTenantID string    `bun:"directory_tenant_id" json:"directory_tenant_id"`
	Email             string    `bun:"email" json:"email"`
	Name              string    `bun:"name" json:"name"`
	AssignedAt        time.Time `bun:"assigned_at" json:"assigned_at"`
}

// Members lists the users assigned to a tenant, by email and directory.
// Users who see the tenant only through an access group are not assigned
// and not listed.
func (s *Store) Members(ctx context.Context, tenantID string) ([]Member, error) {
	out := []Member{}
	err := s.membersQuery(tenantID).Order("u.email", "u.directory_tenant_id", "u.id").Scan(ctx, &out)
	return out, err
}

// Member returns one assignment; ErrNotFound when the user is not assigned.
func (s *Store) Member(ctx context.Context, tenantID, userID string) (Member, error) {
	var out []Member
	if err := s.membersQuery(tenantID).Where("m.user_id = ?", userID).Scan(ctx, &out); err != nil {
		return Member{}, err
	}
	if len(out) == 0 {
		return Member{}, ErrNotFound
	}
	return out[0], nil
}

func (s *Store) membersQuery(tenantID string) *bun.SelectQuery {
	return s.db.NewSelect().TableExpr("tenant_members AS m").Join("JOIN users AS u ON u.id = m.user_id").
		ColumnExpr("u.id AS user_id, u.directory_tenant_id AS directory_tenant_id, u.email AS email, u.name AS name, m.created_at AS assigned_at").
		Where("m.tenant_id = ?", tenantID)
}

// RemoveMember withdraws an assignment; ErrNotFound when there was none.
// Access through the tenant's access groups is unaffected.
func (s *Store) RemoveMember(ctx context.Context, tenantID, userID string) error {
	res, err := s.db.NewDelete().Model((*member)(nil)).Where("tenant_id = ? AND user_id = ?", tenantID, userID).Exec(ctx)
	if err != nil {
		return err
	}
	return s.changedUnless(ctx, res)
}

// changedUnless reports a write that touched no row as ErrNotFound and
// any other as a change.
func (s *Store) changedUnless(ctx context.Context, res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	s.changed(ctx)
	return nil
}

type member struct {
	bun.BaseModel `bun:"table:tenant_members"`
	TenantID      string    `bun:"tenant_id,pk"`
	UserID        string    `bun:"user_id,pk"`
	CreatedAt     time.Time `bun:"created_at"`
}

// Scope returns the ids of the active tenants a user may see: every tenant
// for an admin; for anyone else the tenants assigned to it plus those whose
// access groups it belongs to.
func (s *Store) Scope(ctx context.Context, userID string, isAdmin bool, groups []string) ([]string, error) {
	tenants, err := s.Tenants(ctx, nil, false)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(tenants))
	if isAdmin {
		for _, t := range tenants {
			ids = append(ids, t.ID)
		}
		return ids, nil
	}
	var assigned []string
	if userID != "" {
		if err := s.db.NewSelect().Model((*member)(nil)).Column("tenant_id").Where("user_id = ?", userID).Scan(ctx, &assigned); err != nil {
			return nil, err
		}
	}
	for _, t := range tenants {
		if slices.Contains(assigned, t.ID) || slices.ContainsFunc(t.AccessGroups, func(g string) bool { return slices.Contains(groups, g) }) {
			ids = append(ids, t.ID)
		}
	}
	return ids, nil
}

func isUniqueViolation(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "unique") || strings.Contains(msg, "duplicate key")
}
