package coverage_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// TestFrameworksDataset: the compliance_frameworks dataset gives each
// synced tenant's coverage of each framework, counted as the fixture's
// comments work it out, and nothing for a tenant that never synced.
func TestFrameworksDataset(t *testing.T) {
	set := acmeSet(t)
	each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		db := storetest.Open(t, dialect)
		if _, err := store.Migrate(ctx, db, states.Migrations(), "compliance_migrations"); err != nil {
			t.Fatal(err)
		}
		st := &states.Store{DB: db}
		for tenant, list := range fixtureStates {
			put(t, st, tenant, list)
			if _, err := st.Finish(ctx, tenant, []string{"sub-" + tenant}, time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)); err != nil {
				t.Fatal(err)
			}
		}
		mapper, err := mapping.New(ctx, set)
		if err != nil {
			t.Fatal(err)
		}
		svc := &coverage.Service{Mapper: mapper, Store: st}
		h := plugintest.New(t, sdk.Definition{Name: "compliance"}, func(context.Context, struct{}, *sdk.Env) (*sdk.Plugin, error) {
			return &sdk.Plugin{Datasets: []sdk.Dataset{svc.Dataset()}}, nil
		}, plugintest.Options{Tenants: []sdk.Tenant{contoso, fabrikam}})

		read := func(tenants []string, params map[string]string) []coverage.Record {
			t.Helper()
			raw, err := h.ReadDataset(ctx, coverage.DatasetName, tenants, params)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]coverage.Record, len(raw))
			for i, r := range raw {
				if err := json.Unmarshal(r, &out[i]); err != nil {
					t.Fatal(err)
				}
			}
			return out
		}
		acme := map[string]string{"framework_id": "acme"}
		fifty, twoThirds := 50.0, 66.7
		want := map[string]coverage.Record{
			contoso.ID: {TenantID: contoso.ID, FrameworkID: "acme", FrameworkName: "Acme cloud baseline", Date: "2026-11-25", TotalControls: 6,
				CoveredControls: 3, CompliantControls: 1, PartialControls: 1, NotEvaluatedControls: 1, CoveragePercent: 50, CompliancePercent: &fifty},
			fabrikam.ID: {TenantID: fabrikam.ID, FrameworkID: "acme", FrameworkName: "Acme cloud baseline", Date: "2026-11-25", TotalControls: 6,
				CoveredControls: 3, CompliantControls: 2, NonCompliantControls: 1, CoveragePercent: 50, CompliancePercent: &twoThirds},
		}
		got := read([]string{contoso.ID, fabrikam.ID}, acme)
		if len(got) != 2 {
			t.Fatalf("records %+v", got)
		}
		for _, r := range got {
			w := want[r.TenantID]
			if r.CompliancePercent == nil || *r.CompliancePercent != *w.CompliancePercent {
				t.Errorf("%s compliance %v, want %v", r.TenantID, r.CompliancePercent, *w.CompliancePercent)
			}
			r.CompliancePercent, w.CompliancePercent = nil, nil
			if r != w {
				t.Errorf("record %+v, want %+v", r, w)
			}
		}
		if all := read([]string{contoso.ID}, nil); len(all) != len(set.All()) || all[0].TenantID != contoso.ID {
			t.Errorf("every framework of contoso: %d records, want %d", len(all), len(set.All()))
		}
		if none := read([]string{"t-never-synced"}, acme); len(none) != 0 {
			t.Errorf("a tenant that never synced has records %+v", none)
		}
	})
}
