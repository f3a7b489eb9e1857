package reports

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

const (
	tenantContoso  = "11111111-1111-4111-8111-111111111111"
	tenantFabrikam = "22222222-2222-4222-8222-222222222222"
)

// each runs fn on a migrated database of every dialect.
func each(t *testing.T, fn func(t *testing.T, st *Store)) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(context.Background(), db, Migrations(), "plugin_dmarc_migrations"); err != nil {
				t.Fatal(err)
			}
			fn(t, &Store{DB: db})
		})
	}
}

func mustParse(t testing.TB, name string) *Report {
	t.Helper()
	rep, err := parseBytes(sample(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// seed stores the three samples: Contoso's Google report and Fabrikam's
// Microsoft report of 20 November, and Northwind's Yahoo report of the
// 21st, filed under Contoso.
func seed(t testing.TB, st *Store) {
	t.Helper()
	at := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	for _, s := range []struct{ name, tenant string }{
		{"google-contoso-retail.xml", tenantContoso},
		{"microsoft-fabrikam-foods.xml", tenantFabrikam},
		{"yahoo-northwind-travel.xml", tenantContoso},
	} {
		if _, dup, err := st.Insert(context.Background(), mustParse(t, s.name), Meta{TenantID: s.tenant, Source: SourceUpload, FileName: s.name, SHA256: "x", ReceivedAt: at}); err != nil || dup {
			t.Fatalf("insert %s: duplicate %v, %v", s.name, dup, err)
		}
	}
}

var (
	nov20 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	nov21 = time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
)

func TestStoreInsertAndDuplicate(t *testing.T) {
	each(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		rep := mustParse(t, "google-contoso-retail.xml")
		at := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
		first, dup, err := st.Insert(ctx, rep, Meta{TenantID: tenantContoso, Source: SourceUpload, FileName: "a.xml", SHA256: "aa", ReceivedAt: at})
		if err != nil || dup || first.ID == 0 || first.Messages != 520 || first.Passed != 500 || first.Records != 4 {
			t.Fatalf("first insert %+v duplicate %v: %v", first, dup, err)
		}
		again, dup, err := st.Insert(ctx, rep, Meta{TenantID: tenantContoso, Source: SourceFolder, FileName: "b.xml.gz", SHA256: "bb", ReceivedAt: at.Add(time.Hour)})
		if err != nil || !dup || again.ID != first.ID || again.Source != SourceUpload || again.FileName != "a.xml" {
			t.Fatalf("duplicate insert %+v duplicate %v: %v", again, dup, err)
		}
		var reports, records int
		if err := st.DB.NewSelect().TableExpr("dmarc_reports").ColumnExpr("COUNT(*)").Scan(ctx, &reports); err != nil {
			t.Fatal(err)
		}
		if err := st.DB.NewSelect().TableExpr("dmarc_report_records").ColumnExpr("COUNT(*)").Scan(ctx, &records); err != nil {
			t.Fatal(err)
		}
		if reports != 1 || records != 4 {
			t.Errorf("%d reports and %d records after a duplicate, want 1 and 4", reports, records)
		}
		// The same report id from another tenant's domain is another report.
		if _, dup, err := st.Insert(ctx, rep, Meta{TenantID: tenantFabrikam, Source: SourceUpload, ReceivedAt: at}); err != nil || dup {
			t.Errorf("another tenant's insert: duplicate %v, %v", dup, err)
		}

		got, recs, err := st.Get(ctx, []string{tenantContoso}, first.ID)
		if err != nil || got.OrgName != "google.com" || !got.Begin.Equal(rep.Begin) || len(recs) != 4 {
			t.Fatalf("get %+v %d records: %v", got, len(recs), err)
		}
		if r := recs[1]; r.Seq != 2 || r.SourceIP != "2a01:111:f400:7e1b::50b" || r.Alignment != "dkim_only" || !r.Pass || r.Day != "2026-11-20" ||
			r.AuthDKIM != `[{"domain":"contoso-retail.example","selector":"selector2","result":"pass"}]` ||
			r.AuthSPF != `[{"domain":"bounces.mailer.example","result":"pass"}]` {
			t.Errorf("record 2 %+v", r)
		}
		if _, _, err := st.Get(ctx, []string{tenantFabrikam}, first.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("another tenant's report: %v", err)
		}
	})
}

// TestStoreInsertIsAtomic: a report whose records cannot be written
// leaves no report behind.
func TestStoreInsertIsAtomic(t *testing.T) {
	each(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		if _, err := st.DB.ExecContext(ctx, "DROP TABLE dmarc_report_records"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Insert(ctx, mustParse(t, "google-contoso-retail.xml"), Meta{TenantID: tenantContoso, Source: SourceUpload, ReceivedAt: time.Now()}); err == nil {
			t.Fatal("insert without a records table succeeded")
		}
		n, err := st.DB.NewSelect().TableExpr("dmarc_reports").Count(ctx)
		if err != nil || n != 0 {
			t.Errorf("%d reports after a failed insert (%v)", n, err)
		}
	})
}

func TestStoreList(t *testing.T) {
	each(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		seed(t, st)
		both := []string{tenantContoso, tenantFabrikam}
		for _, c := range []struct {
			name  string
			f     ReportFilter
			want  []string
			total int
		}{
			{"all newest first", ReportFilter{TenantIDs: both, Limit: 10, Desc: true}, []string{"Yahoo", "Enterprise Outlook", "google.com"}, 3},
			{"one tenant", ReportFilter{TenantIDs: []string{tenantFabrikam}, Limit: 10}, []string{"Enterprise Outlook"}, 1},
			{"a page", ReportFilter{TenantIDs: both, Limit: 1, Offset: 1, SortBy: "messages"}, []string{"Enterprise Outlook"}, 3},
			{"by domain", ReportFilter{TenantIDs: both, Limit: 10, Domain: "northwind-travel.example"}, []string{"Yahoo"}, 1},
			{"by org", ReportFilter{TenantIDs: both, Limit: 10, OrgName: "google.com"}, []string{"google.com"}, 1},
			{"from the 21st", ReportFilter{TenantIDs: both, Limit: 10, From: nov21}, []string{"Enterprise Outlook", "Yahoo"}, 2},
			{"to the 20th", ReportFilter{TenantIDs: both, Limit: 10, To: nov20, SortBy: "org_name"}, []string{"Enterprise Outlook", "google.com"}, 2},
			{"no tenants", ReportFilter{Limit: 10}, nil, 0},
		} {
			got, total, err := st.List(ctx, c.f)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var orgs []string
			for _, r := range got {
				orgs = append(orgs, r.OrgName)
			}
			if total != c.total || len(orgs) != len(c.want) || (len(orgs) > 0 && !equal(orgs, c.want)) {
				t.Errorf("%s: %v of %d, want %v of %d", c.name, orgs, total, c.want, c.total)
			}
		}
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestStoreStats: each grouping's figures, worked out by hand from the
// three samples.
func TestStoreStats(t *testing.T) {
	each(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		seed(t, st)
		both := StatsFilter{TenantIDs: []string{tenantContoso, tenantFabrikam}, From: nov20, To: nov21}
		for _, c := range []struct {
			groupBy string
			f       StatsFilter
			limit   int
			total   Rate
			groups  int
			want    []Rate
		}{
			{"day", both, 100, Rate{Messages: 945, Passed: 880}, 2,
				[]Rate{{"2026-11-20", 820, 760}, {"2026-11-21", 125, 120}}},
			{"source_ip", both, 3, Rate{Messages: 945, Passed: 880}, 8,
				[]Rate{{"192.0.2.33", 40, 0}, {"203.0.113.45", 22, 0}, {"198.51.100.7", 3, 0}}},
			{"header_from", both, 100, Rate{Messages: 945, Passed: 880}, 4,
				[]Rate{{"fabrikam-foods.example", 300, 260}, {"contoso-retail.example", 517, 500}, {"northwind-travel.example", 125, 120}, {"shop.contoso-retail.example", 3, 0}}},
			{"alignment", both, 100, Rate{Messages: 945, Passed: 880}, 4,
				[]Rate{{"none", 65, 0}, {"dkim_and_spf", 782, 782}, {"dkim_only", 88, 88}, {"spf_only", 10, 10}}},
			{"disposition", both, 100, Rate{Messages: 945, Passed: 880}, 3,
				[]Rate{{"quarantine", 40, 0}, {"reject", 25, 0}, {"none", 880, 880}}},
			{"day", StatsFilter{TenantIDs: []string{tenantContoso}, From: nov20, To: nov20}, 100, Rate{Messages: 520, Passed: 500}, 1,
				[]Rate{{"2026-11-20", 520, 500}}},
			{"disposition", StatsFilter{TenantIDs: both.TenantIDs, Domain: "northwind-travel.example", From: nov20, To: nov21}, 100, Rate{Messages: 125, Passed: 120}, 2,
				[]Rate{{"reject", 5, 0}, {"none", 120, 120}}},
			{"day", StatsFilter{TenantIDs: both.TenantIDs, From: nov21.AddDate(0, 0, 1), To: nov21.AddDate(0, 0, 5)}, 100, Rate{}, 0, nil},
			{"day", StatsFilter{From: nov20, To: nov21}, 100, Rate{}, 0, nil},
		} {
			got, err := st.Stats(ctx, c.f, c.groupBy, c.limit)
			if err != nil {
				t.Fatalf("%s: %v", c.groupBy, err)
			}
			if got.Total != c.total || got.Groups != c.groups || len(got.Items) != len(c.want) {
				t.Errorf("%s %+v: total %+v of %d groups, items %+v; want %+v of %d, %+v", c.groupBy, c.f, got.Total, got.Groups, got.Items, c.total, c.groups, c.want)
				continue
			}
			for i := range c.want {
				if got.Items[i] != c.want[i] {
					t.Errorf("%s item %d: %+v, want %+v", c.groupBy, i, got.Items[i], c.want[i])
				}
			}
		}

		days, err := st.PassRates(ctx, both.TenantIDs, nov20, nov21)
		if err != nil || len(days) != 2 || days[0].Day != "2026-11-20" || days[0].Failed != 60 || *days[0].PassPercent != 92.68 || *days[1].PassPercent != 96 {
			t.Errorf("pass rates %+v: %v", days, err)
		}
		sources, err := st.TopFailingSources(ctx, both.TenantIDs, nov20, nov21, 10)
		if err != nil || len(sources) != 3 || sources[1].SourceIP != "203.0.113.45" || sources[1].Failed != 22 || *sources[1].PassPercent != 0 {
			t.Errorf("top failing sources %+v: %v", sources, err)
		}
	})
}

// TestMigrationsRollBack: the reports' migrations, the mailboxes' and the
// sources' included, revert newest first and apply again.
func TestMigrationsRollBack(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, dialect)
			up, err := store.Migrate(ctx, db, Migrations(), "plugin_dmarc_migrations")
			if err != nil || len(up) != 3 {
				t.Fatalf("migrate: %v %v", up, err)
			}
			if down, err := store.Rollback(ctx, db, Migrations(), "plugin_dmarc_migrations"); err != nil || len(down) != 3 || down[0] != "0104_dmarc_record_sources" {
				t.Fatalf("rollback: %v %v", down, err)
			}
			if _, err := store.Migrate(ctx, db, Migrations(), "plugin_dmarc_migrations"); err != nil {
				t.Fatalf("migrate again: %v", err)
			}
		})
	}
}
