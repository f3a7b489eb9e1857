package states_test

import (
	"context"
	"fmt"
	"io/fs"
	"reflect"
	"testing"
	"testing/fstest"

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
			putStates(t, s, tenant, sub, list...)
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
		revision := func(tenants ...string) string {
			t.Helper()
			r, err := s.Revision(ctx, tenants)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		before, beforeT2 := revision("t1", "t2"), revision("t2")
		if again := revision("t2", "t1"); again != before {
			t.Errorf("revision %s, then %s with nothing changed", before, again)
		}
		// A second subscription of t1 adds its resources; dropping it at
		// the end of a sync drops them again.
		put("t1", "s3", st("a1", p1, r4, "NonCompliant", "SOC_2_CC6.1"))
		afterPut := revision("t1", "t2")
		if afterPut == before || revision("t2") != beforeT2 {
			t.Errorf("revisions after t1's sync: %s (was %s), t2's %s (was %s)", afterPut, before, revision("t2"), beforeT2)
		}
		got, err = s.DefinitionCounts(ctx, []string{"t1"})
		if err != nil || len(got) != 2 || got[0].NonCompliant != 2 || got[0].Compliant != 2 {
			t.Errorf("t1 with s3: %+v %v", got, err)
		}
		if _, err := s.Finish(ctx, "t1", []string{"s1"}, simNow); err != nil {
			t.Fatal(err)
		}
		got, err = s.DefinitionCounts(ctx, []string{"t1"})
		if err != nil || len(got) != 2 || got[0].NonCompliant != 1 || got[0].Compliant != 2 {
			t.Errorf("t1 after s3 was dropped: %+v %v", got, err)
		}
		if r := revision("t1", "t2"); r == afterPut {
			t.Errorf("revision %s unchanged by dropping a subscription", r)
		}
		// Replacing a subscription replaces its counts.
		put("t2", "s2", st("a9", p3, r6, "NonCompliant"))
		got, err = s.DefinitionCounts(ctx, []string{"t2"})
		if want := []states.DefinitionCount{{PolicyDefinitionID: p3.id, PolicyName: p3.name, GroupNames: []string{}, NonCompliant: 1}}; err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("t2 replaced: %+v %v", got, err)
		}
		for _, tenants := range [][]string{nil, {"t3"}} {
			if got, err := s.DefinitionCounts(ctx, tenants); err != nil || got == nil || len(got) != 0 {
				t.Errorf("tenants %v: %+v %v, want none", tenants, got, err)
			}
		}
	})
}

// TestDefinitionCountsMigration: the migration that adds the definition
// counts fills them from the states already stored.
func TestDefinitionCountsMigration(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		db := storetest.Open(t, dialect)
		first := fstest.MapFS{}
		all := states.Migrations()
		names, err := fs.Glob(all, "0001_*")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			raw, err := fs.ReadFile(all, name)
			if err != nil {
				t.Fatal(err)
			}
			first[name] = &fstest.MapFile{Data: raw}
		}
		if _, err := store.Migrate(ctx, db, first, "compliance_migrations"); err != nil {
			t.Fatal(err)
		}
		for i, row := range []struct{ res, groups, state string }{
			{r1, `["SOC_2_CC6.1"]`, "NonCompliant"}, {r2, `["ACME_DP.1"]`, "Compliant"}, {r3, `[]`, "Unknown"},
		} {
			rank := map[string]int{"NonCompliant": 2, "Compliant": 1, "Unknown": 0}[row.state]
			_, err := db.ExecContext(ctx, `INSERT INTO compliance_policy_states (tenant_id, subscription_id, resource_id, resource_type,
				policy_assignment_id, policy_definition_id, policy_definition_name, policy_name, category, group_names, compliance_state,
				state_rank, severity, severity_rank, evaluated_unix) VALUES ('t1', 's1', ?, '', ?, ?, '', ?, '', ?, ?, ?, 'Medium', 2, 0)`,
				row.res, fmt.Sprintf("a%d", i), p1.id, p1.name, row.groups, row.state, rank)
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := store.Migrate(ctx, db, all, "compliance_migrations"); err != nil {
			t.Fatal(err)
		}
		got, err := (&states.Store{DB: db}).DefinitionCounts(ctx, []string{"t1"})
		want := []states.DefinitionCount{{PolicyDefinitionID: p1.id, PolicyName: p1.name, GroupNames: []string{"ACME_DP.1", "SOC_2_CC6.1"}, Compliant: 1, NonCompliant: 1}}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("after the migration: %+v %v, want %+v", got, err, want)
		}
	})
}
