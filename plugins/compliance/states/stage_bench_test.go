package states

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

// BenchmarkStatesReplace replaces a subscription's 100,000 policy states
// (20,000 resources × 5 policies), streamed from memory, on PostgreSQL
// with COPY (what Replace uses there) and with the multi-row inserts
// SQLite gets, and on SQLite: the store's share of a sync, without the
// cloud. Each Replace deletes the states the previous one stored.
// stage-states/s is the streaming into the stage alone; states/s the
// whole call, with the move into the table in one transaction.
func BenchmarkStatesReplace(b *testing.B) {
	const resources, policies = 20000, 5
	at := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	stream := func(emit func(State) error) error {
		for r := range resources {
			res := fmt.Sprintf("/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/sa%05d", r)
			for p := range policies {
				state := StateCompliant
				if (r+p)%5 == 0 {
					state = StateNonCompliant
				}
				err := emit(State{ResourceID: res, ResourceType: "Microsoft.Storage/storageAccounts",
					PolicyAssignmentID: "/subscriptions/s1/providers/Microsoft.Authorization/policyAssignments/regulatory-compliance",
					PolicyDefinitionID: fmt.Sprintf("/providers/Microsoft.Authorization/policyDefinitions/p%d", p), PolicyDefinitionName: fmt.Sprintf("p%d", p),
					PolicyName: fmt.Sprintf("Policy %d", p), Category: "Storage", GroupNames: []string{"SOC_2_CC6.1"}, ComplianceState: state,
					Severity: "High", EvaluatedAt: at})
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, c := range []struct {
		name, dialect string
		insert        bool
	}{
		{"postgres-copy", store.DialectPostgres, false},
		{"postgres-insert", store.DialectPostgres, true},
		{"sqlite-insert", store.DialectSQLite, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			db := storetest.Open(b, c.dialect)
			if _, err := store.Migrate(ctx, db, Migrations(), "compliance_migrations"); err != nil {
				b.Fatal(err)
			}
			s := &Store{DB: db, stageByInsert: c.insert}
			var n int64
			var staging, whole time.Duration
			for range b.N {
				start := time.Now()
				var staged time.Time
				got, err := s.Replace(ctx, Target{TenantID: "t1", SubscriptionID: "s1", SyncedAt: at, Resources: resources}, func(emit func(State) error) error {
					err := stream(emit)
					staged = time.Now()
					return err
				})
				if err != nil || got.Rows != resources*policies {
					b.Fatalf("%+v %v", got, err)
				}
				staging += staged.Sub(start)
				whole += time.Since(start)
				n += got.Rows
			}
			// The stream returns once its last full batch is staged
			// (100,000 is a multiple of DefaultFlushRows).
			b.ReportMetric(float64(n)/staging.Seconds(), "stage-states/s")
			b.ReportMetric(float64(n)/whole.Seconds(), "states/s")
		})
	}
}
