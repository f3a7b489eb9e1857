package quotas

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
)

// TestCountsAgreeWithHealth: the database counts usages by health exactly
// as Health(UsagePercent) classifies each, on both dialects, at the
// boundaries the rounding to hundredths makes and on random figures; and
// List pages in the order it lists.
func TestCountsAgreeWithHealth(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := migrated(t, dialect)
			st := NewStore(db)
			figures := [][2]float64{
				{0, 0}, {1, 0}, {-1, 0}, {0, 100}, {7499, 10000}, {74994, 100000}, {74995, 100000}, {74996, 100000},
				{75, 100}, {8999, 10000}, {899949, 1000000}, {899950, 1000000}, {89995, 100000}, {90, 100}, {95, 100}, {100, 100},
				{250, 100}, {1, 3}, {2, 3}, {3, 4}, {299, 400}, {359, 400}, {1, 2500}, {-5, 100},
			}
			r := rand.New(rand.NewPCG(1, 2))
			for range 400 {
				limit := float64(r.IntN(5000))
				figures = append(figures, [2]float64{float64(r.IntN(int(limit) + 2)), limit})
			}
			var usages []Usage
			var want Counts
			for i, f := range figures {
				usages = append(usages, Usage{TenantID: "t-a", SubscriptionID: "sub-a", Location: DefaultLocation, Provider: "compute",
					Name: fmt.Sprintf("q%04d", i), CurrentValue: f[0], Limit: f[1], SyncedAt: time.Now()})
				want.add(Health(UsagePercent(f[0], f[1])))
			}
			if err := st.Replace(ctx, "sub-a", DefaultLocation, "compute", usages); err != nil {
				t.Fatal(err)
			}
			q := Query{TenantIDs: []string{"t-a"}, Location: DefaultLocation, Provider: "compute"}
			got, err := st.Counts(ctx, q)
			if err != nil || got != want {
				t.Fatalf("Counts = %+v (%v), want %+v", got, err, want)
			}
			// Row by row, so that no two wrong ranks cancel out.
			var ranks []struct {
				Name string `bun:"name"`
				R    int    `bun:"r"`
			}
			if err := db.NewSelect().Model((*Usage)(nil)).Column("name").ColumnExpr(healthRank+" AS r").Order("name").Scan(ctx, &ranks); err != nil {
				t.Fatal(err)
			}
			names := map[int]string{0: HealthOK, 1: HealthWarning, 2: HealthCritical}
			for i, rk := range ranks {
				f := figures[i]
				if w := Health(UsagePercent(f[0], f[1])); rk.Name != fmt.Sprintf("q%04d", i) || names[rk.R] != w {
					t.Errorf("%s: %g of %g is %s in the database, %s in Go (%.2f%%)", rk.Name, f[0], f[1], names[rk.R], w, UsagePercent(f[0], f[1]))
				}
			}
			if c, err := st.Counts(ctx, Query{TenantIDs: []string{"t-b"}, Location: DefaultLocation}); err != nil || c != (Counts{}) {
				t.Errorf("another tenant's counts %+v (%v), want none", c, err)
			}

			// A second subscription's network quotas, for the overview and
			// the most used across providers.
			var network []Usage
			wantNet := Counts{}
			for i, f := range [][2]float64{{99, 100}, {10, 0}, {5, 100}, {74, 100}} {
				network = append(network, Usage{TenantID: "t-a", SubscriptionID: "sub-b", Location: DefaultLocation, Provider: "network",
					Name: fmt.Sprintf("n%d", i), CurrentValue: f[0], Limit: f[1], SyncedAt: time.Now()})
				wantNet.add(Health(UsagePercent(f[0], f[1])))
			}
			if err := st.Replace(ctx, "sub-b", DefaultLocation, "network", network); err != nil {
				t.Fatal(err)
			}
			both := Query{TenantIDs: []string{"t-a"}, Location: DefaultLocation}
			ov, err := st.Overview(ctx, both)
			if err != nil || ov.Subscriptions != 2 || ov.ByProvider["compute"] != want || ov.ByProvider["network"] != wantNet || len(ov.ByProvider) != 2 {
				t.Fatalf("Overview = %+v (%v), want 2 subscriptions, compute %+v, network %+v", ov, err, want, wantNet)
			}
			every := append(append([]Usage{}, usages...), network...)
			raw := func(u Usage) float64 {
				if u.Limit <= 0 {
					if u.CurrentValue > 0 {
						return 100
					}
					return 0
				}
				return u.CurrentValue / u.Limit * 100
			}
			slices.SortStableFunc(every, func(a, b Usage) int {
				if c := cmp.Compare(raw(b), raw(a)); c != 0 {
					return c
				}
				return cmp.Or(cmp.Compare(a.SubscriptionID, b.SubscriptionID), cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Name, b.Name))
			})
			most, err := st.MostUsed(ctx, both, 12)
			if err != nil || len(most) != 12 {
				t.Fatalf("MostUsed: %d (%v), want 12", len(most), err)
			}
			for i, u := range most {
				if u.SubscriptionID != every[i].SubscriptionID || u.Name != every[i].Name {
					t.Errorf("most used #%d: %s/%s (%g%%), want %s/%s (%g%%)", i+1, u.SubscriptionID, u.Name, raw(u), every[i].SubscriptionID, every[i].Name, raw(every[i]))
				}
			}

			all, err := st.List(ctx, q)
			if err != nil || len(all) != len(figures) {
				t.Fatalf("List: %d usages (%v), want %d", len(all), err, len(figures))
			}
			q.Limit, q.Offset = 10, 395
			page, err := st.List(ctx, q)
			if err != nil || len(page) != 10 || page[0].Name != all[395].Name || page[9].Name != all[404].Name {
				t.Fatalf("page at 395: %d usages (%v), want all[395:405]", len(page), err)
			}
			q.Offset = len(figures) - 3
			if page, err := st.List(ctx, q); err != nil || len(page) != 3 {
				t.Fatalf("last page: %d usages (%v), want 3", len(page), err)
			}
		})
	}
}

// add counts one usage of the health into c, as the database counts it.
func (c *Counts) add(health string) {
	c.Total++
	switch health {
	case HealthOK:
		c.OK++
	case HealthWarning:
		c.Warning++
	case HealthCritical:
		c.Critical++
	}
}
