package freshness

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/migrations"
)

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

var domains = []string{"costs", "compliance", "resources"}

// eachDialect runs fn against a fresh, migrated database of every dialect
// that holds the given tenant ids.
func eachDialect(t *testing.T, tenantIDs []string, fn func(t *testing.T, s *Store)) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(ctx, db, migrations.FS, migrations.Table); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			for _, id := range tenantIDs {
				insertTenant(t, db, id)
			}
			fn(t, NewStore(db))
		})
	}
}

func insertTenant(t *testing.T, db *bun.DB, id string) {
	t.Helper()
	_, err := db.NewRaw("INSERT INTO tenants (id, name, directory_tenant_id) VALUES (?, ?, ?)",
		id, "tenant "+id, "dir-"+id).Exec(context.Background())
	if err != nil {
		t.Fatalf("insert tenant %s: %v", id, err)
	}
}

func mark(t *testing.T, s *Store, tenantID, domain string, age time.Duration) {
	t.Helper()
	if err := s.Mark(context.Background(), tenantID, domain, now.Add(-age)); err != nil {
		t.Fatalf("Mark(%s, %s): %v", tenantID, domain, err)
	}
}

func TestMapStaleRules(t *testing.T) {
	tenants := []Tenant{
		{ID: "t-fresh", Key: "Contoso"},
		{ID: "t-missing", Key: "Fabrikam"},
		{ID: "t-old", Key: "Northwind"},
		{ID: "t-edge", Key: "Tailspin"},
		{ID: "t-never", Key: "Woodgrove"},
	}
	ids := make([]string, len(tenants))
	for i, tn := range tenants {
		ids[i] = tn.ID
	}
	eachDialect(t, ids, func(t *testing.T, s *Store) {
		for _, id := range []string{"t-fresh", "t-missing", "t-old", "t-edge"} {
			mark(t, s, id, "costs", time.Hour)
			mark(t, s, id, "compliance", time.Hour)
		}
		mark(t, s, "t-fresh", "resources", 30*time.Minute)
		// t-missing never synced resources.
		mark(t, s, "t-old", "resources", 3*time.Hour)  // threshold 2h
		mark(t, s, "t-edge", "resources", 2*time.Hour) // exactly at the threshold
		// A domain nobody asked about must not matter.
		mark(t, s, "t-fresh", "partner", 1000*time.Hour)

		got, err := s.Map(context.Background(), tenants, domains, standard, now)
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			key           string
			stale         bool
			nilResources  bool
			resourcesTime time.Time
		}{
			{"Contoso", false, false, now.Add(-30 * time.Minute)},
			{"Fabrikam", true, true, time.Time{}},
			{"Northwind", true, false, now.Add(-3 * time.Hour)},
			{"Tailspin", false, false, now.Add(-2 * time.Hour)},
		}
		for _, tc := range cases {
			tf, ok := got[tc.key]
			if !ok {
				t.Errorf("%s missing from the map", tc.key)
				continue
			}
			if tf.Stale != tc.stale {
				t.Errorf("%s stale = %v, want %v", tc.key, tf.Stale, tc.stale)
			}
			res := tf.SyncedAt("resources")
			if tc.nilResources != (res == nil) || (res != nil && !res.Equal(tc.resourcesTime)) {
				t.Errorf("%s resources synced at %v, want %v", tc.key, res, tc.resourcesTime)
			}
			if c := tf.SyncedAt("costs"); c == nil || !c.Equal(now.Add(-time.Hour)) {
				t.Errorf("%s costs synced at %v", tc.key, c)
			}
		}
		never := got["Woodgrove"]
		if !never.Stale || len(never.Domains) != 3 {
			t.Errorf("tenant that never synced = %+v", never)
		}
		for _, d := range never.Domains {
			if d.SyncedAt != nil {
				t.Errorf("never-synced tenant has %s at %v", d.Domain, d.SyncedAt)
			}
		}
		if len(got) != len(tenants) {
			t.Errorf("map has %d tenants, want %d", len(got), len(tenants))
		}
	})
}

// A failed sync says why in Problems: a tenant never reached is stale with
// the failure's reason; one whose latest sync failed after a success stays
// fresh while its data is within the threshold, with the reason; a success
// after the failure clears it; only the latest failure is kept.
func TestMapFailures(t *testing.T) {
	tenants := []Tenant{{ID: "t-unreached", Key: "Northwind"}, {ID: "t-withdrawn", Key: "Contoso"}, {ID: "t-recovered", Key: "Fabrikam"}}
	eachDialect(t, []string{"t-unreached", "t-withdrawn", "t-recovered"}, func(t *testing.T, s *Store) {
		ctx := context.Background()
		fail := func(id string, age time.Duration, reason string) {
			t.Helper()
			if err := s.Fail(ctx, id, "costs", now.Add(-age), reason); err != nil {
				t.Fatalf("Fail(%s): %v", id, err)
			}
		}
		fail("t-unreached", 2*time.Minute, "an older reason")
		fail("t-unreached", time.Minute, "no subscription of its directory is visible: delegate it or grant consent")
		fail("t-unreached", 5*time.Minute, "an even older failure, reported late")
		for _, id := range []string{"t-withdrawn", "t-recovered"} {
			mark(t, s, id, "costs", time.Hour)
		}
		fail("t-withdrawn", 10*time.Minute, "consent withdrawn (AADSTS65001)")
		fail("t-recovered", 2*time.Hour, "ARM answered 503")

		got, err := s.Map(ctx, tenants, []string{"costs"}, standard, now)
		if err != nil {
			t.Fatal(err)
		}
		if f := got["Northwind"]; !f.Stale || f.Problems["costs"] != "never synced; the last sync failed at 2025-03-01T11:59:00Z: no subscription of its directory is visible: delegate it or grant consent" {
			t.Errorf("unreached tenant = %+v", f)
		}
		if f := got["Contoso"]; f.Stale || f.Problems["costs"] != "the last sync failed at 2025-03-01T11:50:00Z: consent withdrawn (AADSTS65001)" ||
			f.Domains[0].Failure != "consent withdrawn (AADSTS65001)" || f.Domains[0].FailedAt == nil || !f.Domains[0].FailedAt.Equal(now.Add(-10*time.Minute)) {
			t.Errorf("tenant whose consent was withdrawn = %+v", f)
		}
		if r := got["Contoso"].Redacted(); r.Problems != nil || r.Domains[0].Failure != "" || r.Domains[0].FailedAt != nil || got["Contoso"].Domains[0].Failure == "" {
			t.Errorf("redacted = %+v, and the original must keep its failure", r)
		}
		if f := got["Fabrikam"]; f.Stale || f.Problems != nil {
			t.Errorf("tenant that synced after its failure = %+v", f)
		}
		if err := s.Fail(ctx, "t-withdrawn", "costs", now, ""); err == nil {
			t.Error("Fail without a reason succeeded")
		}
		if err := s.Fail(ctx, "no-such-tenant", "costs", now, "x"); err == nil {
			t.Error("Fail for an unknown tenant succeeded")
		}
		long := strings.Repeat("é", 3000)
		fail("t-withdrawn", 0, long)
		got, err = s.Map(ctx, tenants, []string{"costs"}, standard, now)
		if p := got["Contoso"].Problems["costs"]; err != nil || len(p) > 2100 || !strings.HasSuffix(p, "…") || !utf8.ValidString(p) {
			t.Errorf("a long reason is kept as %d bytes (%v)", len(p), err)
		}
	})
}

func TestMapCustomThresholds(t *testing.T) {
	eachDialect(t, []string{"t1"}, func(t *testing.T, s *Store) {
		mark(t, s, "t1", "dmarc", 3*time.Hour)
		tenants := []Tenant{{ID: "t1", Key: "t1"}}
		for _, tc := range []struct {
			threshold time.Duration
			stale     bool
		}{{4 * time.Hour, false}, {2 * time.Hour, true}} {
			got, err := s.Map(context.Background(), tenants, []string{"dmarc"},
				map[string]time.Duration{"dmarc": tc.threshold}, now)
			if err != nil {
				t.Fatal(err)
			}
			if got["t1"].Stale != tc.stale {
				t.Errorf("threshold %v: stale = %v, want %v", tc.threshold, got["t1"].Stale, tc.stale)
			}
		}
	})
}

func TestMarkKeepsTheLatestTime(t *testing.T) {
	eachDialect(t, []string{"t1"}, func(t *testing.T, s *Store) {
		ctx := context.Background()
		tenants := []Tenant{{ID: "t1", Key: "t1"}}
		syncedAt := func() *time.Time {
			got, err := s.Map(ctx, tenants, []string{"costs"}, standard, now)
			if err != nil {
				t.Fatal(err)
			}
			return got["t1"].SyncedAt("costs")
		}
		steps := []struct {
			mark, want time.Time
		}{
			{now.Add(-2 * time.Hour), now.Add(-2 * time.Hour)},
			{now.Add(-5 * time.Hour), now.Add(-2 * time.Hour)}, // a late, older sync
			{now.Add(-time.Hour + 500*time.Millisecond), now.Add(-time.Hour + 500*time.Millisecond)},
			{now.Add(-time.Hour), now.Add(-time.Hour + 500*time.Millisecond)}, // older by a fraction of a second
			// A time in another zone is compared as an instant.
			{now.Add(-30 * time.Minute).In(time.FixedZone("UTC-8", -8*3600)), now.Add(-30 * time.Minute)},
		}
		for i, st := range steps {
			if err := s.Mark(ctx, "t1", "costs", st.mark); err != nil {
				t.Fatalf("step %d: Mark: %v", i, err)
			}
			if got := syncedAt(); got == nil || !got.Equal(st.want) {
				t.Errorf("step %d: synced at %v, want %v", i, got, st.want)
			}
		}
	})
}

func TestMarkRejectsBadInput(t *testing.T) {
	eachDialect(t, nil, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if err := s.Mark(ctx, "", "costs", now); err == nil {
			t.Error("Mark without tenant id succeeded")
		}
		if err := s.Mark(ctx, "t1", "", now); err == nil {
			t.Error("Mark without domain succeeded")
		}
		if err := s.Mark(ctx, "no-such-tenant", "costs", now); err == nil {
			t.Error("Mark for an unknown tenant succeeded")
		}
	})
}

func TestMapRejectsBadDomains(t *testing.T) {
	eachDialect(t, []string{"t1"}, func(t *testing.T, s *Store) {
		tenants := []Tenant{{ID: "t1", Key: "t1"}}
		if _, err := s.Map(context.Background(), tenants, []string{"costs", "dmarc"}, standard, now); err == nil ||
			!strings.Contains(err.Error(), `"dmarc"`) {
			t.Errorf("Map with a domain without threshold error = %v", err)
		}
		thresholds := map[string]time.Duration{"stale": time.Hour}
		if _, err := s.Map(context.Background(), tenants, []string{"stale"}, thresholds, now); err == nil {
			t.Error("Map accepted a domain named stale")
		}
		got, err := s.Map(context.Background(), nil, domains, standard, now)
		if err != nil || len(got) != 0 {
			t.Errorf("Map without tenants = %v, %v; want empty", got, err)
		}
	})
}

func TestJSONShape(t *testing.T) {
	costs := time.Date(2025, 3, 1, 10, 30, 0, 0, time.UTC)
	report := map[string]TenantFreshness{
		"Contoso": {
			Domains: []DomainFreshness{
				{Domain: "costs", SyncedAt: &costs},
				{Domain: "compliance"},
				{Domain: "resources"},
			},
			Stale: true,
		},
	}
	b, err := json.Marshal(report)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Contoso":{"costs":"2025-03-01T10:30:00Z","compliance":null,"resources":null,"stale":true}}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
	withProblems, err := json.Marshal(TenantFreshness{Stale: true, Problems: map[string]string{"costs": "never synced"}})
	if err != nil || string(withProblems) != `{"stale":true,"problems":{"costs":"never synced"}}` {
		t.Errorf("JSON with problems = %s, %v", withProblems, err)
	}
	empty, err := json.Marshal(TenantFreshness{})
	if err != nil || string(empty) != `{"stale":false}` {
		t.Errorf("JSON without domains = %s, %v", empty, err)
	}
}

// standard are thresholds of the kind the domain plugins declare.
var standard = map[string]time.Duration{"costs": 25 * time.Hour, "compliance": 5 * time.Hour, "resources": 2 * time.Hour, "identity": 25 * time.Hour}

func TestThresholds(t *testing.T) {
	kept := map[string]time.Duration{
		"resources": 2 * time.Hour,
		"partner":   12 * time.Hour,
		"dmarc":     0, // triggered only, no threshold: not judged
	}
	want := map[string]time.Duration{"resources": 2 * time.Hour, "partner": 12 * time.Hour}
	got := Thresholds(kept)
	if !maps.Equal(got, want) {
		t.Errorf("Thresholds = %v, want %v", got, want)
	}
	if d := Domains(got); !slices.Equal(d, []string{"partner", "resources"}) {
		t.Errorf("Domains = %v", d)
	}
	if got := Thresholds(nil); len(got) != 0 {
		t.Errorf("no job keeps a domain, yet %v are judged", got)
	}
}

// TestMapKeptUntilAWrite: Map keeps what it read until a Mark or Fail
// through any Store on the database raises the tenant's revision; a change
// that does not (here, an UPDATE behind the Store's back) is not read.
func TestMapKeptUntilAWrite(t *testing.T) {
	tenants := []Tenant{{ID: "t1", Key: "t1"}, {ID: "t2", Key: "t2"}}
	eachDialect(t, []string{"t1", "t2"}, func(t *testing.T, s *Store) {
		ctx := context.Background()
		syncedAt := func(what string) time.Time {
			t.Helper()
			got, err := s.Map(ctx, tenants, []string{"costs"}, standard, now)
			if err != nil {
				t.Fatal(err)
			}
			at := got["t1"].SyncedAt("costs")
			if at == nil {
				t.Fatalf("%s: t1 never synced", what)
			}
			return *at
		}
		mark(t, s, "t1", "costs", time.Hour)
		if got := syncedAt("first read"); !got.Equal(now.Add(-time.Hour)) {
			t.Fatalf("first read: %s", got)
		}
		if _, err := s.db.NewRaw("UPDATE data_freshness SET synced_at = ? WHERE tenant_id = ?", now.Add(-time.Minute), "t1").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if got := syncedAt("after an update that raised no revision"); !got.Equal(now.Add(-time.Hour)) {
			t.Fatalf("read again before a write: %s, want the kept %s", got, now.Add(-time.Hour))
		}
		other := NewStore(s.db)
		if err := other.Mark(ctx, "t1", "costs", now); err != nil {
			t.Fatal(err)
		}
		if got := syncedAt("after another Store's Mark"); !got.Equal(now) {
			t.Fatalf("after another Store's Mark: %s, want %s", got, now)
		}
		if err := other.Fail(ctx, "t2", "costs", now, "ARM answered 503"); err != nil {
			t.Fatal(err)
		}
		got, err := s.Map(ctx, tenants, []string{"costs"}, standard, now)
		if err != nil || got["t2"].Problems["costs"] == "" {
			t.Fatalf("after another Store's Fail: %+v, %v", got["t2"], err)
		}
	})
}
