package anomalies

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// TestAnomalyEvents: a detected anomaly raises one cost.anomaly event;
// judging its days again, or flagging the day again after a restatement
// cleared it, raises nothing new; an anomaly older than EventWindow when
// found (a backfill's) raises none.
func TestAnomalyEvents(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := open(t, dialect)
			d := detector(db)
			h := plugintest.New(t, sdk.Definition{Name: "cost"}, func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
				d.Host, d.Logger = env.Host, env.Logger
				return &sdk.Plugin{Events: []sdk.EventType{EventType}}, nil
			}, plugintest.Options{})
			first, _ := ledger.ParseDay("2026-01-01")
			costs := weeklySeries(rand.New(rand.NewPCG(3, 4)), first, 70, 400_00, 0.6, 0.04)
			spike := first + 60
			normal := costs[60]
			costs[60] = 4 * normal
			load(t, db, costRows("t1", "VM", first, costs))
			for range 2 {
				if err := d.Evaluate(ctx, sdk.Tenant{ID: "t1"}, first, first+69); err != nil {
					t.Fatal(err)
				}
			}
			got := h.Events()
			if len(got) != 1 {
				t.Fatalf("events after two evaluations: %+v, want one", got)
			}
			e := got[0]
			if e.Kind != EventAnomaly || e.Severity != "warning" || e.TenantID != "t1" || e.Title != "Cost anomaly: VM on "+spike.String() ||
				!strings.HasPrefix(e.Message, "VM cost ") || e.Link != "/costs?tenant_id=t1" || e.DedupeKey != "t1/USD/"+spike.String()+"/VM" ||
				e.Details["date"] != spike.String() || !e.OccurredAt.Equal(detectedAt) {
				t.Errorf("event = %+v", e)
			}
			for _, cost := range []ledger.Amount{normal, 5 * normal} {
				load(t, db, costRows("t1", "VM", spike, []ledger.Amount{cost}))
				if err := d.Evaluate(ctx, sdk.Tenant{ID: "t1"}, spike-2, spike+2); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(stored(t, db)); n != 1 {
				t.Fatalf("%d anomalies after restating the day to normal and to 5x, want 1", n)
			}
			if got := h.Events(); len(got) != 1 {
				t.Errorf("events after the day was flagged again: %+v", got)
			}

			// A backfill finds a spike of two months before: stored, not sent.
			old := first - 30
			history := weeklySeries(rand.New(rand.NewPCG(5, 6)), old, 40, 400_00, 0.6, 0.04)
			history[35] *= 4
			load(t, db, costRows("t2", "VM", old, history))
			if err := d.Evaluate(ctx, sdk.Tenant{ID: "t2"}, old, old+39); err != nil {
				t.Fatal(err)
			}
			if n := len(stored(t, db)); n != 2 {
				t.Fatalf("%d anomalies after the backfill, want 2", n)
			}
			if got := h.Events(); len(got) != 1 {
				t.Errorf("events after a backfill found an old anomaly: %+v", got)
			}
		})
	}
}
