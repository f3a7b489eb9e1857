package directory_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/identity/directory"
)

// TestSnapshotDisabledMigration: the migrations that add the disabled
// accounts and the enabled members to the snapshots count them, for each
// tenant's latest snapshot, from the directory stored with it, and leave
// the earlier days at 0 and NULL; the summary's counts read it; it rolls back.
func TestSnapshotDisabledMigration(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		db := storetest.Open(t, dialect)
		first := fstest.MapFS{}
		err := fs.WalkDir(directory.Migrations(), ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasPrefix(path, "0001_") {
				return err
			}
			b, err := fs.ReadFile(directory.Migrations(), path)
			first[path] = &fstest.MapFile{Data: b}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Migrate(ctx, db, first, "identity_migrations"); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			`INSERT INTO identity_users (tenant_id, user_id, user_type, account_enabled, is_admin, mfa_registered, mfa_capable, synced_at) VALUES
				('t-contoso', 'u1', 'Member', TRUE, FALSE, TRUE, TRUE, '2026-12-15 12:00:00'),
				('t-contoso', 'u2', 'Member', FALSE, TRUE, FALSE, FALSE, '2026-12-15 12:00:00'),
				('t-fabrikam', 'u3', 'Member', TRUE, FALSE, FALSE, FALSE, '2026-12-15 12:00:00')`,
			`INSERT INTO identity_snapshots (tenant_id, day, total_users, admin_users, mfa_users, admin_mfa_users, guest_users, devices, compliant_devices, synced_at) VALUES
				('t-contoso', '2026-12-14', 2, 1, 0, 0, 0, 0, 0, '2026-12-14 12:00:00'),
				('t-contoso', '2026-12-15', 2, 1, 1, 0, 0, 0, 0, '2026-12-15 12:00:00'),
				('t-fabrikam', '2026-12-15', 1, 0, 0, 0, 0, 0, 0, '2026-12-15 12:00:00')`,
		} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := store.Migrate(ctx, db, directory.Migrations(), "identity_migrations"); err != nil {
			t.Fatal(err)
		}
		var snaps []directory.Snapshot
		if err := db.NewSelect().Model(&snaps).Order("tenant_id", "day").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if len(snaps) != 3 || snaps[0].DisabledUsers != 0 || snaps[1].DisabledUsers != 1 || snaps[2].DisabledUsers != 0 {
			t.Fatalf("snapshots after the migration %+v, want contoso's latest with 1 disabled", snaps)
		}
		// The enabled members too, on each tenant's latest snapshot.
		if snaps[0].MemberUsers != nil || *snaps[1].MemberUsers != 1 || *snaps[1].MemberMFAUsers != 1 || *snaps[2].MemberUsers != 1 || *snaps[2].MemberMFAUsers != 0 {
			t.Fatalf("the snapshots' enabled members after the migration %+v", snaps)
		}
		counts, err := directory.NewStore(db).Counts(ctx, []string{contoso.ID, fabrikam.ID})
		if err != nil || len(counts) != 2 || counts[0].DisabledUsers != 1 || counts[0].MFAUsers != 1 || counts[1].TotalUsers != 1 {
			t.Fatalf("counts %+v (%v)", counts, err)
		}
		if _, err := store.Rollback(ctx, db, directory.Migrations(), "identity_migrations"); err != nil {
			t.Fatal(err)
		}
		if n, err := db.NewSelect().Table("identity_snapshots").Count(ctx); err != nil || n != 3 {
			t.Fatalf("%d snapshots after the rollback (%v), want the 3", n, err)
		}
		if err := db.NewSelect().Model(&snaps).Scan(ctx); err == nil {
			t.Fatal("the snapshots have disabled_users after the rollback")
		}
	})
}

// TestAccessPostureMigration: snapshots taken before the Conditional
// Access posture, the Global Administrators, the risky users, the
// applications' credentials and the access reviews' figures were read
// keep them unknown (NULL), so no read claims them; the migrations roll
// back.
func TestAccessPostureMigration(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		db := storetest.Open(t, dialect)
		before := fstest.MapFS{}
		err := fs.WalkDir(directory.Migrations(), ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || path >= "0104_" {
				return err
			}
			b, err := fs.ReadFile(directory.Migrations(), path)
			before[path] = &fstest.MapFile{Data: b}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Migrate(ctx, db, before, "identity_migrations"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO identity_snapshots (tenant_id, day, total_users, admin_users, mfa_users, admin_mfa_users, guest_users, devices, compliant_devices, synced_at)
			VALUES ('t-contoso', '2026-12-15', 2, 1, 1, 0, 0, 0, 0, '2026-12-15 12:00:00')`); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Migrate(ctx, db, directory.Migrations(), "identity_migrations"); err != nil {
			t.Fatal(err)
		}
		st := directory.NewStore(db)
		postures, err := st.Postures(ctx, []string{contoso.ID})
		if err != nil || len(postures) != 0 {
			t.Fatalf("postures of a snapshot from before the migration %+v (%v), want none", postures, err)
		}
		if admins, err := st.GlobalAdmins(ctx, []string{contoso.ID}); err != nil || len(admins) != 0 {
			t.Fatalf("global admins of a snapshot from before the migration %+v (%v), want none", admins, err)
		}
		snaps, err := st.Latest(ctx, []string{contoso.ID})
		if err != nil || len(snaps) != 1 || snaps[0].SecurityDefaults != nil || snaps[0].CAMFAAllUsers != "" || snaps[0].GlobalAdmins != nil ||
			snaps[0].RiskyUsers != nil || snaps[0].ExpiredCredentials != nil || snaps[0].AccessReviewFindings != nil || snaps[0].OverdueAccessReviews != nil {
			t.Fatalf("snapshot %+v (%v), want its posture unknown", snaps, err)
		}
		if _, err := store.Rollback(ctx, db, directory.Migrations(), "identity_migrations"); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"identity_ca_policies", "identity_global_admins", "identity_risky_users", "identity_app_credentials"} {
			if _, err := db.NewSelect().Table(table).Count(ctx); err == nil {
				t.Fatalf("%s is there after the rollback", table)
			}
		}
		if n, err := db.NewSelect().Table("identity_snapshots").Count(ctx); err != nil || n != 1 {
			t.Fatalf("%d snapshots after the rollback (%v), want the 1", n, err)
		}
		if _, err := db.ExecContext(ctx, "SELECT access_review_findings FROM identity_snapshots"); err == nil {
			t.Fatal("the snapshots have access_review_findings after the rollback")
		}
	})
}
