package directory_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/plugins/identity/directory"
)

func (f *fixture) users(t *testing.T, tenant string) []directory.User {
	t.Helper()
	var out []directory.User
	if err := f.db.NewSelect().Model(&out).Where("tenant_id = ?", tenant).Order("display_name").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

func (f *fixture) snapshots(t *testing.T) []directory.Snapshot {
	t.Helper()
	var out []directory.Snapshot
	if err := f.db.NewSelect().Model(&out).Order("tenant_id", "day").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

func count(t *testing.T, f *fixture, model any, tenant string) int {
	t.Helper()
	n, err := f.db.NewSelect().Model(model).Where("tenant_id = ?", tenant).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// TestSyncStoresEachTenantsDirectory: one run stores every user of each
// tenant with its sign-in, type, state and MFA registration, marks admins
// from the role holders, keeps roles, devices and review decisions apart
// per tenant, records the day's snapshot and marks both tenants fresh.
func TestSyncStoresEachTenantsDirectory(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, identityWorld(), nil)
		n, progress := f.mustRun(t)
		users := f.users(t, contoso.ID)
		var names []string
		for _, u := range users {
			names = append(names, u.DisplayName)
		}
		if want := []string{"Ada Admin", "Bea Old", "Cal Never", "Dee Gone", "Eve Member", "Gus Guest", "Rory Root"}; !slices.Equal(names, want) {
			t.Fatalf("contoso users %v, want %v", names, want)
		}
		byName := map[string]directory.User{}
		for _, u := range users {
			byName[u.DisplayName] = u
		}
		if u := byName["Bea Old"]; !u.LastSignIn.Equal(time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)) || !u.MFARegistered || u.IsAdmin || !u.AccountEnabled {
			t.Fatalf("bea stored as %+v", u)
		}
		if u := byName["Cal Never"]; !u.LastSignIn.IsZero() || u.MFARegistered || u.DefaultMethod != "none" {
			t.Fatalf("cal stored as %+v", u)
		}
		if u := byName["Dee Gone"]; u.AccountEnabled || !u.IsAdmin {
			t.Fatalf("dee stored as %+v", u)
		}
		if u := byName["Gus Guest"]; u.UserType != "Guest" || u.Mail != "gus@partner.example" || u.Created.IsZero() {
			t.Fatalf("gus stored as %+v", u)
		}
		if u := byName["Eve Member"]; u.MFAMethods != "fido2" {
			t.Fatalf("eve's methods %q", u.MFAMethods)
		}
		if got := len(f.users(t, fabrikam.ID)); got != 3 {
			t.Fatalf("fabrikam has %d users, want 3", got)
		}
		if got := count(t, f, (*directory.Decision)(nil), contoso.ID); got != 3 {
			t.Fatalf("contoso has %d review decisions, want 3", got)
		}
		if got := count(t, f, (*directory.Decision)(nil), fabrikam.ID); got != 0 {
			t.Fatalf("fabrikam has %d review decisions, want none", got)
		}
		if got := count(t, f, (*directory.AccessReview)(nil), contoso.ID); got != 1 {
			t.Fatalf("contoso has %d reviews", got)
		}
		var holders []string
		if err := f.db.NewSelect().Model((*directory.RoleMember)(nil)).ColumnExpr("DISTINCT member_name").
			Where("tenant_id = ?", contoso.ID).Order("member_name").Scan(context.Background(), &holders); err != nil {
			t.Fatal(err)
		}
		if want := []string{"Ada Admin", "Dee Gone", "Rory Root"}; !slices.Equal(holders, want) {
			t.Fatalf("contoso role holders %v, want %v", holders, want)
		}
		var rows int64
		for _, tn := range []string{contoso.ID, fabrikam.ID} {
			rows += int64(count(t, f, (*directory.User)(nil), tn) + count(t, f, (*directory.RoleMember)(nil), tn) +
				count(t, f, (*directory.Device)(nil), tn) + count(t, f, (*directory.AccessReview)(nil), tn) + count(t, f, (*directory.Decision)(nil), tn) +
				count(t, f, (*directory.CAPolicy)(nil), tn) + count(t, f, (*directory.GlobalAdmin)(nil), tn) +
				count(t, f, (*directory.RiskyUser)(nil), tn) + count(t, f, (*directory.AppCredential)(nil), tn))
		}
		if n != rows {
			t.Fatalf("run reported %d records, stored %d", n, rows)
		}
		if last := progress[len(progress)-1]; last.Done != 2 || last.Total != 2 {
			t.Fatalf("last progress %+v, want 2 of 2 tenants", last)
		}
		if fresh := f.freshTenants(0); !slices.Equal(fresh, []string{contoso.ID, fabrikam.ID}) {
			t.Fatalf("fresh tenants %v", fresh)
		}
		snaps := f.snapshots(t)
		if len(snaps) != 2 {
			t.Fatalf("snapshots %+v, want one per tenant", snaps)
		}
		c := snaps[0]
		if c.TenantID != contoso.ID || c.Day != "2026-12-15" || c.TotalUsers != 7 || c.AdminUsers != 3 || c.MFAUsers != 4 ||
			c.AdminMFAUsers != 2 || c.GuestUsers != 1 || c.Devices != int64(count(t, f, (*directory.Device)(nil), contoso.ID)) {
			t.Fatalf("contoso snapshot %+v", c)
		}
	})
}

// TestSyncReplacesAndSnapshotsDaily: a second sync the same day replaces
// the directory and the day's snapshot; the next day adds a snapshot.
func TestSyncReplacesAndSnapshotsDaily(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		w := identityWorld()
		f := start(t, dialect, w, nil)
		f.mustRun(t)
		f.mustRun(t)
		if got := len(f.users(t, contoso.ID)); got != 7 {
			t.Fatalf("after a second sync contoso has %d users, want 7", got)
		}
		if got := len(f.snapshots(t)); got != 2 {
			t.Fatalf("%d snapshots after two syncs on one day, want 2", got)
		}
		f.nextDay(t)
		f.mustRun(t)
		var days []string
		for _, s := range f.snapshots(t) {
			if s.TenantID == contoso.ID {
				days = append(days, s.Day)
			}
		}
		if !slices.Equal(days, []string{"2026-12-15", "2026-12-16"}) {
			t.Fatalf("contoso snapshot days %v", days)
		}
	})
}

// TestFailedTenantKeepsItsData: when Graph fails for one tenant, the run
// fails naming it, that tenant keeps its previous directory and is not
// marked fresh but reported failed to the host, and the other tenant is
// synced.
func TestFailedTenantKeepsItsData(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, identityWorld(), nil)
		f.mustRun(t)
		marks := len(f.harness.FreshMarks())
		before := f.users(t, contoso.ID)
		// Contoso is synced first; its devices fail on every try (one
		// and two retries), Fabrikam's are served.
		f.sim.Faults.Set(cloudsim.Graph, "/v1.0/deviceManagement", cloudsim.Fault{Status: http.StatusInternalServerError, Times: 3})
		f.nextDay(t)
		_, _, err := f.harness.RunJob(context.Background(), "identity")
		if err == nil || !strings.Contains(err.Error(), "Contoso") || strings.Contains(err.Error(), "Fabrikam") {
			t.Fatalf("run error %v, want one naming Contoso only", err)
		}
		if after := f.users(t, contoso.ID); len(after) != len(before) || !after[0].SyncedAt.Equal(before[0].SyncedAt) {
			t.Fatalf("contoso's directory changed after a failed sync")
		}
		if fresh := f.freshTenants(marks); !slices.Equal(fresh, []string{fabrikam.ID}) {
			t.Fatalf("fresh after a partial failure: %v, want only fabrikam", fresh)
		}
		if failed := f.failedTenants(marks); len(failed) != 1 || !strings.Contains(failed[contoso.ID], "500") {
			t.Fatalf("failures reported to the host %v, want contoso's naming the 500", failed)
		}
		if u := f.users(t, fabrikam.ID); !u[0].SyncedAt.Equal(simNow.Add(24 * time.Hour)) {
			t.Fatalf("fabrikam synced at %v", u[0].SyncedAt)
		}
	})
}
