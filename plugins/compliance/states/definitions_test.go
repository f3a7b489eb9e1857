package states_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/states"
)

// TestDefinitionCounts: one row per distinct definition of the tenants
// asked for, with the union of its group names over its assignments and
// distinct resources by compliance (a resource under two assignments
// counts once; Exempt is compliant; Unknown neither).
func TestDefinitionCounts(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		db := storetest.Open(t, dialect)
		if _, err := store.Migrate(ctx, db, states.Migrations(), "compliance_migrations"); err != nil {
			t.Fatal(err)
		}
		s := &states.Store{DB: db}
		put := func(tenant, sub string, list ...states.State) {
			t.Helper()
			_, err := s.Replace(ctx, states.Target{TenantID: tenant, SubscriptionID: sub, SyncedAt: simNow}, func(emit func(states.State) error) error {
				for _, v := range list {
					if err := emit(v); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		st := func(assignment string, p policy, res, compliance string, groups ...string) states.State {
			return states.State{ResourceID: res, PolicyAssignmentID: assignment, PolicyDefinitionID: p.id, PolicyName: p.name,
				GroupNames: groups, ComplianceState: compliance, EvaluatedAt: simNow}
		}
		put("t1", "s1",
			st("a1", p1, r1, "NonCompliant", "SOC_2_CC6.1", "NIST_CSF_v2.0_PR_DS_01"), st("a2", p1, r1, "NonCompliant", "SOC_2_CC6.1", "ACME_DP.1"),
			st("a1", p1, r2, "Compliant", "SOC_2_CC6.1", "NIST_CSF_v2.0_PR_DS_01"), st("a1", p1, r3, "Exempt", "SOC_2_CC6.1", "NIST_CSF_v2.0_PR_DS_01"),
			st("a1", p2, r1, "Unknown"),
		)
		put("t2", "s2", st("a9", p1, r6, "NonCompliant", "CIS_Azure_2.0.0_3.1"), st("a9", p3, r6, "Compliant"))

		got, err := s.DefinitionCounts(ctx, []string{"t1"})
		if err != nil {
			t.Fatal(err)
		}
		want := []states.DefinitionCount{
			{PolicyDefinitionID: p1.id, PolicyName: p1.name, GroupNames: []string{"ACME_DP.1", "NIST_CSF_v2.0_PR_DS_01", "SOC_2_CC6.1"}, Compliant: 2, NonCompliant: 1},
			{PolicyDefinitionID: p2.id, PolicyName: p2.name, GroupNames: []string{}},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("t1:\n%+v\nwant\n%+v", got, want)
		}
		got, err = s.DefinitionCounts(ctx, []string{"t1", "t2"})
		if err != nil {
			t.Fatal(err)
		}
		want[0].GroupNames = []string{"ACME_DP.1", "CIS_Azure_2.0.0_3.1", "NIST_CSF_v2.0_PR_DS_01", "SOC_2_CC6.1"}
		want[0].NonCompliant = 2
		want = append(want, states.DefinitionCount{PolicyDefinitionID: p3.id, PolicyName: p3.name, GroupNames: []string{}, Compliant: 1})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("t1 and t2:\n%+v\nwant\n%+v", got, want)
		}
		for _, tenants := range [][]string{nil, {"t3"}} {
			if got, err := s.DefinitionCounts(ctx, tenants); err != nil || got == nil || len(got) != 0 {
				t.Errorf("tenants %v: %+v %v, want none", tenants, got, err)
			}
		}
	})
}
