package coverage

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/states"
)

// TestMergeDefinitions: on both databases, the definitions read per tenant
// and added up are those one aggregate over all the tenants returns: the
// counts summed, the group names united, the least name kept.
func TestMergeDefinitions(t *testing.T) {
	ctx := context.Background()
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(ctx, db, states.Migrations(), "compliance_migrations"); err != nil {
				t.Fatal(err)
			}
			st := &states.Store{DB: db}
			tenants := []string{"t1", "t2", "t3"}
			for i, tenant := range tenants {
				var list []states.State
				for r := range 4 + i {
					for d := range 3 {
						def := fmt.Sprintf("/providers/Microsoft.Authorization/policyDefinitions/d%d", (d+i)%4)
						compliance := "Compliant"
						if (r+d)%3 == 0 {
							compliance = "NonCompliant"
						}
						list = append(list, states.State{ResourceID: fmt.Sprintf("/subscriptions/s-%s/r%d", tenant, r), ResourceType: "t",
							PolicyAssignmentID: "a", PolicyDefinitionID: def, PolicyName: fmt.Sprintf("policy %d of %s", (d+i)%4, tenant),
							GroupNames: []string{fmt.Sprintf("G_%d", i), fmt.Sprintf("G_%d", d)}, ComplianceState: compliance,
							Severity: "Medium", EvaluatedAt: time.Now()})
					}
				}
				_, err := st.Replace(ctx, states.Target{TenantID: tenant, SubscriptionID: "s-" + tenant, SyncedAt: time.Now()},
					func(emit func(states.State) error) error {
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
			}
			want, err := st.DefinitionCounts(ctx, tenants)
			if err != nil {
				t.Fatal(err)
			}
			svc := &Service{Store: st}
			svc.init()
			parts, err := svc.tenantParts(ctx, tenants)
			if err != nil {
				t.Fatal(err)
			}
			if got := mergeDefinitions(parts); !reflect.DeepEqual(got, want) {
				t.Fatalf("merged per tenant:\n%+v\nover all tenants:\n%+v", got, want)
			}
			if len(want) != 4 {
				t.Fatalf("%d definitions, want 4", len(want))
			}
		})
	}
}
