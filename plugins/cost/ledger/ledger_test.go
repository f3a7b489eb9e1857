package ledger_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// open returns a migrated store on a fresh database of the dialect.
func open(t *testing.T, dialect string) *ledger.Store {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, ledger.Migrations(), "cost_migrations"); err != nil {
		t.Fatal(err)
	}
	return &ledger.Store{DB: db}
}

func TestAmount(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{{12.345, "12.35"}, {-12.345, "-12.35"}, {0.004, "0.00"}, {1234.5, "1234.50"}, {-0.05, "-0.05"}, {0.1 + 0.2, "0.30"}} {
		a := ledger.AmountOf(c.in)
		if got := a.String(); got != c.want {
			t.Errorf("AmountOf(%v) = %s, want %s", c.in, got, c.want)
		}
		b, _ := json.Marshal(a)
		var back ledger.Amount
		if err := json.Unmarshal(b, &back); err != nil || back != a {
			t.Errorf("%s round trip: %v %v", b, back, err)
		}
	}
	var a ledger.Amount
	if err := json.Unmarshal([]byte(`1e300`), &a); err == nil {
		t.Error("1e300 accepted as an amount")
	}
	for a, want := range map[ledger.Amount]string{math.MinInt64: "-92233720368547758.08", math.MaxInt64: "92233720368547758.07", -1: "-0.01"} {
		if got := a.String(); got != want {
			t.Errorf("%d cents as %s, want %s", int64(a), got, want)
		}
	}
}

func TestDay(t *testing.T) {
	d, err := ledger.ParseDay("2026-02-28")
	if err != nil {
		t.Fatal(err)
	}
	if (d+1).String() != "2026-03-01" || d.Month() != 202602 || ledger.DayOf(d.Time().Add(23*3600e9)) != d {
		t.Errorf("day arithmetic: %s %d", d+1, d.Month())
	}
	if _, err := ledger.ParseDay("2026-02-30"); err == nil {
		t.Error("2026-02-30 parsed")
	}
}

// TestUpsertAndRollup: writing the same days twice never doubles them, a
// restated day takes its new cost, and the rollups sum services and
// resource groups per tenant, day and currency.
func TestUpsertAndRollup(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s := open(t, dialect)
			d, _ := ledger.ParseDay("2026-10-31")
			rows := func(restated ledger.Amount) []ledger.Cost {
				return []ledger.Cost{
					{SubscriptionID: "s1", Day: d, Service: "VM", ResourceGroup: "rg1", Currency: "USD", TenantID: "t1", Cost: 1001},
					{SubscriptionID: "s1", Day: d, Service: "VM", ResourceGroup: "rg2", Currency: "USD", TenantID: "t1", Cost: 250},
					{SubscriptionID: "s2", Day: d, Service: "VM", ResourceGroup: "rg1", Currency: "USD", TenantID: "t1", Cost: 5},
					{SubscriptionID: "s2", Day: d, Service: "SQL", ResourceGroup: "rg1", Currency: "EUR", TenantID: "t1", Cost: 700},
					{SubscriptionID: "s1", Day: d + 1, Service: "VM", ResourceGroup: "rg1", Currency: "USD", TenantID: "t1", Cost: restated},
					{SubscriptionID: "s3", Day: d, Service: "VM", ResourceGroup: "rg1", Currency: "USD", TenantID: "t2", Cost: 99},
				}
			}
			for _, restated := range []ledger.Amount{300, 333} {
				if err := s.Upsert(ctx, rows(restated)); err != nil {
					t.Fatal(err)
				}
				for _, tenant := range []string{"t1", "t2"} {
					if err := s.Rollup(ctx, tenant, d, d+1); err != nil {
						t.Fatal(err)
					}
				}
			}
			var n int
			if err := s.DB.NewRaw("SELECT COUNT(*) FROM cost_daily").Scan(ctx, &n); err != nil || n != 6 {
				t.Fatalf("cost_daily holds %d rows (%v), want 6", n, err)
			}
			type total struct {
				Day      ledger.Day    `bun:"day"`
				Currency string        `bun:"currency"`
				Cost     ledger.Amount `bun:"cost_cents"`
			}
			var got []total
			if err := s.DB.NewRaw("SELECT day, currency, cost_cents FROM cost_tenant_daily WHERE tenant_id = 't1' ORDER BY day, currency").Scan(ctx, &got); err != nil {
				t.Fatal(err)
			}
			want := []total{{d, "EUR", 700}, {d, "USD", 1256}, {d + 1, "USD", 333}}
			if len(got) != len(want) {
				t.Fatalf("tenant rollup %+v, want %+v", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("tenant rollup row %d: %+v, want %+v", i, got[i], want[i])
				}
			}
			var vm ledger.Amount
			if err := s.DB.NewRaw("SELECT cost_cents FROM cost_service_daily WHERE tenant_id = 't1' AND day = ? AND service = 'VM'", d).Scan(ctx, &vm); err != nil || vm != 1256 {
				t.Errorf("service rollup VM %v (%v), want 12.56", vm, err)
			}
			if err := s.Rollup(ctx, "t1", d+1, d); err == nil {
				t.Error("a reversed range was rolled up")
			}
		})
	}
}
