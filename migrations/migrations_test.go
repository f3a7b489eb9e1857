package migrations_test

import (
	"context"
	"slices"
	"testing"
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

			mustExec(t, db, "INSERT INTO users (id, email, name) VALUES (?, ?, ?)", "u1", "a@example.com", "A")
			if err := exec(t, db, "INSERT INTO users (id, email) VALUES (?, ?)", "u2", "a@example.com"); err == nil {
				t.Error("second user with the same email was accepted")
			}
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
