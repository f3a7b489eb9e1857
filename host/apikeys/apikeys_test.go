package apikeys

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/migrations"
)

type fixture struct {
	s       *Store
	clock   *time.Time
	tenantA tenancy.Tenant
	tenantB tenancy.Tenant
}

func newFixture(t *testing.T, dialect string) *fixture {
	t.Helper()
	db := storetest.Open(t, dialect)
	ctx := context.Background()
	if _, err := store.Migrate(ctx, db, migrations.FS, migrations.Table); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	ten := tenancy.New(db)
	f := &fixture{s: New(db, ten)}
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f.clock = &now
	f.s.now = func() time.Time { return *f.clock }
	f.tenantA = tenancy.Tenant{Name: "A", DirectoryTenantID: "dir-a", IsActive: true}
	f.tenantB = tenancy.Tenant{Name: "B", DirectoryTenantID: "dir-b", IsActive: true}
	for _, tn := range []*tenancy.Tenant{&f.tenantA, &f.tenantB} {
		if err := ten.CreateTenant(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fixture) create(t *testing.T, n NewKey) (Key, string) {
	t.Helper()
	k, token, err := f.s.Create(context.Background(), n)
	if err != nil {
		t.Fatalf("Create(%+v): %v", n, err)
	}
	return k, token
}

func TestKeys(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			t.Run("create and authenticate", func(t *testing.T) { testCreateAuthenticate(t, newFixture(t, dialect)) })
			t.Run("refused keys", func(t *testing.T) { testRefused(t, newFixture(t, dialect)) })
			t.Run("revoke and expiry", func(t *testing.T) { testRevokeExpiry(t, newFixture(t, dialect)) })
			t.Run("last used is throttled", func(t *testing.T) { testLastUsed(t, newFixture(t, dialect)) })
			t.Run("validation", func(t *testing.T) { testValidation(t, newFixture(t, dialect)) })
		})
	}
}

func testCreateAuthenticate(t *testing.T, f *fixture) {
	ctx := context.Background()
	exp := f.clock.Add(48 * time.Hour)
	k, token := f.create(t, NewKey{Name: " ci ", Role: RoleStandard, TenantIDs: []string{f.tenantA.ID}, CreatedBy: "u1", ExpiresAt: &exp})
	if !strings.HasPrefix(token, Prefix+k.ID+"_") || k.Name != "ci" {
		t.Fatalf("token %q for key %+v", token, k)
	}
	if strings.Contains(k.SecretHash, strings.TrimPrefix(token, Prefix+k.ID+"_")) {
		t.Fatal("the secret is stored in clear")
	}
	got, err := f.s.Authenticate(ctx, token)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if got.ID != k.ID || got.Role != RoleStandard || !slices.Equal(got.TenantIDs, []string{f.tenantA.ID}) ||
		got.CreatedBy != "u1" || got.ExpiresAt == nil || !got.ExpiresAt.Equal(exp) {
		t.Errorf("authenticated key = %+v", got)
	}

	admin, _ := f.create(t, NewKey{Name: "ops", Role: RoleAdmin, CreatedBy: "u1"})
	*f.clock = f.clock.Add(time.Second)
	newer, _ := f.create(t, NewKey{Name: "newer", Role: RoleAdmin})
	list, err := f.s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range list {
		ids = append(ids, l.ID)
	}
	if len(ids) != 3 || ids[0] != newer.ID || !slices.Contains(ids, admin.ID) || !slices.Contains(ids, k.ID) {
		t.Errorf("List ids = %v", ids)
	}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		if strings.Contains(string(b), l.SecretHash) {
			t.Errorf("listed JSON shows the secret hash: %s", b)
		}
	}
	if admin.TenantIDs == nil || len(admin.TenantIDs) != 0 {
		t.Errorf("admin key tenant_ids = %#v, want empty list", admin.TenantIDs)
	}
}

func testRefused(t *testing.T, f *fixture) {
	ctx := context.Background()
	k, token := f.create(t, NewKey{Name: "k", Role: RoleAdmin})
	other, _ := f.create(t, NewKey{Name: "other", Role: RoleAdmin})
	secret := strings.TrimPrefix(token, Prefix+k.ID+"_")
	wrong := []byte(secret)
	wrong[0] ^= 1
	for name, tok := range map[string]string{
		"empty":            "",
		"garbage":          "not-a-key",
		"no prefix":        strings.TrimPrefix(token, Prefix),
		"no secret":        Prefix + k.ID,
		"short secret":     token[:len(token)-1],
		"upper-case id":    Prefix + strings.ToUpper(k.ID) + "_" + secret,
		"unknown id":       Prefix + "0123456789abcdef_" + secret,
		"wrong secret":     Prefix + k.ID + "_" + string(wrong),
		"another's secret": Prefix + other.ID + "_" + secret,
	} {
		if _, err := f.s.Authenticate(ctx, tok); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Authenticate = %v, want ErrInvalid", name, err)
		}
	}
}

func testRevokeExpiry(t *testing.T, f *fixture) {
	ctx := context.Background()
	exp := f.clock.Add(time.Hour)
	short, shortTok := f.create(t, NewKey{Name: "short", Role: RoleAdmin, ExpiresAt: &exp})
	k, token := f.create(t, NewKey{Name: "k", Role: RoleAdmin})
	// Keys cached as good are dropped on each reported change.
	changes := 0
	f.s.OnChange(func(context.Context) { changes++ })

	if err := f.s.Revoke(ctx, k.ID); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if changes != 1 {
		t.Errorf("revocation reported %d changes, want 1", changes)
	}
	if _, err := f.s.Authenticate(ctx, token); !errors.Is(err, ErrRevoked) {
		t.Errorf("revoked key: %v, want ErrRevoked", err)
	}
	first := *f.clock
	*f.clock = f.clock.Add(time.Minute)
	if err := f.s.Revoke(ctx, k.ID); err != nil {
		t.Errorf("revoking twice: %v", err)
	}
	if err := f.s.Revoke(ctx, "0123456789abcdef"); !errors.Is(err, ErrNotFound) {
		t.Errorf("revoking an unknown key: %v, want ErrNotFound", err)
	}
	if changes != 1 {
		t.Errorf("revoking a revoked or unknown key reported a change (%d in all)", changes)
	}
	list, err := f.s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		if l.ID == k.ID && (l.RevokedAt == nil || !l.RevokedAt.Equal(first)) {
			t.Errorf("revoked_at = %v, want the first revocation %v", l.RevokedAt, first)
		}
		if l.ID == short.ID && l.RevokedAt != nil {
			t.Errorf("revoking one key revoked another")
		}
	}

	if _, err := f.s.Authenticate(ctx, shortTok); err != nil {
		t.Fatalf("key before expiry: %v", err)
	}
	*f.clock = exp
	if _, err := f.s.Authenticate(ctx, shortTok); !errors.Is(err, ErrExpired) {
		t.Errorf("key at expiry: %v, want ErrExpired", err)
	}
}

func testLastUsed(t *testing.T, f *fixture) {
	ctx := context.Background()
	k, token := f.create(t, NewKey{Name: "k", Role: RoleAdmin})
	lastUsed := func() *time.Time {
		t.Helper()
		list, err := f.s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range list {
			if l.ID == k.ID {
				return l.LastUsedAt
			}
		}
		t.Fatal("key not listed")
		return nil
	}
	if lastUsed() != nil {
		t.Fatal("a new key has last_used_at")
	}
	use := func() {
		t.Helper()
		if _, err := f.s.Authenticate(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	first := *f.clock
	use()
	if got := lastUsed(); got == nil || !got.Equal(first) {
		t.Fatalf("last_used_at = %v, want %v", got, first)
	}
	*f.clock = first.Add(30 * time.Second)
	use()
	if got := lastUsed(); !got.Equal(first) {
		t.Errorf("last_used_at written again within a minute: %v", got)
	}
	*f.clock = first.Add(61 * time.Second)
	use()
	if got := lastUsed(); !got.Equal(*f.clock) {
		t.Errorf("last_used_at = %v after a minute, want %v", got, *f.clock)
	}
}

func testValidation(t *testing.T, f *fixture) {
	past := f.clock.Add(-time.Second)
	a, b := f.tenantA.ID, f.tenantB.ID
	for _, c := range []struct {
		n     NewKey
		field string
	}{
		{NewKey{Name: "  ", Role: RoleAdmin}, "name"},
		{NewKey{Name: strings.Repeat("x", MaxNameLength+1), Role: RoleAdmin}, "name"},
		{NewKey{Name: "k", Role: "owner"}, "role"},
		{NewKey{Name: "k", Role: RoleAdmin, TenantIDs: []string{a}}, "tenant_ids"},
		{NewKey{Name: "k", Role: RoleStandard}, "tenant_ids"},
		{NewKey{Name: "k", Role: RoleStandard, TenantIDs: []string{a, "missing"}}, "tenant_ids[1]"},
		{NewKey{Name: "k", Role: RoleStandard, TenantIDs: []string{a, b, a}}, "tenant_ids[2]"},
		{NewKey{Name: "k", Role: RoleAdmin, ExpiresAt: &past}, "expires_at"},
	} {
		_, _, err := f.s.Create(context.Background(), c.n)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("Create(%+v) = %v, want a validation error on %s", c.n, err, c.field)
		}
	}
	list, err := f.s.List(context.Background())
	if err != nil || len(list) != 0 {
		t.Errorf("refused keys were stored: %v, %v", list, err)
	}
}
