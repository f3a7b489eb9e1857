package states

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

// TestResourceStatesUseTheLowerIndex: on both databases, the resource
// states lookup (ARM ids with case ignored, within tenants) is planned on
// the index of LOWER(resource_id), not by reading the tenants' states.
func TestResourceStatesUseTheLowerIndex(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(ctx, db, Migrations(), "compliance_migrations"); err != nil {
				t.Fatal(err)
			}
			seedPlanStates(t, db)
			s := &Store{DB: db}
			q := s.resourceStates([]string{"t1"}, []string{resourceOf(7), resourceOf(42)})
			plan := explain(t, db, q.String())
			if !strings.Contains(plan, "compliance_policy_states_resource_lower") {
				t.Errorf("the lookup is not planned on the LOWER(resource_id) index:\n%s", plan)
			}
			got, err := s.ResourceStates(ctx, []string{"t1"}, []string{strings.ToUpper(resourceOf(7))})
			if err != nil || len(got) != 1 || got[0].ResourceID != "/subscriptions/s-t1/providers/Microsoft.Storage/storageAccounts/SA0007" {
				t.Errorf("the states of one resource named in upper case: %+v, %v", got, err)
			}
		})
	}
}

// resourceOf is the i-th seeded resource's ARM id in lower case.
func resourceOf(i int) string {
	return fmt.Sprintf("/subscriptions/s-t1/providers/microsoft.storage/storageaccounts/sa%04d", i)
}

// seedPlanStates stores a state for each of 1,000 resources of three
// tenants, their ids in mixed case, and refreshes the planner's
// statistics, so that the plan is the one a populated table gets.
func seedPlanStates(t *testing.T, db *bun.DB) {
	t.Helper()
	ctx := context.Background()
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, tenant := range []string{"t1", "t2", "t3"} {
			for i := range 1000 {
				_, err := tx.ExecContext(ctx, `INSERT INTO compliance_policy_states (tenant_id, subscription_id, resource_id, resource_type,
					policy_assignment_id, policy_definition_id, policy_definition_name, policy_name, category, group_names, compliance_state,
					state_rank, severity, severity_rank, evaluated_unix) VALUES (?, ?, ?, 'Microsoft.Storage/storageAccounts', 'a1', 'p1', 'p1',
					'Policy 1', 'Storage', '[]', 'Compliant', 1, 'High', 3, 0)`,
					tenant, "s-"+tenant, fmt.Sprintf("/subscriptions/s-%s/providers/Microsoft.Storage/storageAccounts/SA%04d", tenant, i))
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err == nil {
		_, err = db.ExecContext(ctx, "ANALYZE")
	}
	if err != nil {
		t.Fatal(err)
	}
}

// explain is the database's plan of query, one line per step.
func explain(t *testing.T, db *bun.DB, query string) string {
	t.Helper()
	prefix := "EXPLAIN "
	if db.Dialect().Name().String() == "sqlite" {
		prefix = "EXPLAIN QUERY PLAN "
	}
	rows, err := db.QueryContext(context.Background(), prefix+query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		// The step's text is the last column on both: QUERY PLAN on
		// PostgreSQL, detail on SQLite; a driver may give it as bytes.
		step := vals[len(vals)-1]
		if b, ok := step.([]byte); ok {
			step = string(b)
		}
		lines = append(lines, fmt.Sprint(step))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
