package directory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	simgraph "github.com/stewardhq/steward/core/cloudsim/graph"
	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/plugins/identity/directory"
)

// queryLog records the queries run through a handle of the database.
type queryLog struct {
	mu      sync.Mutex
	queries []string
}

func (l *queryLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (l *queryLog) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queries = append(l.queries, e.Query)
}

// take returns the queries recorded since the last take.
func (l *queryLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.queries
	l.queries = nil
	return out
}

// ofData are the queries that read the directories rather than their
// revision.
func ofData(queries []string) []string {
	var out []string
	for _, q := range queries {
		if !strings.Contains(q, directory.RevisionTable) {
			out = append(out, q)
		}
	}
	return out
}

// keptReads are the Store's reads of the tenants that it keeps under
// their revision, as JSON to compare; the stale accounts are counted at
// simNow's 90-day cutoff.
func keptReads(t *testing.T, s *directory.Store, tenants []string) string {
	t.Helper()
	ctx := context.Background()
	var out struct {
		Latest      []directory.Snapshot
		Counts      []directory.TenantCounts
		Trend       []directory.DayFigures
		Stale       int
		Users       [][]directory.UserRow
		UserTotals  []int
		Assignments [][]directory.Assignment
		RoleTotals  []int
		Devices     []directory.Device
		DeviceTotal int
	}
	var err error
	if out.Latest, err = s.Latest(ctx, tenants); err != nil {
		t.Fatal(err)
	}
	if out.Counts, err = s.Counts(ctx, tenants); err != nil {
		t.Fatal(err)
	}
	if out.Trend, err = s.Trend(ctx, tenants, "2026-12-01"); err != nil {
		t.Fatal(err)
	}
	if out.Stale, err = s.StaleCount(ctx, tenants, simNow.AddDate(0, 0, -90)); err != nil {
		t.Fatal(err)
	}
	page := directory.Page{TenantIDs: tenants, SortBy: "display_name", Limit: 10}
	for _, f := range []directory.UserFilter{{WithoutMFA: true, AdminsFirst: true}, {Guests: true}, {}} {
		rows, total, err := s.Users(ctx, page, f)
		if err != nil {
			t.Fatal(err)
		}
		out.Users, out.UserTotals = append(out.Users, rows), append(out.UserTotals, total)
	}
	for _, disabled := range []bool{false, true} {
		rows, total, err := s.Assignments(ctx, page, disabled)
		if err != nil {
			t.Fatal(err)
		}
		out.Assignments, out.RoleTotals = append(out.Assignments, rows), append(out.RoleTotals, total)
	}
	page.SortBy = "name"
	if out.Devices, out.DeviceTotal, err = s.Devices(ctx, page, ""); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestIdentityReadsKeptUnderRevision: on both databases, the Store's kept
// reads — latest snapshots, counts, trend, stale count and the pages of
// users, role assignments and devices — are read from the database once
// per revision: read again, they run nothing but the revision's read,
// and rows changed behind the Store's back leave them as they were, while
// a new Store reads the change. Once the tenant's revision is raised the
// next reads are the database's. What a caller does with a result does
// not change what is kept.
func TestIdentityReadsKeptUnderRevision(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		f := start(t, dialect, identityWorld(), nil)
		f.mustRun(t)
		log := &queryLog{}
		st := directory.NewStore(f.db.WithQueryHook(log))
		both := []string{contoso.ID, fabrikam.ID}

		// Bea is stale; Cal, who never signed in, when created before the
		// cutoff.
		stale := 1
		if simgraph.CreatedDateTime(identityWorld().Users[3], simNow).Before(simNow.AddDate(0, 0, -90)) {
			stale++
		}
		before := keptReads(t, st, both)
		if want := keptReads(t, directory.NewStore(f.db), both); before != want {
			t.Fatalf("first read:\n%s\nwant, as a new store reads:\n%s", before, want)
		}
		if !strings.Contains(before, fmt.Sprintf(`"Stale": %d,`, stale)) || !strings.Contains(before, "Rory Root") {
			t.Fatalf("first read lacks the fixture's figures:\n%s", before)
		}
		if len(ofData(log.take())) == 0 {
			t.Fatal("the first read ran no query of the directories")
		}
		latest, _ := st.Latest(ctx, both)
		latest[0].TotalUsers = -1
		rows, _, _ := st.Users(ctx, directory.Page{TenantIDs: both, SortBy: "display_name", Limit: 10}, directory.UserFilter{Guests: true})
		rows[0].DisplayName = "changed"
		trend, _ := st.Trend(ctx, both, "2026-12-01")
		trend[0].TotalUsers = -1
		if got := keptReads(t, st, both); got != before {
			t.Fatalf("after changing returned values:\n%s\nwant\n%s", got, before)
		}
		if data := ofData(log.take()); len(data) != 0 {
			t.Fatalf("read again at the same revision, the store ran %q; want only the revision's reads", data)
		}

		for _, q := range []string{
			"UPDATE identity_snapshots SET mfa_users = 0, total_users = total_users + 1",
			"UPDATE identity_users SET account_enabled = FALSE, mfa_registered = TRUE",
			"DELETE FROM identity_role_members WHERE role_name <> 'Global Administrator'",
		} {
			if _, err := f.db.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		now := keptReads(t, directory.NewStore(f.db), both)
		if now == before || !strings.Contains(now, `"Stale": 0,`) {
			t.Fatalf("the changes behind the store's back changed no read; the test proves nothing:\n%s", now)
		}
		if got := keptReads(t, st, both); got != before {
			t.Fatalf("read again at the same revision:\n%s\nwant what was kept:\n%s", got, before)
		}
		if err := revcache.Bump(ctx, f.db, directory.RevisionTable, fabrikam.ID); err != nil {
			t.Fatal(err)
		}
		if got := keptReads(t, st, both); got != now {
			t.Fatalf("after fabrikam's revision rose:\n%s\nwant as stored now:\n%s", got, now)
		}
	})
}

// TestReplaceThroughAnotherStoreIsSeen: on both databases, a Replace
// through a second Store on the same database (another replica's sync)
// raises the revision of the tenant it replaces: the first Store's next
// reads of that tenant, alone or with another, are the database's, while
// its reads of the other tenant alone are still answered from what it
// kept. The dashboard card, served from the first Store, shows the new
// figures, and read again runs one query: the revision's.
func TestReplaceThroughAnotherStoreIsSeen(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		f := start(t, dialect, identityWorld(), nil)
		f.mustRun(t)
		log := &queryLog{}
		st := directory.NewStore(f.db.WithQueryHook(log))
		f.handlers.Store = st
		card := func() string {
			t.Helper()
			code, body := f.do(t, directory.StatsFragmentPath+"?tenant_id="+contoso.ID, admin)
			if code != http.StatusOK {
				t.Fatalf("card: %d %s", code, body)
			}
			return string(body)
		}
		sets := [][]string{{contoso.ID}, {fabrikam.ID}, {contoso.ID, fabrikam.ID}}
		kept := map[int]string{}
		for i, tenants := range sets {
			kept[i] = keptReads(t, st, tenants)
		}
		first := card()
		if !strings.Contains(first, "MFA coverage, 3 of 5 enabled members") {
			t.Fatalf("contoso's card: %s", first)
		}
		log.take()
		if again := card(); again != first {
			t.Fatalf("the card read again: %s\nwant %s", again, first)
		}
		if q := log.take(); len(q) != 1 || len(ofData(q)) != 0 {
			t.Fatalf("the card read again ran %q; want the revision's read alone", q)
		}

		at := simNow.Add(time.Hour)
		signedIn := simNow.AddDate(0, 0, -200)
		replica := directory.NewStore(f.db)
		err := replica.Replace(ctx, contoso.ID, &directory.Directory{Users: []directory.User{
			{TenantID: contoso.ID, UserID: "u-new", DisplayName: "Nia New", UserType: "Member", AccountEnabled: true,
				MFARegistered: true, LastSignIn: signedIn, SyncedAt: at},
			{TenantID: contoso.ID, UserID: "u-old", DisplayName: "Oto Old", UserType: "Guest", AccountEnabled: true,
				LastSignIn: signedIn, SyncedAt: at},
		}}, at)
		if err != nil {
			t.Fatal(err)
		}
		for i, tenants := range sets {
			got, want := keptReads(t, st, tenants), keptReads(t, directory.NewStore(f.db), tenants)
			if got != want {
				t.Fatalf("%v after the replica's Replace:\n%s\nthe database has:\n%s", tenants, got, want)
			}
			if changed := got != kept[i]; changed != slices.Contains(tenants, contoso.ID) {
				t.Fatalf("%v after contoso's Replace: changed %v\n%s", tenants, changed, got)
			}
		}
		log.take()
		keptReads(t, st, []string{fabrikam.ID})
		if data := ofData(log.take()); len(data) != 0 {
			t.Fatalf("fabrikam's reads after contoso's Replace ran %q; want only the revision's reads", data)
		}
		if got := card(); !strings.Contains(got, "MFA coverage, 1 of 1 enabled members") || !strings.Contains(got, "Stale accounts") ||
			!strings.Contains(between(t, got, "Stale accounts", "no sign-in"), ">2<") {
			t.Fatalf("contoso's card after the Replace: %s", got)
		}
	})
}

// TestStaleCountIsUsersCount: on both databases, StaleCount counts what
// Users selects with the same StaleBefore, at cutoffs one microsecond and
// one nanosecond around each account's last sign-in or creation (some
// stored to the microsecond, one given to the nanosecond), an hour's
// start and end, and past the hours it has kept; and it reads the
// database once per hour of cutoffs.
func TestStaleCountIsUsersCount(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		f := start(t, dialect, identityWorld(), nil)
		hour := time.Date(2026, 9, 16, 10, 0, 0, 0, time.UTC)
		at := simNow
		type account struct {
			enabled          bool
			signedIn, create time.Time
		}
		accounts := []account{
			{true, hour.Add(17*time.Minute + 3123456*time.Microsecond), time.Time{}},
			{true, hour.Add(17*time.Minute + 3123456789*time.Nanosecond), hour.Add(-time.Hour)},
			{true, time.Time{}, hour.Add(42 * time.Minute)},
			{true, time.Time{}, hour.Add(17*time.Minute + 3123456*time.Microsecond)},
			{true, hour, time.Time{}},
			{true, hour.Add(-time.Microsecond), time.Time{}},
			{true, hour.Add(time.Hour - time.Microsecond), time.Time{}},
			{true, hour.Add(2 * time.Hour), time.Time{}},
			{true, hour.AddDate(0, 0, -30), time.Time{}},
			{false, hour.Add(5 * time.Minute), time.Time{}},
			{true, time.Time{}, time.Time{}},
		}
		d := &directory.Directory{}
		var cutoffs []time.Time
		for i, a := range accounts {
			d.Users = append(d.Users, directory.User{TenantID: contoso.ID, UserID: fmt.Sprintf("u%02d", i), UserType: "Member",
				AccountEnabled: a.enabled, LastSignIn: a.signedIn, Created: a.create, SyncedAt: at})
			for _, e := range []time.Time{a.signedIn, a.create} {
				if e.IsZero() {
					continue
				}
				for _, off := range []time.Duration{-time.Microsecond, -time.Nanosecond, 0, time.Nanosecond, 500 * time.Nanosecond, time.Microsecond} {
					cutoffs = append(cutoffs, e.Truncate(time.Microsecond).Add(off))
				}
			}
		}
		cutoffs = append(cutoffs, hour.Add(-time.Nanosecond), hour.Add(time.Hour-time.Nanosecond), hour.Add(time.Hour), hour.Add(90*time.Minute))
		if err := f.store.Replace(ctx, contoso.ID, d, at); err != nil {
			t.Fatal(err)
		}

		log := &queryLog{}
		st := directory.NewStore(f.db.WithQueryHook(log))
		tenants := []string{contoso.ID}
		hours := map[time.Time]bool{}
		for _, c := range cutoffs {
			got, err := st.StaleCount(ctx, tenants, c)
			if err != nil {
				t.Fatal(err)
			}
			_, want, err := f.store.Users(ctx, directory.Page{TenantIDs: tenants, SortBy: "last_sign_in", Limit: 1}, directory.UserFilter{StaleBefore: c})
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("stale at %s: %d, Users counts %d", c.Format(time.RFC3339Nano), got, want)
			}
			hours[c.Truncate(time.Microsecond).Truncate(time.Hour)] = true
		}
		if data := ofData(log.take()); len(data) != 2*len(hours) {
			t.Fatalf("%d cutoffs in %d hours ran %d queries of the users; want two an hour", len(cutoffs), len(hours), len(data))
		}
	})
}

// TestConcurrentReplacesTakeTurns: on both databases, syncs replacing one
// tenant's directory at the same time (a scheduled run and a manual one,
// or two replicas) all succeed, and one sync's directory remains with its
// snapshot.
func TestConcurrentReplacesTakeTurns(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		f := start(t, dialect, identityWorld(), nil)
		dir := func(i int) *directory.Directory {
			d := &directory.Directory{}
			for u := range 5 {
				d.Users = append(d.Users, directory.User{TenantID: contoso.ID, UserID: fmt.Sprintf("u%d", u), DisplayName: fmt.Sprintf("Sync %d", i),
					UserType: "Member", AccountEnabled: true, SyncedAt: simNow})
			}
			d.Devices = []directory.Device{{TenantID: contoso.ID, DeviceID: "d1", ComplianceState: "compliant"}}
			return d
		}
		if err := f.store.Replace(ctx, contoso.ID, dir(0), simNow); err != nil {
			t.Fatal(err)
		}
		const syncs = 8
		errs := make(chan error, syncs)
		for i := range syncs {
			go func() { errs <- directory.NewStore(f.db).Replace(ctx, contoso.ID, dir(i+1), simNow) }()
		}
		for range syncs {
			if err := <-errs; err != nil {
				t.Errorf("a concurrent Replace failed: %v", err)
			}
		}
		var names []string
		if err := f.db.NewSelect().Model((*directory.User)(nil)).Distinct().Column("display_name").Scan(ctx, &names); err != nil || len(names) != 1 {
			t.Fatalf("users of syncs %v (%v), want one sync's", names, err)
		}
		if n := count(t, f, (*directory.User)(nil), contoso.ID); n != 5 {
			t.Fatalf("%d users stored, want one sync's 5", n)
		}
		if snaps := f.snapshots(t); len(snaps) != 1 || snaps[0].TotalUsers != 5 || snaps[0].Devices != 1 {
			t.Fatalf("snapshots %+v, want one of 5 users and a device", snaps)
		}
	})
}
