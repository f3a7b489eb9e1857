package migrations_test

import (
	"context"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/migrations"
)

func migrated(t *testing.T, dialect string) *bun.DB {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, migrations.FS, migrations.Table); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

func exec(t *testing.T, db *bun.DB, query string, args ...any) error {
	t.Helper()
	_, err := db.NewRaw(query, args...).Exec(context.Background())
	return err
}

func mustExec(t *testing.T, db *bun.DB, query string, args ...any) {
	t.Helper()
	if err := exec(t, db, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func TestCoreSchema(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := migrated(t, dialect)
			ctx := context.Background()

			mustExec(t, db, "INSERT INTO tenants (id, name, directory_tenant_id) VALUES (?, ?, ?)",
				"11111111-1111-1111-1111-111111111111", "Contoso", "dir-1")
			var tenant struct {
				Description      string
				SubscriptionID   string
				UseDelegation    bool
				BillingAccountID *string
				AccessGroups     string
				IsActive         bool
				CreatedAt        time.Time
				UpdatedAt        time.Time
			}
			err := db.NewRaw(`SELECT description, subscription_id, use_delegation, billing_account_id,
				access_groups, is_active, created_at, updated_at FROM tenants`).Scan(ctx,
				&tenant.Description, &tenant.SubscriptionID, &tenant.UseDelegation, &tenant.BillingAccountID,
				&tenant.AccessGroups, &tenant.IsActive, &tenant.CreatedAt, &tenant.UpdatedAt)
			if err != nil {
				t.Fatalf("read tenant: %v", err)
			}
			if tenant.UseDelegation || !tenant.IsActive || tenant.AccessGroups != "[]" || tenant.BillingAccountID != nil {
				t.Errorf("tenant defaults = %+v, want delegation off, active, no groups, no billing account", tenant)
			}
			if since := time.Since(tenant.CreatedAt); since < -time.Minute || since > time.Minute {
				t.Errorf("created_at default = %v, want about now", tenant.CreatedAt)
			}

			if err := exec(t, db, "INSERT INTO tenants (id, name, directory_tenant_id) VALUES (?, ?, ?)",
				"22222222-2222-2222-2222-222222222222", "Dup", "dir-1"); err == nil {
				t.Error("second tenant with the same directory_tenant_id was accepted")
			}

			mustExec(t, db, "INSERT INTO users (id, directory_tenant_id, subject, email, name) VALUES (?, ?, ?, ?, ?)", "u1", "dir-1", "oid-1", "a@example.com", "A")
			// An address is no identity: another directory may have it.
			mustExec(t, db, "INSERT INTO users (id, directory_tenant_id, subject, email) VALUES (?, ?, ?, ?)", "u2", "dir-2", "oid-1", "a@example.com")
			if err := exec(t, db, "INSERT INTO users (id, directory_tenant_id, subject, email) VALUES (?, ?, ?, ?)", "u3", "dir-1", "oid-1", "b@example.com"); err == nil {
				t.Error("second user with the same directory and subject was accepted")
			}
			mustExec(t, db, "DELETE FROM users WHERE id = ?", "u2")
			var roles, groups string
			var isAdmin bool
			var lastLogin *time.Time
			if err := db.NewRaw(`SELECT is_admin, roles, "groups", last_login_at FROM users`).Scan(ctx, &isAdmin, &roles, &groups, &lastLogin); err != nil {
				t.Fatalf("read user: %v", err)
			}
			if isAdmin || roles != "[]" || groups != "[]" || lastLogin != nil {
				t.Errorf("user defaults = admin %v, roles %q, groups %q, last login %v", isAdmin, roles, groups, lastLogin)
			}

			mustExec(t, db, "INSERT INTO tenant_members (tenant_id, user_id) VALUES (?, ?)",
				"11111111-1111-1111-1111-111111111111", "u1")
			if err := exec(t, db, "INSERT INTO tenant_members (tenant_id, user_id) VALUES (?, ?)", "missing", "u1"); err == nil {
				t.Error("membership of a nonexistent tenant was accepted; foreign keys are not enforced")
			}
			mustExec(t, db, "DELETE FROM users WHERE id = ?", "u1")
			var members int
			if err := db.NewRaw("SELECT count(*) FROM tenant_members").Scan(ctx, &members); err != nil {
				t.Fatal(err)
			}
			if members != 0 {
				t.Errorf("deleting a user left %d memberships behind", members)
			}
		})
	}
}

// TestUserIdentityMigration: users from before 0005 become accounts of
// Steward's own directory keyed by their e-mail address, keeping their ids
// and memberships.
func TestUserIdentityMigration(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, dialect)
			before := fstest.MapFS{}
			entries, err := fs.ReadDir(migrations.FS, ".")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "0005_") {
					continue
				}
				b, err := fs.ReadFile(migrations.FS, e.Name())
				if err != nil {
					t.Fatal(err)
				}
				before[e.Name()] = &fstest.MapFile{Data: b}
			}
			if _, err := store.Migrate(ctx, db, before, migrations.Table); err != nil {
				t.Fatalf("Migrate to 0004: %v", err)
			}
			mustExec(t, db, "INSERT INTO tenants (id, name, directory_tenant_id) VALUES (?, ?, ?)", "t1", "Contoso", "dir-1")
			mustExec(t, db, "INSERT INTO users (id, email, name, is_admin, roles, \"groups\") VALUES (?, ?, ?, ?, ?, ?)",
				"u1", "admin@steward.local", "Development admin", true, `["Governance.Admin"]`, `["g"]`)
			mustExec(t, db, "INSERT INTO users (id, email) VALUES (?, ?)", "u2", "ann@brand-a.example")
			mustExec(t, db, "INSERT INTO tenant_members (tenant_id, user_id) VALUES (?, ?)", "t1", "u2")
			longAgo := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
			for id, revokedAt := range map[string]*time.Time{"rt-live": nil, "rt-revoked": &longAgo} {
				mustExec(t, db, `INSERT INTO refresh_tokens (id, user_id, family_id, token_hash, access_id, access_expires_at, issued_at, expires_at, revoked_at)
					VALUES (?, 'u1', 'f', 'h', ?, ?, ?, ?, ?)`, id, "a-"+id, time.Now().Add(time.Minute), time.Now(), time.Now().Add(time.Hour), revokedAt)
			}

			applied, err := store.Migrate(ctx, db, migrations.FS, migrations.Table)
			if err != nil || !slices.Equal(applied, []string{"0005_user_identity"}) {
				t.Fatalf("Migrate 0005 = %v, %v", applied, err)
			}
			type row struct {
				ID, Directory, Subject, Email, Name, Roles, Groups string
				IsAdmin                                            bool
			}
			var rows []row
			err = db.NewRaw(`SELECT id, directory_tenant_id, subject, email, name, roles, "groups", is_admin FROM users ORDER BY id`).Scan(ctx, &rows)
			if err != nil {
				t.Fatal(err)
			}
			want := []row{
				// The flag is set anew at the next sign-in.
				{ID: "u1", Directory: "", Subject: "admin@steward.local", Email: "admin@steward.local", Name: "Development admin", Roles: `["Governance.Admin"]`, Groups: `["g"]`},
				{ID: "u2", Directory: "", Subject: "ann@brand-a.example", Email: "ann@brand-a.example", Roles: "[]", Groups: "[]"},
			}
			if !slices.Equal(rows, want) {
				t.Errorf("users after 0005 = %+v, want %+v", rows, want)
			}
			var members []string
			if err := db.NewRaw("SELECT user_id FROM tenant_members").Scan(ctx, &members); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(members, []string{"u2"}) {
				t.Errorf("memberships after 0005 = %v, want [u2]", members)
			}
			// Every session of before is over; a revocation keeps its time.
			var revoked []time.Time
			if err := db.NewRaw("SELECT revoked_at FROM refresh_tokens ORDER BY id").Scan(ctx, &revoked); err != nil {
				t.Fatal(err)
			}
			if len(revoked) != 2 || time.Since(revoked[0]) > time.Minute || revoked[0].After(time.Now().Add(time.Minute)) || revoked[1].Year() != 2020 {
				t.Errorf("refresh tokens revoked at %v, want now and 2020", revoked)
			}
			// The rebuilt tables keep their foreign keys.
			if err := exec(t, db, "INSERT INTO tenant_members (tenant_id, user_id) VALUES (?, ?)", "t1", "missing"); err == nil {
				t.Error("membership of a nonexistent user was accepted after 0005")
			}
			mustExec(t, db, "DELETE FROM users WHERE id = ?", "u2")
			var n int
			if err := db.NewRaw("SELECT count(*) FROM tenant_members").Scan(ctx, &n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("deleting a user after 0005 left %d memberships", n)
			}

			// Down restores unique addresses; two users of one address stop it.
			mustExec(t, db, "INSERT INTO users (id, directory_tenant_id, subject, email) VALUES (?, ?, ?, ?)", "u3", "dir-1", "oid", "admin@steward.local")
			if _, err := store.Rollback(ctx, db, migrations.FS, migrations.Table); err == nil {
				t.Error("rollback of 0005 with a shared address succeeded")
			}
			mustExec(t, db, "DELETE FROM users WHERE id = ?", "u3")
			if reverted, err := store.Rollback(ctx, db, migrations.FS, migrations.Table); err != nil || !slices.Equal(reverted, []string{"0005_user_identity"}) {
				t.Fatalf("Rollback of 0005 = %v, %v", reverted, err)
			}
			if err := exec(t, db, "INSERT INTO users (id, email) VALUES (?, ?)", "u4", "admin@steward.local"); err == nil {
				t.Error("after rolling 0005 back a second user with the same email was accepted")
			}
		})
	}
}

func TestAuditLogIDsIncrease(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := migrated(t, dialect)
			ctx := context.Background()
			for range 3 {
				mustExec(t, db, "INSERT INTO audit_logs (action, category, status) VALUES ('auth.login.success', 'auth', 'success')")
			}
			var ids []int64
			if err := db.NewRaw("SELECT id FROM audit_logs ORDER BY id").Scan(ctx, &ids); err != nil {
				t.Fatalf("read ids: %v", err)
			}
			if !slices.Equal(ids, []int64{1, 2, 3}) {
				t.Errorf("ids = %v, want 1, 2, 3", ids)
			}
			var details string
			if err := db.NewRaw("SELECT details FROM audit_logs WHERE id = 1").Scan(ctx, &details); err != nil {
				t.Fatal(err)
			}
			if details != "{}" {
				t.Errorf("details default = %q, want {}", details)
			}
		})
	}
}

func TestCoreRollsBackCleanly(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := migrated(t, dialect)
			ctx := context.Background()

			sts, err := store.Status(ctx, db, migrations.FS, migrations.Table)
			if err != nil {
				t.Fatalf("Status: %v", err)
			}
			if len(sts) == 0 || sts[0].Name != "0001_core" || !sts[0].Applied {
				t.Fatalf("Status = %+v, want 0001_core applied first", sts)
			}

			// Each Rollback reverts one group; repeating it once per
			// migration empties the schema however they were grouped.
			for range len(sts) {
				if _, err := store.Rollback(ctx, db, migrations.FS, migrations.Table); err != nil {
					t.Fatalf("Rollback: %v", err)
				}
			}
			for _, table := range []string{"tenants", "users", "tenant_members", "audit_logs"} {
				if err := exec(t, db, "SELECT 1 FROM "+table); err == nil {
					t.Errorf("table %s survived rollback", table)
				}
			}

			applied, err := store.Migrate(ctx, db, migrations.FS, migrations.Table)
			if err != nil || len(applied) != len(sts) {
				t.Fatalf("re-Migrate after rollback = %v, %v", applied, err)
			}
		})
	}
}

// predatesExpandOnly are the up migrations written before the rule of
// expand, then contract (see the package comment): none of them is
// applied during a rolling upgrade from a release that had them.
var predatesExpandOnly = []string{"0005_user_identity.postgres.tx.up.sql", "0005_user_identity.sqlite.tx.up.sql"}

// TestMigrationsOnlyExpand: an up migration that removes, renames or
// tightens what the previous release uses would break its replicas while
// they still serve; only a file named as a contract may.
func TestMigrationsOnlyExpand(t *testing.T) {
	contracting := regexp.MustCompile(`(?i)\bDROP\s+(TABLE|COLUMN|INDEX|CONSTRAINT)\b|\bRENAME\b|\bALTER\s+COLUMN\s+\S+\s+(SET\s+NOT\s+NULL|TYPE)\b`)
	files, err := fs.Glob(migrations.FS, "*.up.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no up migrations: %v", err)
	}
	for _, name := range files {
		if strings.Contains(name, "contract") || slices.Contains(predatesExpandOnly, name) {
			continue
		}
		b, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if code, _, _ := strings.Cut(line, "--"); contracting.MatchString(code) {
				t.Errorf("%s:%d: %q removes, renames or tightens the schema; do it in a later release's contract migration", name, i+1, strings.TrimSpace(line))
			}
		}
	}
}
