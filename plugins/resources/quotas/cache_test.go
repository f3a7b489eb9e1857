package quotas

import (
	"context"
	"fmt"
	"io/fs"
	"reflect"
	"testing"
	"testing/fstest"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

// quotaFigures are every read the Store keeps under the usages' revision,
// for one query.
type quotaFigures struct {
	Counts   Counts
	Overview Overview
	MostUsed []Usage
	Page     []Usage
	All      []Usage
	// Body is the quota list's body for Page's page.
	Body *List
}

// readFigures reads the query's figures from s.
func readFigures(t *testing.T, s *Store, q Query) quotaFigures {
	t.Helper()
	ctx := context.Background()
	var f quotaFigures
	var err error
	if f.Counts, err = s.Counts(ctx, q); err != nil {
		t.Fatal(err)
	}
	if f.Overview, err = s.Overview(ctx, q); err != nil {
		t.Fatal(err)
	}
	if f.MostUsed, err = s.MostUsed(ctx, q, 3); err != nil {
		t.Fatal(err)
	}
	if f.All, err = s.List(ctx, q); err != nil {
		t.Fatal(err)
	}
	page := q
	page.Limit, page.Offset = 2, 1
	if f.Page, err = s.List(ctx, page); err != nil {
		t.Fatal(err)
	}
	if f.Body, err = s.Page(ctx, page); err != nil {
		t.Fatal(err)
	}
	return f
}

// usagesOf are n compute usages of a tenant's subscription, the i-th at
// used of its limit of 100 plus i.
func usagesOf(tenant, sub string, n int, used float64, at time.Time) []Usage {
	var out []Usage
	for i := range n {
		out = append(out, Usage{TenantID: tenant, SubscriptionID: sub, Location: DefaultLocation, Provider: "compute",
			Name: fmt.Sprintf("q%d", i), CurrentValue: used + float64(i), Limit: 100, SyncedAt: at})
	}
	return out
}

// TestQuotaReadsKeptUnderRevision: on both databases, the Store's counts,
// overview, most used, pages and list bodies are read from the database once per
// revision: usages changed behind its back leave them as they were until
// the tenant's revision is raised. A Replace through a second Store on the
// same database (another replica's sync) raises the revision of the
// tenants whose usages it replaces or stores, so the first Store's next
// reads are the database's: new usages, usages gone, and a subscription
// moved to another tenant.
func TestQuotaReadsKeptUnderRevision(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := migrated(t, dialect)
			st, replica := NewStore(db), NewStore(db)
			at := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
			if err := st.Replace(ctx, "sub-a", DefaultLocation, "compute", usagesOf("t-a", "sub-a", 4, 10, at)); err != nil {
				t.Fatal(err)
			}
			q := Query{TenantIDs: []string{"t-a"}, Location: DefaultLocation}
			before := readFigures(t, st, q)
			if before.Counts.Total != 4 || before.Counts.OK != 4 || len(before.Page) != 2 || len(before.MostUsed) != 3 {
				t.Fatalf("figures after the first Replace: %+v", before)
			}
			// What a caller does with a result is its own.
			before.All[0].Name = "changed"
			before.MostUsed[0].Name = "changed"
			before.Overview.ByProvider["compute"] = Counts{}
			before = readFigures(t, st, q)
			if fresh := readFigures(t, NewStore(db), q); !reflect.DeepEqual(before, fresh) {
				t.Fatalf("after changing returned values: %+v\nfrom the database: %+v", before, fresh)
			}

			if _, err := db.ExecContext(ctx, "UPDATE resources_quota_usages SET current_value = 95"); err != nil {
				t.Fatal(err)
			}
			if got := readFigures(t, st, q); !reflect.DeepEqual(got, before) {
				t.Fatalf("read again at the same revision: %+v, want what was kept: %+v", got, before)
			}
			if err := revcache.Bump(ctx, db, RevisionTable, "t-a"); err != nil {
				t.Fatal(err)
			}
			if got := readFigures(t, st, q); got.Counts.Critical != 4 || got.Overview.ByProvider["compute"].Critical != 4 || got.MostUsed[0].CurrentValue != 95 ||
				got.Body.Summary.Critical != 4 || got.Body.Items[0].Health != HealthCritical {
				t.Fatalf("after the revision was raised: %+v, want 4 critical", got)
			}

			steps := []struct {
				name  string
				write func() error
			}{
				{"usages of another subscription", func() error {
					return replica.Replace(ctx, "sub-b", DefaultLocation, "compute", usagesOf("t-a", "sub-b", 3, 80, at.Add(time.Hour)))
				}},
				{"sub-a's usages gone", func() error { return replica.Replace(ctx, "sub-a", DefaultLocation, "compute", nil) }},
				{"sub-b moved to t-b", func() error {
					return replica.Replace(ctx, "sub-b", DefaultLocation, "compute", usagesOf("t-b", "sub-b", 2, 50, at.Add(2*time.Hour)))
				}},
			}
			for _, step := range steps {
				// Both tenants' figures are kept before the write.
				prev := map[string]quotaFigures{}
				for _, tenant := range []string{"t-a", "t-b"} {
					prev[tenant] = readFigures(t, st, Query{TenantIDs: []string{tenant}, Location: DefaultLocation})
				}
				if err := step.write(); err != nil {
					t.Fatal(err)
				}
				changed := false
				for _, tenant := range []string{"t-a", "t-b"} {
					tq := Query{TenantIDs: []string{tenant}, Location: DefaultLocation}
					got, want := readFigures(t, st, tq), readFigures(t, NewStore(db), tq)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s: %s read %+v, the database has %+v", step.name, tenant, got, want)
					}
					changed = changed || !reflect.DeepEqual(got, prev[tenant])
				}
				if !changed {
					t.Fatalf("%s: no figure changed", step.name)
				}
			}
			if c, _ := st.Counts(ctx, q); c.Total != 0 {
				t.Fatalf("t-a after its subscriptions left: %+v, want none", c)
			}
		})
	}
}

// TestConcurrentReplacesTakeTurns: on both databases, syncs replacing one
// subscription's usages at the same time (a scheduled run and a manual
// one, or two replicas) all succeed, and one sync's usages remain.
func TestConcurrentReplacesTakeTurns(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := migrated(t, dialect)
			at := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
			if err := NewStore(db).Replace(ctx, "sub-a", DefaultLocation, "compute", usagesOf("t-a", "sub-a", 5, 10, at)); err != nil {
				t.Fatal(err)
			}
			const syncs = 8
			errs := make(chan error, syncs)
			for i := range syncs {
				go func() {
					errs <- NewStore(db).Replace(ctx, "sub-a", DefaultLocation, "compute", usagesOf("t-a", "sub-a", 5, float64(20+i), at))
				}()
			}
			for range syncs {
				if err := <-errs; err != nil {
					t.Errorf("a concurrent Replace failed: %v", err)
				}
			}
			n, err := db.NewSelect().Table("resources_quota_usages").Count(ctx)
			if err != nil || n != 5 {
				t.Fatalf("%d usages stored (%v), want one sync's 5", n, err)
			}
		})
	}
}

// migrated opens a database of the dialect with the quotas' migrations
// applied.
func migrated(t *testing.T, dialect string) *bun.DB {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, Migrations(), "plugin_resources_migrations"); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestSubscriptionNameMigration applies the quotas' migrations before
// 0006, stores a usage as they shaped the table, then 0006: the usage
// reads with no subscription name until a sync gives it one, and the
// migration rolls back and applies again, on both databases.
func TestSubscriptionNameMigration(t *testing.T) {
	ctx := context.Background()
	before := fstest.MapFS{}
	err := fs.WalkDir(Migrations(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path >= "0006_" {
			return err
		}
		data, err := fs.ReadFile(Migrations(), path)
		before[path] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(ctx, db, before, "plugin_resources_migrations"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO resources_quota_usages (tenant_id, subscription_id, location, provider, name, current_value, limit_value, synced_at)
				VALUES ('t-a', 'sub-a', ?, 'compute', 'cores', 1, 10, ?)`, DefaultLocation, time.Now()); err != nil {
				t.Fatal(err)
			}
			if applied, err := store.Migrate(ctx, db, Migrations(), "plugin_resources_migrations"); err != nil || len(applied) != 1 {
				t.Fatalf("0006: %v, %v", applied, err)
			}
			st := NewStore(db)
			q := Query{TenantIDs: []string{"t-a"}, Location: DefaultLocation}
			if got, err := st.List(ctx, q); err != nil || len(got) != 1 || got[0].SubscriptionName != "" {
				t.Fatalf("a usage synced before the names: %+v, %v", got, err)
			}
			named := usagesOf("t-a", "sub-a", 1, 1, time.Now())
			named[0].SubscriptionName = "Production"
			if err := st.Replace(ctx, "sub-a", DefaultLocation, "compute", named); err != nil {
				t.Fatal(err)
			}
			if got, err := st.List(ctx, q); err != nil || len(got) != 1 || got[0].SubscriptionName != "Production" {
				t.Fatalf("after a sync with the name: %+v, %v", got, err)
			}
			if _, err := store.Rollback(ctx, db, Migrations(), "plugin_resources_migrations"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `SELECT subscription_name FROM resources_quota_usages`); err == nil {
				t.Fatal("the usages keep their subscription_name after the rollback")
			}
			if applied, err := store.Migrate(ctx, db, Migrations(), "plugin_resources_migrations"); err != nil || len(applied) != 1 {
				t.Fatalf("migrating again after the rollback: %v, %v", applied, err)
			}
		})
	}
}
