package regressions_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/frameworks"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/regressions"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

var fabrikam = sdk.Tenant{ID: "t-fabrikam", Name: "Fabrikam", IsActive: true}

// pPatch maps to acme's OP.2 by its keyword [patch] (coverage/testdata).
const pPatch = "/providers/Microsoft.Authorization/policyDefinitions/patch"

func patchState(res, compliance string) states.State {
	return states.State{ResourceID: "/subscriptions/f1/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/" + res,
		ResourceType: "Microsoft.Compute/virtualMachines", PolicyAssignmentID: "a9", PolicyDefinitionID: pPatch, PolicyDefinitionName: "patch",
		PolicyName: "Machines should have patches installed", Category: "General", ComplianceState: compliance, Severity: "Medium",
		EvaluatedAt: time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)}
}

// TestRegressionEvents: a tenant's first sync sets the baseline; a sync
// after which a passed control fails raises one compliance.regression
// event for it; a sync that changes nothing, or a control failing that
// failed already, raises nothing new; a control that passes again and
// fails again regresses again.
func TestRegressionEvents(t *testing.T) {
	set, err := frameworks.LoadDir(filepath.Join("..", "coverage", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(ctx, db, states.Migrations(), "compliance_migrations"); err != nil {
				t.Fatal(err)
			}
			mapper, err := mapping.New(ctx, set)
			if err != nil {
				t.Fatal(err)
			}
			st := &states.Store{DB: db}
			clock := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
			tracker := &regressions.Tracker{DB: db, Coverage: &coverage.Service{Mapper: mapper, Store: st}, Now: func() time.Time { return clock }}
			h := plugintest.New(t, sdk.Definition{Name: "compliance"}, func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
				tracker.Host, tracker.Logger = env.Host, env.Logger
				return &sdk.Plugin{Events: []sdk.EventType{regressions.EventType}}, nil
			}, plugintest.Options{Tenants: []sdk.Tenant{fabrikam}})
			sync := func(list ...states.State) {
				t.Helper()
				clock = clock.Add(4 * time.Hour)
				_, err := st.Replace(ctx, states.Target{TenantID: fabrikam.ID, SubscriptionID: "f1", SyncedAt: clock}, func(emit func(states.State) error) error {
					for _, s := range list {
						if err := emit(s); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := tracker.Track(ctx, fabrikam); err != nil {
					t.Fatal(err)
				}
			}
			sync(patchState("vm1", "Compliant"), patchState("vm2", "Compliant"))
			if got := h.Events(); len(got) != 0 {
				t.Fatalf("the first sync raised %+v", got)
			}
			sync(patchState("vm1", "NonCompliant"), patchState("vm2", "Compliant"))
			failedAt := clock
			sync(patchState("vm1", "NonCompliant"), patchState("vm2", "NonCompliant"))
			sync(patchState("vm1", "NonCompliant"), patchState("vm2", "NonCompliant"))
			got := h.Events()
			if len(got) != 1 {
				t.Fatalf("events %+v, want one for OP.2", got)
			}
			e := got[0]
			if e.Kind != regressions.EventRegression || e.Severity != "warning" || e.TenantID != fabrikam.ID || !strings.Contains(e.Title, "OP.2 now fails for Fabrikam") ||
				!strings.Contains(e.Message, "1 resources non-compliant, 1 compliant") || e.Link != "/compliance?tenant_id="+fabrikam.ID ||
				e.Details["framework_id"] != "acme" || e.Details["control_id"] != "OP.2" || !e.OccurredAt.Equal(failedAt) ||
				e.DedupeKey != fabrikam.ID+"/acme/OP.2/"+failedAt.Format(time.RFC3339Nano) {
				t.Errorf("event %+v", e)
			}
			sync(patchState("vm1", "Compliant"), patchState("vm2", "Compliant"))
			sync(patchState("vm1", "Compliant"), patchState("vm2", "NonCompliant"))
			if got := h.Events(); len(got) != 2 || got[1].Details["control_id"] != "OP.2" || !got[1].OccurredAt.Equal(clock) {
				t.Errorf("after passing and failing again: %+v", got)
			}
		})
	}
}
