package tenancy_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/authcache"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/migrations"
)

// eachDialect runs fn against a freshly migrated database of every
// dialect, with a Store that reads every list from the database and with
// one that keeps the active tenants as the host's does (CacheActive),
// dropped by the changes the Store announces.
func eachDialect(t *testing.T, fn func(t *testing.T, db *bun.DB, s *tenancy.Store)) {
	for _, dialect := range storetest.Dialects() {
		for _, cached := range []bool{false, true} {
			name := dialect
			if cached {
				name += "/cached"
			}
			t.Run(name, func(t *testing.T) {
				db := storetest.Open(t, dialect)
				if _, err := store.Migrate(context.Background(), db, migrations.FS, migrations.Table); err != nil {
					t.Fatalf("migrate: %v", err)
				}
				s := tenancy.New(db)
				if cached {
					changes := authcache.New(nil, "", hclog.NewNullLogger())
					s.OnChange(changes.Changed)
					s.CacheActive(authcache.NewCache[struct{}, []tenancy.Tenant](changes, 1))
				}
				fn(t, db, s)
			})
		}
	}
}

func createTenant(t *testing.T, s *tenancy.Store, tn tenancy.Tenant) tenancy.Tenant {
	t.Helper()
	if err := s.CreateTenant(context.Background(), &tn); err != nil {
		t.Fatalf("create tenant %s: %v", tn.Name, err)
	}
	return tn
}

// upsertUser signs u in; a user given without a subject gets one made from
// its address, for tests that are not about identity.
func upsertUser(t *testing.T, s *tenancy.Store, u tenancy.User) tenancy.User {
	t.Helper()
	if u.Subject == "" {
		u.DirectoryTenantID, u.Subject = "dir-test", "oid:"+u.Email
	}
	if err := s.UpsertUser(context.Background(), &u); err != nil {
		t.Fatalf("upsert user %s: %v", u.Email, err)
	}
	return u
}

// closeTo compares times as stored: the database keeps microseconds.
func closeTo(a, b time.Time) bool { return a.Sub(b).Abs() < time.Millisecond }

func ids(ts []tenancy.Tenant) []string {
	out := make([]string, 0, len(ts))
	for _, tn := range ts {
		out = append(out, tn.ID)
	}
	return out
}

func TestCreateTenant(t *testing.T) {
	eachDialect(t, func(t *testing.T, _ *bun.DB, s *tenancy.Store) {
		ctx := context.Background()
		billing := "billing-1"
		before := time.Now()
		created := createTenant(t, s, tenancy.Tenant{
			Name: "Contoso", Description: "Main brand", DirectoryTenantID: "dir-1", SubscriptionID: "sub-1",
			UseDelegation: true, BillingAccountID: &billing, AccessGroups: []string{"g-contoso", "g-ops"}, IsActive: true,
		})
		if created.ID == "" {
			t.Fatal("CreateTenant assigned no id")
		}
		if created.CreatedAt.Before(before.Add(-time.Second)) || !created.CreatedAt.Equal(created.UpdatedAt) {
			t.Errorf("created_at %v, updated_at %v: want both set to now", created.CreatedAt, created.UpdatedAt)
		}

		got, err := s.Tenant(ctx, created.ID)
		if err != nil {
			t.Fatalf("Tenant: %v", err)
		}
		if got.ID != created.ID || got.Name != "Contoso" || got.Description != "Main brand" || got.DirectoryTenantID != "dir-1" ||
			got.SubscriptionID != "sub-1" || !got.UseDelegation || got.BillingAccountID == nil || *got.BillingAccountID != billing ||
			!slices.Equal(got.AccessGroups, []string{"g-contoso", "g-ops"}) || !got.IsActive || !closeTo(got.CreatedAt, created.CreatedAt) {
			t.Errorf("Tenant = %+v, want what was created: %+v", got, created)
		}

		// A caller-chosen id is kept, and no access groups read back as none.
		plain := createTenant(t, s, tenancy.Tenant{ID: "fixed-id", Name: "Fabrikam", DirectoryTenantID: "dir-2"})
		got, err = s.Tenant(ctx, "fixed-id")
		if err != nil {
			t.Fatalf("Tenant: %v", err)
		}
		if plain.ID != "fixed-id" || got.AccessGroups == nil || len(got.AccessGroups) != 0 || got.BillingAccountID != nil || got.IsActive {
			t.Errorf("Tenant = %+v, want id fixed-id, empty access groups, no billing account, inactive", got)
		}

		dup := tenancy.Tenant{Name: "Contoso again", DirectoryTenantID: "dir-1", IsActive: true}
		err = s.CreateTenant(ctx, &dup)
		if !errors.Is(err, tenancy.ErrDuplicate) {
			t.Fatalf("CreateTenant with a managed directory id: err = %v, want ErrDuplicate", err)
		}
		all, err := s.Tenants(ctx, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 2 {
			t.Errorf("after a refused duplicate there are %d tenants, want 2", len(all))
		}
	})
}

func TestTenants(t *testing.T) {
	eachDialect(t, func(t *testing.T, _ *bun.DB, s *tenancy.Store) {
		ctx := context.Background()
		// Created out of name order; the two "Same" tenants tie on name.
		charlie := createTenant(t, s, tenancy.Tenant{Name: "Charlie", DirectoryTenantID: "d-c", IsActive: true})
		alpha := createTenant(t, s, tenancy.Tenant{Name: "Alpha", DirectoryTenantID: "d-a", IsActive: true})
		sameB := createTenant(t, s, tenancy.Tenant{ID: "same-b", Name: "Same", DirectoryTenantID: "d-sb", IsActive: true})
		bravo := createTenant(t, s, tenancy.Tenant{Name: "Bravo", DirectoryTenantID: "d-b", IsActive: false})
		sameA := createTenant(t, s, tenancy.Tenant{ID: "same-a", Name: "Same", DirectoryTenantID: "d-sa", IsActive: true})

		tests := []struct {
			name            string
			ids             []string
			includeInactive bool
			want            []string
		}{
			{name: "active, by name then id", want: []string{alpha.ID, charlie.ID, sameA.ID, sameB.ID}},
			{name: "with inactive", includeInactive: true, want: []string{alpha.ID, bravo.ID, charlie.ID, sameA.ID, sameB.ID}},
			{name: "ids filter", ids: []string{sameB.ID, alpha.ID}, want: []string{alpha.ID, sameB.ID}},
			{name: "ids filter drops inactive", ids: []string{bravo.ID, charlie.ID}, want: []string{charlie.ID}},
			{name: "ids filter with inactive", ids: []string{bravo.ID, charlie.ID}, includeInactive: true, want: []string{bravo.ID, charlie.ID}},
			{name: "unknown ids", ids: []string{"nope"}, want: []string{}},
			{name: "only an inactive id", ids: []string{bravo.ID}, want: []string{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.Tenants(ctx, tt.ids, tt.includeInactive)
				if err != nil {
					t.Fatalf("Tenants: %v", err)
				}
				if got == nil {
					t.Error("Tenants returned nil, want a (possibly empty) list")
				}
				if !slices.Equal(ids(got), tt.want) {
					t.Errorf("Tenants = %v, want %v", ids(got), tt.want)
				}
			})
		}
	})
}

func TestTenantNotFound(t *testing.T) {
	eachDialect(t, func(t *testing.T, _ *bun.DB, s *tenancy.Store) {
		if _, err := s.Tenant(context.Background(), "missing"); !errors.Is(err, tenancy.ErrNotFound) {
			t.Errorf("Tenant(missing): err = %v, want ErrNotFound", err)
		}
		if _, err := s.User(context.Background(), "missing"); !errors.Is(err, tenancy.ErrNotFound) {
			t.Errorf("User(missing): err = %v, want ErrNotFound", err)
		}
	})
}

func TestUpsertUser(t *testing.T) {
	eachDialect(t, func(t *testing.T, _ *bun.DB, s *tenancy.Store) {
		ctx := context.Background()
		first := upsertUser(t, s, tenancy.User{DirectoryTenantID: "dir-1", Subject: "oid-ada", Email: "Ada.Lovelace@Example.COM", Name: "Ada",
			Roles: []string{"reader"}, Groups: []string{"g-1", "g-2"}})
		if first.ID == "" || first.Email != "ada.lovelace@example.com" || first.LastLoginAt == nil {
			t.Fatalf("first sign-in = %+v, want an id, the lower-cased email and a login time", first)
		}
		got, err := s.User(ctx, first.ID)
		if err != nil {
			t.Fatalf("User: %v", err)
		}
		if got.DirectoryTenantID != "dir-1" || got.Subject != "oid-ada" || got.Email != "ada.lovelace@example.com" || got.Name != "Ada" || got.IsAdmin ||
			!slices.Equal(got.Roles, []string{"reader"}) || !slices.Equal(got.Groups, []string{"g-1", "g-2"}) ||
			!closeTo(got.CreatedAt, first.CreatedAt) || got.LastLoginAt == nil || !closeTo(*got.LastLoginAt, *first.LastLoginAt) {
			t.Errorf("stored user = %+v, want %+v", got, first)
		}

		time.Sleep(5 * time.Millisecond) // so the second login time differs
		// The identity provider's view changed, the address included; the
		// caller's id is not the stored one.
		second := upsertUser(t, s, tenancy.User{ID: "other-id", DirectoryTenantID: "dir-1", Subject: "oid-ada", Email: "Ada@Example.com",
			Name: "Ada Lovelace", IsAdmin: true, Roles: []string{"admin"}})
		if second.ID != first.ID || !closeTo(second.CreatedAt, got.CreatedAt) {
			t.Errorf("second sign-in: id %s created %v, want the first's %s %v", second.ID, second.CreatedAt, first.ID, got.CreatedAt)
		}
		got, err = s.User(ctx, first.ID)
		if err != nil {
			t.Fatalf("User: %v", err)
		}
		if got.Email != "ada@example.com" || got.Name != "Ada Lovelace" || !got.IsAdmin ||
			!slices.Equal(got.Roles, []string{"admin"}) || got.Groups == nil || len(got.Groups) != 0 ||
			!closeTo(got.CreatedAt, first.CreatedAt) || got.LastLoginAt == nil || !got.LastLoginAt.After(*first.LastLoginAt) {
			t.Errorf("refreshed user = %+v, want new address and name, admin, roles [admin], no groups, same created_at, later login", got)
		}
		if _, err := s.User(ctx, "other-id"); !errors.Is(err, tenancy.ErrNotFound) {
			t.Errorf("a second user was created under the caller's id: err = %v", err)
		}

		other := upsertUser(t, s, tenancy.User{DirectoryTenantID: "dir-1", Subject: "oid-grace", Email: "grace@example.com", Name: "Grace"})
		if other.ID == first.ID {
			t.Error("a different subject got the same user id")
		}

		if err := s.UpsertUser(ctx, &tenancy.User{DirectoryTenantID: "dir-1", Email: "nobody@example.com"}); err == nil {
			t.Error("a user without a subject was stored")
		}
	})
}

// TestUserNames: a user is named by its name, or its address without one;
// ids of no user are left out.
func TestUserNames(t *testing.T) {
	eachDialect(t, func(t *testing.T, _ *bun.DB, s *tenancy.Store) {
		ada := upsertUser(t, s, tenancy.User{DirectoryTenantID: "dir-1", Subject: "oid-ada", Email: "ada@example.com", Name: "Ada Lovelace"})
		grace := upsertUser(t, s, tenancy.User{DirectoryTenantID: "dir-1", Subject: "oid-grace", Email: "grace@example.com"})
		names, err := s.UserNames(context.Background(), []string{ada.ID, grace.ID, "apikey:k-1", "no-such-user"})
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 2 || names[ada.ID] != "Ada Lovelace" || names[grace.ID] != "grace@example.com" {
			t.Errorf("names = %v", names)
		}
		if names, err := s.UserNames(context.Background(), nil); err != nil || len(names) != 0 {
			t.Errorf("no ids: %v, %v", names, err)
		}
	})
}

// TestUpsertUserIgnoresEmail: an account of another directory, or another
// account of the same directory, with a user's address is another user,
// with nothing of the first one's.
func TestUpsertUserIgnoresEmail(t *testing.T) {
	eachDialect(t, func(t *testing.T, _ *bun.DB, s *tenancy.Store) {
		ctx := context.Background()
		tn := createTenant(t, s, tenancy.Tenant{Name: "Contoso", DirectoryTenantID: "dir-1", IsActive: true})
		ada := upsertUser(t, s, tenancy.User{DirectoryTenantID: "dir-1", Subject: "oid-1", Email: "ada@example.com", Name: "Ada"})
		if err := s.AddMember(ctx, tn.ID, ada.ID); err != nil {
			t.Fatal(err)
		}
		for _, impostor := range []tenancy.User{
			{DirectoryTenantID: "dir-2", Subject: "oid-1", Email: "ADA@example.com", Name: "Not Ada"},
			{DirectoryTenantID: "dir-1", Subject: "oid-2", Email: "ada@example.com", Name: "Not Ada either"},
			{DirectoryTenantID: tenancy.LocalDirectory, Subject: "ada@example.com", Email: "ada@example.com"},
		} {
			got := upsertUser(t, s, impostor)
			if got.ID == ada.ID {
				t.Fatalf("%s/%s took over %s's user id", impostor.DirectoryTenantID, impostor.Subject, ada.Email)
			}
			scope, err := s.Scope(ctx, got.ID, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(scope) != 0 {
				t.Errorf("%s/%s inherited the tenants %v", impostor.DirectoryTenantID, impostor.Subject, scope)
			}
		}
		stored, err := s.User(ctx, ada.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Name != "Ada" || stored.DirectoryTenantID != "dir-1" || stored.Subject != "oid-1" {
			t.Errorf("the first user changed: %+v", stored)
		}
		if m, err := s.Members(ctx, tn.ID); err != nil || len(m) != 1 || m[0].UserID != ada.ID {
			t.Errorf("members = %+v, %v; want only %s", m, err, ada.ID)
		}
	})
}

// TestUpsertUserConcurrentFirstSignIn: two first sign-ins of one user at
// once make one user.
func TestUpsertUserConcurrentFirstSignIn(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB, s *tenancy.Store) {
		ctx := context.Background()
		var wg sync.WaitGroup
		ids := make([]string, 4)
		errs := make([]error, len(ids))
		for i := range ids {
			wg.Go(func() {
				u := tenancy.User{DirectoryTenantID: "dir-1", Subject: "oid-1", Email: "ada@example.com"}
				errs[i] = s.UpsertUser(ctx, &u)
				ids[i] = u.ID
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("sign-in %d: %v", i, err)
			}
			if ids[i] != ids[0] {
				t.Errorf("sign-in %d got id %s, sign-in 0 %s", i, ids[i], ids[0])
			}
		}
		if n, err := db.NewSelect().Table("users").Count(ctx); err != nil || n != 1 {
			t.Errorf("%d users, %v; want 1", n, err)
		}
	})
}

func TestAddMember(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB, s *tenancy.Store) {
		ctx := context.Background()
		tn := createTenant(t, s, tenancy.Tenant{Name: "Contoso", DirectoryTenantID: "dir-1", IsActive: true})
		u := upsertUser(t, s, tenancy.User{Email: "user@example.com"})
		for i := range 2 {
			if err := s.AddMember(ctx, tn.ID, u.ID); err != nil {
				t.Fatalf("AddMember #%d: %v", i+1, err)
			}
		}
		n, err := db.NewSelect().Table("tenant_members").Where("tenant_id = ? AND user_id = ?", tn.ID, u.ID).Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%d membership rows, want 1", n)
		}
		scope, err := s.Scope(ctx, u.ID, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(scope, []string{tn.ID}) {
			t.Errorf("Scope = %v, want [%s]", scope, tn.ID)
		}

		if err := s.AddMember(ctx, "no-such-tenant", u.ID); err == nil {
			t.Error("AddMember to an unknown tenant succeeded")
		}
		if err := s.AddMember(ctx, tn.ID, "no-such-user"); err == nil {
			t.Error("AddMember of an unknown user succeeded")
		}
	})
}

func TestScope(t *testing.T) {
	eachDialect(t, func(t *testing.T, _ *bun.DB, s *tenancy.Store) {
		ctx := context.Background()
		alpha := createTenant(t, s, tenancy.Tenant{Name: "Alpha", DirectoryTenantID: "d-a", AccessGroups: []string{"g-alpha"}, IsActive: true})
		bravo := createTenant(t, s, tenancy.Tenant{Name: "Bravo", DirectoryTenantID: "d-b", AccessGroups: []string{"g-bravo", "g-shared"}, IsActive: true})
		charlie := createTenant(t, s, tenancy.Tenant{Name: "Charlie", DirectoryTenantID: "d-c", IsActive: true})
		delta := createTenant(t, s, tenancy.Tenant{Name: "Delta", DirectoryTenantID: "d-d", AccessGroups: []string{"g-alpha"}, IsActive: false})
		echo := createTenant(t, s, tenancy.Tenant{Name: "Echo", DirectoryTenantID: "d-e", AccessGroups: []string{"g-echo"}, IsActive: true})

		member := upsertUser(t, s, tenancy.User{Email: "member@example.com"})
		lonely := upsertUser(t, s, tenancy.User{Email: "lonely@example.com"})
		for _, tid := range []string{charlie.ID, delta.ID} {
			if err := s.AddMember(ctx, tid, member.ID); err != nil {
				t.Fatal(err)
			}
		}

		tests := []struct {
			name    string
			userID  string
			isAdmin bool
			groups  []string
			want    []string
		}{
			{name: "admin sees every active tenant", userID: lonely.ID, isAdmin: true, want: []string{alpha.ID, bravo.ID, charlie.ID, echo.ID}},
			{name: "admin without a user id", isAdmin: true, want: []string{alpha.ID, bravo.ID, charlie.ID, echo.ID}},
			{name: "groups plus assignments, never inactive", userID: member.ID, groups: []string{"g-alpha"}, want: []string{alpha.ID, charlie.ID}},
			{name: "assignments only", userID: member.ID, want: []string{charlie.ID}},
			{name: "one of a tenant's several groups", userID: lonely.ID, groups: []string{"g-shared"}, want: []string{bravo.ID}},
			{name: "several groups", userID: lonely.ID, groups: []string{"g-echo", "g-alpha", "g-unknown"}, want: []string{alpha.ID, echo.ID}},
			{name: "group match is exact", userID: lonely.ID, groups: []string{"G-ALPHA", "g-alph"}, want: []string{}},
			{name: "groups without a user id", groups: []string{"g-bravo"}, want: []string{bravo.ID}},
			{name: "no groups, no assignment", userID: lonely.ID, want: []string{}},
			{name: "unknown user", userID: "no-such-user", groups: []string{}, want: []string{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.Scope(ctx, tt.userID, tt.isAdmin, tt.groups)
				if err != nil {
					t.Fatalf("Scope: %v", err)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("Scope = %v, want %v", got, tt.want)
				}
			})
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestUpdateTenant(t *testing.T) {
	eachDialect(t, func(t *testing.T, _ *bun.DB, s *tenancy.Store) {
		ctx := context.Background()
		billing := "billing-1"
		orig := createTenant(t, s, tenancy.Tenant{Name: "Contoso", Description: "Main", DirectoryTenantID: "dir-1", SubscriptionID: "sub-1",
			BillingAccountID: &billing, AccessGroups: []string{"g-1"}, IsActive: true})
		createTenant(t, s, tenancy.Tenant{Name: "Fabrikam", DirectoryTenantID: "dir-2", IsActive: true})

		// Only the named fields change.
		got, err := s.UpdateTenant(ctx, orig.ID, tenancy.TenantPatch{Name: ptr("Contoso Ltd"), AccessGroups: &[]string{"g-2", "g-3"}})
		if err != nil {
			t.Fatalf("UpdateTenant: %v", err)
		}
		stored, err := s.Tenant(ctx, orig.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, tn := range []tenancy.Tenant{got, stored} {
			if tn.Name != "Contoso Ltd" || !slices.Equal(tn.AccessGroups, []string{"g-2", "g-3"}) || tn.Description != "Main" ||
				tn.DirectoryTenantID != "dir-1" || tn.SubscriptionID != "sub-1" || tn.BillingAccountID == nil || *tn.BillingAccountID != billing ||
				!tn.IsActive || !closeTo(tn.CreatedAt, orig.CreatedAt) {
				t.Errorf("after renaming: %+v", tn)
			}
		}
		if !stored.UpdatedAt.After(orig.UpdatedAt) {
			t.Errorf("updated_at %v not after %v", stored.UpdatedAt, orig.UpdatedAt)
		}

		// An empty billing account clears it; nil access groups read back as none.
		got, err = s.UpdateTenant(ctx, orig.ID, tenancy.TenantPatch{BillingAccountID: ptr(""), AccessGroups: &[]string{}, UseDelegation: ptr(true),
			Description: ptr(""), SubscriptionID: ptr("sub-2"), DirectoryTenantID: ptr("dir-3"), IsActive: ptr(false)})
		if err != nil {
			t.Fatalf("UpdateTenant: %v", err)
		}
		stored, _ = s.Tenant(ctx, orig.ID)
		if stored.BillingAccountID != nil || stored.AccessGroups == nil || len(stored.AccessGroups) != 0 || !stored.UseDelegation ||
			stored.Description != "" || stored.SubscriptionID != "sub-2" || stored.DirectoryTenantID != "dir-3" || stored.IsActive || got.IsActive {
			t.Errorf("after clearing: %+v", stored)
		}

		if _, err := s.UpdateTenant(ctx, orig.ID, tenancy.TenantPatch{DirectoryTenantID: ptr("dir-2")}); !errors.Is(err, tenancy.ErrDuplicate) {
			t.Errorf("taking another tenant's directory id: err = %v, want ErrDuplicate", err)
		}
		if _, err := s.UpdateTenant(ctx, "missing", tenancy.TenantPatch{Name: ptr("x")}); !errors.Is(err, tenancy.ErrNotFound) {
			t.Errorf("unknown tenant: err = %v, want ErrNotFound", err)
		}
	})
}

func TestDeactivateTenant(t *testing.T) {
	eachDialect(t, func(t *testing.T, _ *bun.DB, s *tenancy.Store) {
		ctx := context.Background()
		tn := createTenant(t, s, tenancy.Tenant{Name: "Contoso", DirectoryTenantID: "dir-1", AccessGroups: []string{"g-1"}, IsActive: true})
		u := upsertUser(t, s, tenancy.User{Email: "user@example.com"})
		if err := s.AddMember(ctx, tn.ID, u.ID); err != nil {
			t.Fatal(err)
		}
		// Read once before, so a kept list must be dropped by the change.
		if list, _ := s.Tenants(ctx, nil, false); !slices.Equal(ids(list), []string{tn.ID}) {
			t.Fatalf("active tenants before deactivation %v, want [%s]", ids(list), tn.ID)
		}
		for i := range 2 {
			if err := s.DeactivateTenant(ctx, tn.ID); err != nil {
				t.Fatalf("DeactivateTenant #%d: %v", i+1, err)
			}
		}
		got, err := s.Tenant(ctx, tn.ID)
		if err != nil || got.IsActive {
			t.Fatalf("Tenant after deactivation = %+v, %v; want it kept and inactive", got, err)
		}
		for _, admin := range []bool{true, false} {
			scope, err := s.Scope(ctx, u.ID, admin, []string{"g-1"})
			if err != nil || len(scope) != 0 {
				t.Errorf("Scope(admin=%v) = %v, %v; want none", admin, scope, err)
			}
		}
		if list, _ := s.Tenants(ctx, nil, false); len(list) != 0 {
			t.Errorf("active tenants %v, want none", ids(list))
		}
		// Memberships stay, so reactivating restores access.
		if _, err := s.UpdateTenant(ctx, tn.ID, tenancy.TenantPatch{IsActive: ptr(true)}); err != nil {
			t.Fatal(err)
		}
		if scope, _ := s.Scope(ctx, u.ID, false, nil); !slices.Equal(scope, []string{tn.ID}) {
			t.Errorf("Scope after reactivation = %v, want [%s]", scope, tn.ID)
		}
		if err := s.DeactivateTenant(ctx, "missing"); !errors.Is(err, tenancy.ErrNotFound) {
			t.Errorf("unknown tenant: err = %v, want ErrNotFound", err)
		}
	})
}

func TestMembers(t *testing.T) {
	eachDialect(t, func(t *testing.T, _ *bun.DB, s *tenancy.Store) {
		ctx := context.Background()
		tn := createTenant(t, s, tenancy.Tenant{Name: "Contoso", DirectoryTenantID: "dir-1", AccessGroups: []string{"g-1"}, IsActive: true})
		other := createTenant(t, s, tenancy.Tenant{Name: "Fabrikam", DirectoryTenantID: "dir-2", IsActive: true})
		zoe := upsertUser(t, s, tenancy.User{Email: "zoe@example.com", Name: "Zoe"})
		amy := upsertUser(t, s, tenancy.User{Email: "amy@example.com", Name: "Amy"})
		upsertUser(t, s, tenancy.User{Email: "grouped@example.com", Groups: []string{"g-1"}})

		if got, err := s.Members(ctx, tn.ID); err != nil || got == nil || len(got) != 0 {
			t.Fatalf("Members of an unassigned tenant = %v, %v; want an empty list", got, err)
		}
		before := time.Now()
		for _, u := range []tenancy.User{zoe, amy} {
			if err := s.AddMember(ctx, tn.ID, u.ID); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.AddMember(ctx, other.ID, zoe.ID); err != nil {
			t.Fatal(err)
		}
		got, err := s.Members(ctx, tn.ID)
		if err != nil {
			t.Fatalf("Members: %v", err)
		}
		if len(got) != 2 || got[0].UserID != amy.ID || got[0].Email != "amy@example.com" || got[0].Name != "Amy" || got[0].DirectoryTenantID != "dir-test" ||
			got[1].UserID != zoe.ID {
			t.Fatalf("Members = %+v, want Amy then Zoe (group members are not assigned)", got)
		}
		if got[0].AssignedAt.Before(before.Add(-time.Second)) || got[0].AssignedAt.After(time.Now().Add(time.Second)) {
			t.Errorf("assigned_at %v, want about now", got[0].AssignedAt)
		}

		m, err := s.Member(ctx, tn.ID, zoe.ID)
		if err != nil || m.Email != "zoe@example.com" || !closeTo(m.AssignedAt, got[1].AssignedAt) {
			t.Errorf("Member = %+v, %v; want %+v", m, err, got[1])
		}
		if _, err := s.Member(ctx, tn.ID, "missing"); !errors.Is(err, tenancy.ErrNotFound) {
			t.Errorf("Member of a non-member: err = %v, want ErrNotFound", err)
		}

		if err := s.RemoveMember(ctx, tn.ID, zoe.ID); err != nil {
			t.Fatalf("RemoveMember: %v", err)
		}
		if err := s.RemoveMember(ctx, tn.ID, zoe.ID); !errors.Is(err, tenancy.ErrNotFound) {
			t.Errorf("removing twice: err = %v, want ErrNotFound", err)
		}
		if got, _ := s.Members(ctx, tn.ID); len(got) != 1 || got[0].UserID != amy.ID {
			t.Errorf("Members after removal = %+v, want only Amy", got)
		}
		// The other tenant's assignment of the same user is untouched.
		if scope, _ := s.Scope(ctx, zoe.ID, false, nil); !slices.Equal(scope, []string{other.ID}) {
			t.Errorf("Scope of Zoe = %v, want [%s]", scope, other.ID)
		}
	})
}

func TestManagesDirectory(t *testing.T) {
	eachDialect(t, func(t *testing.T, _ *bun.DB, s *tenancy.Store) {
		ctx := context.Background()
		createTenant(t, s, tenancy.Tenant{Name: "Active", DirectoryTenantID: "AAAAAAAA-0000-0000-0000-000000000001", IsActive: true})
		createTenant(t, s, tenancy.Tenant{Name: "Inactive", DirectoryTenantID: "bbbbbbbb-0000-0000-0000-000000000001", IsActive: false})
		for dir, want := range map[string]bool{
			"aaaaaaaa-0000-0000-0000-000000000001": true,
			"AAAAAAAA-0000-0000-0000-000000000001": true,
			"bbbbbbbb-0000-0000-0000-000000000001": false,
			"cccccccc-0000-0000-0000-000000000001": false,
			"":                                     false,
		} {
			got, err := s.ManagesDirectory(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("ManagesDirectory(%q) = %v, want %v", dir, got, want)
			}
		}
	})
}

// TestOnChange: every committed write is reported, so that cached scopes
// can be dropped; a write that changed nothing or failed is not.
func TestOnChange(t *testing.T) {
	eachDialect(t, func(t *testing.T, _ *bun.DB, s *tenancy.Store) {
		ctx := context.Background()
		changes := 0
		s.OnChange(func(context.Context) { changes++ })
		expect := func(what string, err error, want int) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if changes != want {
				t.Errorf("%s: %d changes reported, want %d", what, changes, want)
			}
		}
		tn := tenancy.Tenant{Name: "Brand A", DirectoryTenantID: "dir-a", IsActive: true}
		expect("create tenant", s.CreateTenant(ctx, &tn), 1)
		if err := s.CreateTenant(ctx, &tenancy.Tenant{Name: "Again", DirectoryTenantID: "dir-a", IsActive: true}); !errors.Is(err, tenancy.ErrDuplicate) {
			t.Fatalf("duplicate create: %v", err)
		}
		expect("refused create", nil, 1)
		u := tenancy.User{DirectoryTenantID: "dir-a", Subject: "oid-ann", Email: "ann@brand-a.example", Groups: []string{"grp-a"}}
		expect("first sign-in", s.UpsertUser(ctx, &u), 2)
		u.Groups = []string{"grp-b"}
		expect("sign-in with other groups", s.UpsertUser(ctx, &u), 3)
		// A sign-in that changes nothing but its time is no change: sign-ins
		// would otherwise empty every replica's caches.
		first := *u.LastLoginAt
		id := u.ID
		again := tenancy.User{DirectoryTenantID: "dir-a", Subject: "oid-ann", Email: "ann@brand-a.example", Groups: []string{"grp-b"}}
		expect("the same sign-in again", s.UpsertUser(ctx, &again), 3)
		stored, err := s.User(ctx, id)
		if err != nil || again.ID != id || stored.LastLoginAt == nil || !stored.LastLoginAt.After(first) || !slices.Equal(stored.Groups, []string{"grp-b"}) {
			t.Fatalf("after the same sign-in again: id %s (want %s), stored %+v (%v), want its sign-in time moved past %s", again.ID, id, stored, err, first)
		}
		again.Name = "Ann"
		expect("sign-in with another name", s.UpsertUser(ctx, &again), 4)
		again.IsAdmin = true
		expect("sign-in as an admin", s.UpsertUser(ctx, &again), 5)
		expect("assign", s.AddMember(ctx, tn.ID, u.ID), 6)
		groups := []string{"grp-a"}
		_, err = s.UpdateTenant(ctx, tn.ID, tenancy.TenantPatch{AccessGroups: &groups})
		expect("access groups", err, 7)
		expect("unassign", s.RemoveMember(ctx, tn.ID, u.ID), 8)
		if err := s.RemoveMember(ctx, tn.ID, u.ID); !errors.Is(err, tenancy.ErrNotFound) {
			t.Fatalf("unassign twice: %v", err)
		}
		expect("unassign twice", nil, 8)
		expect("deactivate", s.DeactivateTenant(ctx, tn.ID), 9)
		if err := s.DeactivateTenant(ctx, "no-such-tenant"); !errors.Is(err, tenancy.ErrNotFound) {
			t.Fatalf("deactivate unknown: %v", err)
		}
		expect("deactivate unknown", nil, 9)
	})
}
