package states_test

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/states"
)

// TestSummaryKeptUnderRevision: the policy part of a summary is read once
// per revision of the tenants' states. A change behind the store's back
// (no revision raised) is not seen; a sync through another store on the
// same database, as another replica's would be, is seen at once; the
// extra sources are counted on every call.
func TestSummaryKeptUnderRevision(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		db := storetest.Open(t, dialect)
		if _, err := store.Migrate(ctx, db, states.Migrations(), "compliance_migrations"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `CREATE TABLE extra_findings (tenant_id TEXT NOT NULL, n INTEGER NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		extra := []states.FindingSource{{Name: states.SourceCustomRule, Select: func(db bun.IDB, tenants []string) *bun.SelectQuery {
			return db.NewSelect().Table("extra_findings").
				ColumnExpr("'x' AS finding_id, 'x' AS name, 'x' AS category, 2 AS severity_rank").
				ColumnExpr("n AS non_compliant_count, 0 AS compliant_count, 1 AS tenant_count, '[]' AS group_names, 0 AS last_evaluated_unix").
				Where("tenant_id IN (?)", bun.List(tenants))
		}}}
		st := func(p policy, res, compliance string) states.State {
			return states.State{ResourceID: res, PolicyAssignmentID: "a1", PolicyDefinitionID: p.id, PolicyName: p.name,
				Category: p.category, Severity: p.severity, ComplianceState: compliance, EvaluatedAt: simNow}
		}
		replicaA, replicaB := &states.Store{DB: db}, &states.Store{DB: db}
		putStates(t, replicaA, "t1", "s1", st(p1, r1, "NonCompliant"), st(p1, r2, "Compliant"))
		summary := func(s *states.Store) states.Summary {
			t.Helper()
			sum, err := s.Summary(ctx, []string{"t1", "t2"}, extra)
			if err != nil {
				t.Fatal(err)
			}
			return sum
		}
		first := summary(replicaA)
		if first.NonCompliantResources != 1 || first.CompliantResources != 1 || first.PolicyStates != 2 || first.NonCompliantBySeverity.High != 1 {
			t.Fatalf("first summary: %+v", first)
		}
		// Behind the store's back: the kept part stands.
		if _, err := db.ExecContext(ctx, `DELETE FROM compliance_policy_states WHERE resource_id = ?`, r1); err != nil {
			t.Fatal(err)
		}
		if again := summary(replicaA); again.NonCompliantResources != 1 || again.PolicyStates != 2 {
			t.Fatalf("a change without a revision was read: %+v", again)
		}
		// The extra sources are not kept.
		if _, err := db.ExecContext(ctx, `INSERT INTO extra_findings (tenant_id, n) VALUES ('t2', 5)`); err != nil {
			t.Fatal(err)
		}
		if got := summary(replicaA); got.NonCompliantBySeverity.Medium != 1 || got.Sources[1].NonCompliantCount != 5 {
			t.Fatalf("an extra finding was not counted: %+v", got)
		}
		// Another replica's sync raises the revision this one reads.
		putStates(t, replicaB, "t2", "s2", st(p2, r6, "NonCompliant"), st(p3, r6, "NonCompliant"))
		got := summary(replicaA)
		if got.NonCompliantResources != 1 || got.CompliantResources != 1 || got.TotalResources != 2 || got.PolicyStates != 3 ||
			got.TenantsWithData != 2 || got.NonCompliantPolicies != 2 {
			t.Fatalf("after another replica's sync: %+v", got)
		}
		if _, err := replicaB.Finish(ctx, "t2", []string{"s2"}, simNow); err != nil {
			t.Fatal(err)
		}
		if got := summary(replicaA); got.LastSyncedAt == nil || !got.LastSyncedAt.Equal(simNow) {
			t.Fatalf("a snapshot taken on another replica was not read: %+v", got.LastSyncedAt)
		}
	})
}
