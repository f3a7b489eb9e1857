package views_test

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/partner/catalogue"
	"github.com/stewardhq/steward/plugins/partner/checks"
	"github.com/stewardhq/steward/plugins/partner/evidence"
	"github.com/stewardhq/steward/plugins/partner/views"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

var (
	contoso  = sdk.Tenant{ID: "t-contoso", Name: "Contoso", IsActive: true}
	fabrikam = sdk.Tenant{ID: "t-fabrikam", Name: "Fabrikam", IsActive: true}

	admin     = sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: []string{contoso.ID, fabrikam.ID}}
	contosoer = sdk.Principal{ID: "uc", Kind: "user", TenantIDs: []string{contoso.ID}}
)

// The catalogue weighs 4 + 3 + 2 = 9. Contoso meets IAM-01 (MFA 96 %):
// 5 × 4/9 = 2.22; Fabrikam (MFA 50 %) meets nothing.
const config = `{"programme": {"partner": "Northwind Bank", "description": "Supplier security terms.", "deadline": "2026-12-20", "target_maturity": 2},
 "requirements": [
  {"id": "IAM-01", "title": "MFA for every account", "category": "identity", "priority": "critical", "check": {"metric": "mfa_coverage", "target": 90}},
  {"id": "DP-01", "title": "Baseline compliance", "category": "data_protection", "priority": "high", "check": {"metric": "compliance_score", "target": 85}},
  {"id": "IR-01", "title": "Incident response plan", "category": "incident_response", "priority": "medium"}]}`

type fixture struct {
	h        *plugintest.Harness
	db       *bun.DB
	now      time.Time
	evidence *evidence.Store
}

func start(t *testing.T, dialect string) *fixture {
	t.Helper()
	cat, err := catalogue.FromConfig(json.RawMessage(config))
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.Open(t, dialect)
	st := &checks.Store{DB: db}
	f := &fixture{db: db, now: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	clock := func() time.Time { return f.now }
	runner := &checks.Runner{Catalogue: cat, Store: st, Now: clock}
	reads := &checks.Handlers{Catalogue: cat, Store: st, Now: clock}
	f.evidence = &evidence.Store{DB: db}
	blobs, err := evidence.NewDir(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	ev := &evidence.Handlers{}
	v := &views.Handlers{Catalogue: cat, Store: st, Reads: reads, Evidence: ev, Now: clock}
	fragments, pages, nav := v.Views()
	pl := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		runner.Host, runner.Datasets, reads.Host, v.Host = env.Host, env.Host, env.Host, env.Host
		*ev = evidence.Handlers{Store: f.evidence, Blobs: blobs, Host: env.Host, Logger: env.Logger, Now: clock,
			Requirement: func(id string) bool { _, ok := cat.Requirement(id); return ok }}
		return &sdk.Plugin{Fragments: fragments, Pages: pages, Nav: nav, Routes: append(ev.Routes(), v.EvidenceRoutes()...),
			Jobs: []sdk.Job{{Name: "partner", JobType: checks.Domain, DataDomain: checks.Domain, Run: runner.Run}}}, nil
	}
	def := sdk.Definition{Name: "partner", Migrations: store.MergeMigrations(checks.Migrations(), evidence.Migrations())}
	f.h = plugintest.New(t, def, pl, plugintest.Options{Tenants: []sdk.Tenant{contoso, fabrikam},
		Datasets: map[string][]json.RawMessage{"identity_mfa": {
			json.RawMessage(`{"tenant_id": "t-contoso", "mfa_coverage_percentage": 96}`),
			json.RawMessage(`{"tenant_id": "t-fabrikam", "mfa_coverage_percentage": 50}`),
		}},
		Migrate: func(ctx context.Context, m fs.FS) error {
			_, err := store.Migrate(ctx, db, m, "plugin_partner_migrations")
			return err
		}})
	return f
}

func (f *fixture) view(t *testing.T, target string, p sdk.Principal) (int, string) {
	t.Helper()
	resp := f.h.Do(httptest.NewRequest(http.MethodGet, target, nil), p)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func contains(t *testing.T, what, body string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q: %s", what, w, body)
		}
	}
}

// TestPage: before a run the page shows the programme and says the
// assessment is coming; after it, the countdown, each tenant's maturity,
// the gaps critical first and each tenant's requirements; a tenant's user
// sees nothing of another tenant and is refused the page picked on it.
func TestPage(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := start(t, dialect)
			_, body := f.view(t, views.PagePath, admin)
			contains(t, "the page before a run", body, "Northwind Bank requirements", "20 Dec 2026", "25 days left", "No tenant has been assessed yet")
			if _, _, err := f.h.RunJob(context.Background(), "partner"); err != nil {
				t.Fatal(err)
			}
			code, body := f.view(t, views.PagePath, admin)
			if code != http.StatusOK {
				t.Fatalf("page: %d %s", code, body)
			}
			contains(t, "the admin's page", body, "Supplier security terms.", "Critical</span>25 days left", "2 of 5", "Maturity per tenant",
				"Contoso: OK, 44% used", "Fabrikam: Critical, 0% used", "2.22 of 5", "Gaps, most pressing first", "Requirements of Contoso",
				"Requirements of Fabrikam", "50 % (target 90 %)", "Awaiting evidence", "no plugin publishes dataset")
			if i, j := strings.Index(body, "Gaps, most pressing first"), strings.Index(body, "Requirements of Fabrikam"); i < 0 || j < i {
				t.Errorf("the gaps do not come before the requirement lists")
			}

			_, body = f.view(t, views.PagePath, contosoer)
			contains(t, "contoso's page", body, "Requirements of Contoso", "96 % (target 90 %)")
			if strings.Contains(body, "Fabrikam") || strings.Contains(body, "50 % (target") {
				t.Errorf("contoso's page shows fabrikam: %s", body)
			}
			if code, body := f.view(t, views.PagePath+"?tenant_id="+fabrikam.ID, contosoer); code != http.StatusForbidden || strings.Contains(body, "Fabrikam") {
				t.Errorf("contoso's user picking fabrikam: %d %s", code, body)
			}
			_, body = f.view(t, views.PagePath+"?tenant_id="+fabrikam.ID, admin)
			if strings.Contains(body, "Contoso") {
				t.Errorf("the page picked on fabrikam shows contoso: %s", body)
			}

			f.now = time.Date(2026, 12, 21, 9, 0, 0, 0, time.UTC)
			_, body = f.view(t, views.FragmentPath, contosoer)
			contains(t, "the card after the deadline", body, "passed 1 days ago", "Tenants at target maturity", "1 of 1", "Contoso")
		})
	}
}

// TestFragmentKeptUntilARun: on both databases, the dashboard's card reads
// the tenants' snapshots once per revision of their assessments: snapshots
// changed behind the store's back leave it as it was, while its countdown
// still counts from the time of each view; an assessment stored through
// another Store on the same database (another replica's run) is on the
// next view.
func TestFragmentKeptUntilARun(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			f := start(t, dialect)
			if _, _, err := f.h.RunJob(ctx, "partner"); err != nil {
				t.Fatal(err)
			}
			_, before := f.view(t, views.FragmentPath, admin)
			contains(t, "the card after the run", before, "25 days left", "1 of 2", "Contoso: OK, 44% used", "Fabrikam: Critical, 0% used")

			if _, err := f.db.ExecContext(ctx, "UPDATE partner_snapshots SET maturity = 5"); err != nil {
				t.Fatal(err)
			}
			if _, body := f.view(t, views.FragmentPath, admin); body != before {
				t.Fatalf("the card after an update that raised no revision:\n%s\nwant what was kept:\n%s", body, before)
			}
			f.now = f.now.AddDate(0, 0, 1)
			_, body := f.view(t, views.FragmentPath, admin)
			contains(t, "the card a day later", body, "24 days left", "1 of 2", "Contoso: OK, 44% used")

			snap := checks.Snapshot{TenantID: fabrikam.ID, Day: "2026-11-26", Maturity: 1, TargetMaturity: 2, Requirements: 3, Met: 1, NotMet: 2,
				Gaps: 2, CheckedAt: f.now}
			if err := (&checks.Store{DB: f.db}).Replace(ctx, snap, nil); err != nil {
				t.Fatal(err)
			}
			_, body = f.view(t, views.FragmentPath, admin)
			contains(t, "the card after another store's run", body, "Fabrikam: Warning, 20% used", "Contoso: OK, 100% used", "1 of 2")
		})
	}
}
