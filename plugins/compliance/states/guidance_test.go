package states_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/plugins/compliance/states"
)

// guidanceWorld is complianceWorld with p1's definition listed with its
// description and remediation; the others are served from their states,
// without either.
func guidanceWorld(remediation string) *world.World {
	w := complianceWorld()
	w.PolicyDefinitions = []world.PolicyDefinition{{ID: p1.id, DisplayName: p1.name, Description: "Private link keeps traffic off the internet.",
		Category: p1.category, Severity: "High", Remediation: remediation}}
	return w
}

// storedGuidance is every stored definition, by id.
func (f *fixture) storedGuidance(tb testing.TB) []states.Guidance {
	tb.Helper()
	var rows []states.Guidance
	if err := f.store.DB.NewSelect().Model(&rows).Order("policy_definition_id").Scan(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return rows
}

// TestSyncStoresGuidance: the sync reads each definition the tenants'
// states name through the policy definitions API and stores it once per
// id; a sync of a changed definition replaces its row, one of the same
// world leaves the rows as they were; a definition gone keeps its row;
// a failing read fails the tenant, whose states stay stored, without
// marking it fresh.
func TestSyncStoresGuidance(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, guidanceWorld("Approve a private endpoint connection on the storage account."))
		f.mustRun(t)
		at := simNow.Unix()
		want := []states.Guidance{
			{PolicyDefinitionID: p1.id, DisplayName: p1.name, Description: "Private link keeps traffic off the internet.", Category: p1.category,
				Remediation: "Approve a private endpoint connection on the storage account.", SyncedUnix: at},
			{PolicyDefinitionID: p2.id, DisplayName: p2.name, Category: p2.category, SyncedUnix: at},
			{PolicyDefinitionID: p3.id, DisplayName: p3.name, Category: p3.category, SyncedUnix: at},
			{PolicyDefinitionID: p4.id, DisplayName: p4.name, Category: p4.category, SyncedUnix: at},
		}
		if got := f.storedGuidance(t); !reflect.DeepEqual(got, want) {
			t.Fatalf("stored definitions\n got %+v\nwant %+v", got, want)
		}
		// One read per definition per tenant: Contoso's states name all
		// four, Fabrikam's p1 and p4.
		if hits := f.sim.Faults.Hits(cloudsim.ARM, "/providers/Microsoft.Authorization/policyDefinitions/"); hits != 6 {
			t.Errorf("%d definition reads, want 6", hits)
		}

		f.sim.SetWorld(guidanceWorld("Disable public network access and approve a private endpoint."))
		f.advance(t, time.Hour)
		f.mustRun(t)
		want[0].Remediation = "Disable public network access and approve a private endpoint."
		for i := range want {
			want[i].SyncedUnix = simNow.Add(time.Hour).Unix()
		}
		if got := f.storedGuidance(t); !reflect.DeepEqual(got, want) {
			t.Fatalf("after a change\n got %+v\nwant %+v", got, want)
		}
		f.mustRun(t)
		if got := f.storedGuidance(t); !reflect.DeepEqual(got, want) {
			t.Fatalf("the same world again changed the rows:\n%+v", got)
		}

		// p2's definition gone: its row stays, the sync succeeds.
		f.sim.Faults.Set(cloudsim.ARM, "/providers/Microsoft.Authorization/policyDefinitions/"+p2.id[strings.LastIndex(p2.id, "/")+1:],
			cloudsim.Fault{Status: 404})
		f.advance(t, time.Hour)
		f.mustRun(t)
		if got := f.storedGuidance(t); got[1].PolicyDefinitionID != p2.id || got[1].SyncedUnix != want[1].SyncedUnix || got[0].SyncedUnix == want[0].SyncedUnix {
			t.Fatalf("after p2's definition is gone %+v", got)
		}

		// Definitions failing past the retries: Contoso and Fabrikam
		// fail, keeping their states and figures, and are not fresh.
		f.sim.Faults.Clear()
		f.sim.Faults.Set(cloudsim.ARM, "/providers/Microsoft.Authorization/policyDefinitions/", cloudsim.Fault{Status: 500})
		statesBefore, guidanceBefore := f.stored(t), f.storedGuidance(t)
		marks := len(f.harness.FreshMarks())
		_, err := f.run(t)
		if err == nil || !strings.Contains(err.Error(), "Contoso") || !strings.Contains(err.Error(), "read policy definition") ||
			!strings.Contains(err.Error(), "500") {
			t.Fatalf("a failing definition read: %v", err)
		}
		if fresh := f.freshTenants(marks); len(fresh) != 0 {
			t.Errorf("fresh after failing definition reads: %v", fresh)
		}
		if got := f.stored(t); !reflect.DeepEqual(got, statesBefore) {
			t.Errorf("the states changed")
		}
		if got := f.storedGuidance(t); !reflect.DeepEqual(got, guidanceBefore) {
			t.Errorf("the definitions changed: %+v", got)
		}
	})
}
