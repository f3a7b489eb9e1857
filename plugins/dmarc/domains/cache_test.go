package domains_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/dmarc/domains"
	"github.com/stewardhq/steward/plugins/dmarc/posture"
)

// postureReads are every read the Store keeps under the tenants'
// revision, for one set of tenants.
type postureReads struct {
	Figures     []domains.TenantFigures
	Trend       []domains.DayScore
	Events      []domains.Event
	EventsTotal int
}

// trendFrom is where the trend the tests read starts.
var trendFrom = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// readPosture reads the tenants' kept reads from s.
func readPosture(t *testing.T, s *domains.Store, tenants ...string) postureReads {
	t.Helper()
	ctx := context.Background()
	var out postureReads
	var err error
	if out.Figures, err = s.Figures(ctx, tenants); err != nil {
		t.Fatal(err)
	}
	if out.Trend, err = s.Trend(ctx, tenants, trendFrom); err != nil {
		t.Fatal(err)
	}
	if out.Events, out.EventsTotal, err = s.Events(ctx, domains.EventFilter{TenantIDs: tenants, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkOf is a check of a domain that publishes the DMARC record, with a
// finding, scored as given.
func checkOf(domain, dmarc string, score int, grade string) posture.Result {
	rec, _ := posture.ParseDMARC(dmarc)
	return posture.Result{Domain: domain, DMARC: posture.DMARCResult{Present: true, Record: &rec}, Score: score, Grade: grade,
		Findings: []posture.Problem{{Code: "mx_missing", Severity: posture.SeverityLow, Message: "No MX."}}}
}

// migratedDB opens a database of the dialect with the domains' schema.
func migratedDB(t *testing.T, dialect string) *bun.DB {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, domains.Migrations(), "dmarc_migrations"); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestPostureReadsKeptUnderRevision: on both databases, the Store's
// figures, trend and events are read from the database once per
// revision: checks and events changed behind its back leave them as they
// were until a tenant's revision is raised, and what a caller does with a
// result does not change what is kept. Each write through a second Store
// on the same database (another replica's sync or an admin's request
// there) raises the revision of the tenant it changes, so the first
// Store's next reads are the database's; a directory sync that changes
// nothing leaves the revision as it was.
func TestPostureReadsKeptUnderRevision(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := migratedDB(t, dialect)
			st, replica := &domains.Store{DB: db}, &domains.Store{DB: db}
			fresh := func(tenants ...string) postureReads { return readPosture(t, &domains.Store{DB: db}, tenants...) }
			at := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)

			if _, err := st.SyncGraph(ctx, "t-a", []domains.GraphDomain{{Name: "a1.example", IsDefault: true}, {Name: "a2.example"}}, at); err != nil {
				t.Fatal(err)
			}
			if _, err := st.SyncGraph(ctx, "t-b", []domains.GraphDomain{{Name: "b1.example", IsDefault: true}}, at); err != nil {
				t.Fatal(err)
			}
			byName := map[string]domains.Domain{}
			for _, tenant := range []string{"t-a", "t-b"} {
				list, err := st.OfTenant(ctx, tenant)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range list {
					byName[d.Domain] = d
				}
			}
			record := func(s *domains.Store, name, dmarc string, score int, grade string, at time.Time) error {
				d := byName[name]
				_, err := s.Record(ctx, &d, checkOf(name, dmarc, score, grade), at)
				return err
			}
			for _, c := range []struct {
				name, dmarc string
				score       int
				grade       string
				at          time.Time
			}{
				{"a1.example", "v=DMARC1; p=reject", 90, "A", at},
				{"a2.example", "v=DMARC1; p=none", 40, "D", at},
				{"b1.example", "v=DMARC1; p=reject", 80, "B", at},
				// A weakening, for an event.
				{"a1.example", "v=DMARC1; p=none", 60, "C", at.Add(time.Hour)},
			} {
				if err := record(st, c.name, c.dmarc, c.score, c.grade, c.at); err != nil {
					t.Fatal(err)
				}
			}

			both := []string{"t-a", "t-b"}
			before := readPosture(t, st, both...)
			if len(before.Figures) != 2 || before.Figures[0].Grades["C"] != 1 || len(before.Trend) != 1 || before.EventsTotal != 1 {
				t.Fatalf("reads after the first checks: %+v", before)
			}
			// What a caller does with a result is its own.
			before.Figures[0].Domains = 0
			before.Figures[0].Grades["A"] = 99
			before.Trend[0].Checks = 0
			before.Events[0].Domain = "changed"
			before = readPosture(t, st, both...)
			if want := fresh(both...); !reflect.DeepEqual(before, want) {
				t.Fatalf("after changing returned values: %+v\nfrom the database: %+v", before, want)
			}

			for _, stmt := range []string{"UPDATE dmarc_domains SET score = 0, grade = 'F'", "DELETE FROM dmarc_history", "DELETE FROM dmarc_events"} {
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					t.Fatal(err)
				}
			}
			now := fresh(both...)
			if reflect.DeepEqual(now, before) {
				t.Fatal("changing the tables changed no read; the test proves nothing")
			}
			if got := readPosture(t, st, both...); !reflect.DeepEqual(got, before) {
				t.Fatalf("read again at the same revision: %+v, want what was kept: %+v", got, before)
			}
			if got, want := readPosture(t, st, "t-b"), fresh("t-b"); !reflect.DeepEqual(got, want) {
				t.Fatalf("t-b alone, never read: %+v, want %+v", got, want)
			}
			if err := revcache.Bump(ctx, db, domains.RevisionTable, "t-a"); err != nil {
				t.Fatal(err)
			}
			if got := readPosture(t, st, both...); !reflect.DeepEqual(got, now) {
				t.Fatalf("after t-a's revision was raised: %+v, want as stored now: %+v", got, now)
			}

			steps := []struct {
				name   string
				tenant string
				// same is set for a write no kept read shows.
				same  bool
				write func() error
			}{
				{name: "a check of a2", tenant: "t-a", write: func() error {
					return record(replica, "a2.example", "v=DMARC1; p=reject", 95, "A", at.Add(2*time.Hour))
				}},
				{name: "a weakening of b1", tenant: "t-b", write: func() error {
					return record(replica, "b1.example", "v=DMARC1; p=none", 30, "F", at.Add(3*time.Hour))
				}},
				{name: "a directory domain added", tenant: "t-b", write: func() error {
					_, err := replica.SyncGraph(ctx, "t-b", []domains.GraphDomain{{Name: "b1.example", IsDefault: true}, {Name: "b2.example"}}, at)
					return err
				}},
				{name: "the default domain moved", tenant: "t-b", same: true, write: func() error {
					_, err := replica.SyncGraph(ctx, "t-b", []domains.GraphDomain{{Name: "b1.example"}, {Name: "b2.example", IsDefault: true}}, at)
					return err
				}},
				{name: "a directory domain gone", tenant: "t-b", write: func() error {
					_, err := replica.SyncGraph(ctx, "t-b", []domains.GraphDomain{{Name: "b1.example"}}, at)
					return err
				}},
				{name: "an admin's domain added", tenant: "t-a", write: func() error {
					d := &domains.Domain{TenantID: "t-a", Domain: "extra.example", CreatedAt: at}
					if err := replica.Add(ctx, d); err != nil {
						return err
					}
					byName[d.Domain] = *d
					return nil
				}},
				{name: "a check of the admin's domain", tenant: "t-a", write: func() error {
					return record(replica, "extra.example", "v=DMARC1; p=quarantine", 70, "C", at.Add(4*time.Hour))
				}},
				{name: "selectors set", tenant: "t-a", same: true, write: func() error {
					found, err := replica.SetSelectors(ctx, byName["extra.example"].ID, []string{"s1"})
					if err == nil && !found {
						t.Fatal("extra.example not found to set its selectors")
					}
					return err
				}},
				{name: "the admin's domain deleted", tenant: "t-a", write: func() error {
					d := byName["extra.example"]
					deleted, err := replica.Delete(ctx, &d)
					if err == nil && !deleted {
						t.Fatal("extra.example not deleted")
					}
					return err
				}},
			}
			sets := [][]string{both, {"t-a"}, {"t-b"}}
			for _, step := range steps {
				// Every set's reads are kept before the write.
				prev := make([]postureReads, len(sets))
				for i, set := range sets {
					prev[i] = readPosture(t, st, set...)
				}
				revBefore, err := revcache.Read(ctx, db, domains.RevisionTable, []string{step.tenant})
				if err != nil {
					t.Fatal(err)
				}
				if err := step.write(); err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				revAfter, err := revcache.Read(ctx, db, domains.RevisionTable, []string{step.tenant})
				if err != nil {
					t.Fatal(err)
				}
				if revAfter == revBefore {
					t.Fatalf("%s: %s's revision stayed %s", step.name, step.tenant, revAfter)
				}
				changed := false
				for i, set := range sets {
					got, want := readPosture(t, st, set...), fresh(set...)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s: %v read %+v, the database has %+v", step.name, set, got, want)
					}
					changed = changed || !reflect.DeepEqual(got, prev[i])
				}
				if changed == step.same {
					t.Fatalf("%s: reads changed %v, want %v", step.name, changed, !step.same)
				}
			}

			// A directory sync that finds the directory as it was writes
			// nothing, and leaves what is kept in use.
			revBefore, err := revcache.Read(ctx, db, domains.RevisionTable, []string{"t-b"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := replica.SyncGraph(ctx, "t-b", []domains.GraphDomain{{Name: "b1.example"}}, at); err != nil {
				t.Fatal(err)
			}
			if revAfter, err := revcache.Read(ctx, db, domains.RevisionTable, []string{"t-b"}); err != nil || revAfter != revBefore {
				t.Fatalf("an unchanged directory raised t-b's revision from %s to %s (%v)", revBefore, revAfter, err)
			}

			// A trend from another day is another read, at any revision.
			if trend, err := st.Trend(ctx, both, at.AddDate(0, 0, 1)); err != nil || len(trend) != 0 {
				t.Fatalf("the trend from the day after the checks: %+v (%v), want none", trend, err)
			}
		})
	}
}
