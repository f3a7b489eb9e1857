package checks_test

import (
	"context"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/partner/checks"
)

// migrated opens a database of the dialect with the checks' migrations
// applied.
func migrated(t *testing.T, dialect string) *bun.DB {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, checks.Migrations(), "plugin_partner_migrations"); err != nil {
		t.Fatal(err)
	}
	return db
}

// put stores, through s, the tenant's assessment of the day at the
// maturity: two requirements of the status, one with a value.
func put(t *testing.T, s *checks.Store, tenant, day string, maturity float64, status string) {
	t.Helper()
	at, err := time.Parse(time.DateOnly, day)
	if err != nil {
		t.Fatal(err)
	}
	value, target := maturity*20, 90.0
	snap := checks.Snapshot{TenantID: tenant, Day: day, Maturity: maturity, TargetMaturity: 2, Requirements: 2, CheckedAt: at.Add(8 * time.Hour)}
	if status == checks.StatusMet {
		snap.Met = 2
	} else {
		snap.NotMet, snap.Gaps = 2, 2
	}
	rows := []checks.ResultRow{
		{TenantID: tenant, Day: day, RequirementID: "IAM-01", Category: "identity", Priority: "critical", PriorityRank: 1, Status: status,
			CheckStatus: status, Metric: "mfa_coverage", Value: &value, Target: &target},
		{TenantID: tenant, Day: day, RequirementID: "IR-01", Category: "incident_response", Priority: "medium", PriorityRank: 3, Status: status,
			CheckStatus: checks.CheckNone},
	}
	if err := s.Replace(context.Background(), snap, rows); err != nil {
		t.Fatal(err)
	}
}

// readAll runs, through s, each read the Store keeps (the latest
// snapshots, the results and the trend from 2026-11-24) for the tenants
// and prints their results, to compare.
func readAll(t *testing.T, s *checks.Store, tenants []string) string {
	t.Helper()
	ctx := context.Background()
	latest, latestN, err := s.Latest(ctx, tenants, checks.Window{Limit: 10, SortBy: "maturity"})
	if err != nil {
		t.Fatal(err)
	}
	f := checks.ResultFilter{Tenants: tenants, Requirements: []string{"IAM-01", "IR-01"}}
	results, resultsN, err := s.Results(ctx, f, checks.Window{Limit: 10, SortBy: "priority"})
	if err != nil {
		t.Fatal(err)
	}
	trend, err := s.Trend(ctx, tenants, "2026-11-24")
	if err != nil {
		t.Fatal(err)
	}
	// JSON follows the results' pointers to their values.
	return string(mustJSON(t, map[string]any{"latest": latest, "latest_total": latestN, "results": results, "results_total": resultsN, "trend": trend}))
}

// TestReadsKeptUntilARun: on both databases, the Store's latest
// snapshots, results and trend are read from the database once per
// revision of the tenants' assessments: rows changed behind its back,
// without raising the revision, leave them as they were, while a read
// never made (the trend from another day) reads the rows as they now
// are. An assessment stored through a second Store on the same database
// (another replica's run) raises the tenant's revision, so the first
// Store's next reads of it are the database's; the reads of the other
// tenant alone stay kept.
func TestReadsKeptUntilARun(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		db := migrated(t, dialect)
		st, replica := &checks.Store{DB: db}, &checks.Store{DB: db}
		fresh := func() *checks.Store { return &checks.Store{DB: db} }
		put(t, st, contoso.ID, "2026-11-24", 1.5, checks.StatusNotMet)
		put(t, st, contoso.ID, "2026-11-25", 2, checks.StatusNotMet)
		put(t, st, fabrikam.ID, "2026-11-25", 3, checks.StatusMet)
		both, fab := []string{contoso.ID, fabrikam.ID}, []string{fabrikam.ID}

		before, fabBefore := readAll(t, st, both), readAll(t, st, fab)
		if want := readAll(t, fresh(), both); before != want {
			t.Fatalf("first read:\n%s\nwant, as a fresh store reads:\n%s", before, want)
		}
		// The tenants in another order are the same read.
		if got := readAll(t, st, []string{fabrikam.ID, contoso.ID}); got != before {
			t.Fatalf("the tenants reordered:\n%s\nwant\n%s", got, before)
		}

		for _, stmt := range []string{"UPDATE partner_snapshots SET maturity = 4.5, met = 2", "UPDATE partner_results SET status = 'met', value = 99"} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		updated := readAll(t, fresh(), both)
		if updated == before {
			t.Fatal("the updates changed no read; the test proves nothing")
		}
		if got := readAll(t, st, both); got != before {
			t.Fatalf("read again at the same revision:\n%s\nwant what was kept:\n%s", got, before)
		}
		trend, err := st.Trend(ctx, both, "2026-11-25")
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh().Trend(ctx, both, "2026-11-25")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(mustJSON(t, trend)), string(mustJSON(t, want)); got != want || len(trend) != 2 || trend[0].Maturity != 4.5 {
			t.Fatalf("the trend from another day, never read: %s\nwant %s", got, want)
		}

		put(t, replica, contoso.ID, "2026-11-25", 2.5, checks.StatusMet)
		after := readAll(t, st, both)
		if want := readAll(t, fresh(), both); after != want {
			t.Fatalf("after another store's run of contoso:\n%s\nwant, as stored:\n%s", after, want)
		}
		if after == before || after == updated {
			t.Fatalf("the run changed no read: %s", after)
		}
		latest, _, err := st.Latest(ctx, []string{contoso.ID}, checks.Window{Limit: 1, SortBy: "maturity"})
		if err != nil || len(latest) != 1 || latest[0].Maturity != 2.5 {
			t.Fatalf("contoso's latest after its run: %+v, %v; want maturity 2.5", latest, err)
		}
		if got := readAll(t, st, fab); got != fabBefore {
			t.Fatalf("fabrikam alone after contoso's run:\n%s\nwant what was kept:\n%s", got, fabBefore)
		}
	})
}

// TestConcurrentReplacesTakeTurns: on both databases, runs storing one
// tenant's assessment of one day at the same time (a scheduled run and a
// manual one, or two replicas) all succeed, and one run's assessment
// remains.
func TestConcurrentReplacesTakeTurns(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		db := migrated(t, dialect)
		const runs = 8
		errs := make(chan error, runs)
		for i := range runs {
			go func() {
				snap := checks.Snapshot{TenantID: contoso.ID, Day: "2026-11-25", Maturity: float64(i) / 2, CheckedAt: time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)}
				rows := []checks.ResultRow{{TenantID: contoso.ID, Day: "2026-11-25", RequirementID: "IR-01", Status: checks.StatusMet}}
				errs <- (&checks.Store{DB: db}).Replace(context.Background(), snap, rows)
			}()
		}
		for range runs {
			if err := <-errs; err != nil {
				t.Errorf("a concurrent Replace failed: %v", err)
			}
		}
		for _, table := range []string{"partner_snapshots", "partner_results"} {
			if n, err := db.NewSelect().Table(table).Count(context.Background()); err != nil || n != 1 {
				t.Errorf("%s holds %d rows (%v), want one run's 1", table, n, err)
			}
		}
	})
}
