package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// resourceCostWorld gives the first subscription 1,500 resources, each
// costing (i+1)/100 EUR on each of the ten days from 1 October, and its
// resource-group series without a resource around them.
func resourceCostWorld() *world.World {
	w := costWorld()
	for d := 0; d < 10; d++ {
		date := october1.AddDate(0, 0, d).Format(time.DateOnly)
		for i := 0; i < 1500; i++ {
			w.Costs = append(w.Costs, world.Cost{SubscriptionID: subID(0), Date: date, Service: "Storage", ResourceGroup: "rg-00",
				ResourceID: resourceID(i), Cost: float64(i+1) / 100, Currency: "EUR"})
		}
	}
	return w
}

func resourceID(i int) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/RG-00/providers/Microsoft.Compute/disks/Disk-%04d", subID(0), i)
}

func collectResourceCosts(c *cloud.Clients, sub string, from, to time.Time) (map[string]cloud.ResourceCost, error) {
	out := map[string]cloud.ResourceCost{}
	err := c.ResourceCosts(context.Background(), sub, from, to, func(r cloud.ResourceCost) error {
		if _, ok := out[r.ResourceID]; ok {
			return fmt.Errorf("resource %q twice", r.ResourceID)
		}
		out[r.ResourceID] = r
		return nil
	})
	return out, err
}

func TestResourceCostsSumsThePeriodByResource(t *testing.T) {
	for _, order := range [][]string{nil, {"Currency", "PreTaxCost", "ResourceId"}} {
		s, c := startSim(t, resourceCostWorld(), arm.WithCostColumnOrder(order...))
		// 1..5 October: five of the ten days.
		got, err := collectResourceCosts(c, subID(0), october1, october1.AddDate(0, 0, 4))
		if err != nil {
			t.Fatalf("columns %v: %v", order, err)
		}
		if len(got) != 1501 {
			t.Fatalf("%d resources, want 1,500 and the costs of none", len(got))
		}
		for i := 0; i < 1500; i++ {
			r, ok := got[strings.ToLower(resourceID(i))]
			if !ok || math.Abs(r.Cost-5*float64(i+1)/100) > 1e-9 || r.Currency != "EUR" {
				t.Fatalf("resource %d: %+v (found %v), want %.2f EUR", i, r, ok, 5*float64(i+1)/100)
			}
		}
		// The costs of no resource: 5 days of 70 series (d*1000+p)/100.
		want := 0.0
		for d := 0; d < 5; d++ {
			for p := 0; p < 70; p++ {
				want += float64(d*1000+p) / 100
			}
		}
		if r := got[""]; math.Abs(r.Cost-want) > 1e-6 {
			t.Fatalf("costs of no resource %+v, want %.2f", r, want)
		}
		if hits := s.Faults.Hits(cloudsim.ARM, costPath(subID(0))); hits != 2 {
			t.Fatalf("%d requests for 1,501 rows, want 2 pages", hits)
		}
	}
}

func TestResourceCostsRejectsAndNoContent(t *testing.T) {
	_, c := startSim(t, resourceCostWorld())
	got, err := collectResourceCosts(c, subID(1), october1.AddDate(0, 1, 0), october1.AddDate(0, 1, 29))
	if err != nil || len(got) != 0 {
		t.Fatalf("a period without costs: %v, %v", got, err)
	}
	for name, period := range map[string][2]time.Time{
		"backwards":   {october30, october1},
		"over a year": {october1.AddDate(-1, 0, 0), october1},
	} {
		if _, err := collectResourceCosts(c, subID(0), period[0], period[1]); err == nil {
			t.Errorf("%s: queried", name)
		}
	}
	if _, err := collectResourceCosts(c, "", october1, october30); err == nil {
		t.Error("no subscription: queried")
	}
	stop := errors.New("stop")
	if err := c.ResourceCosts(context.Background(), subID(0), october1, october30, func(cloud.ResourceCost) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("fn's error: %v", err)
	}
}

// TestDailyResourceCostsByDayResourceAndService: each day's cost of each
// resource and service, field by field, across pages and whatever the
// order of the answer's columns; the costs of no resource under the
// empty id, summed per service; a range longer than a year is queried a
// year at a time.
func TestDailyResourceCostsByDayResourceAndService(t *testing.T) {
	collect := func(c *cloud.Clients, from, to time.Time) (map[string]cloud.ResourceCostRow, error) {
		out := map[string]cloud.ResourceCostRow{}
		err := c.DailyResourceCosts(context.Background(), subID(0), cloud.ActualCost, from, to, func(r cloud.ResourceCostRow) error {
			k := r.Date.Format(time.DateOnly) + "|" + r.ResourceID + "|" + r.Service
			if _, ok := out[k]; ok {
				return fmt.Errorf("row %s twice", k)
			}
			if r.Date.Location() != time.UTC || r.Date.Hour() != 0 {
				return fmt.Errorf("row date %v is not midnight UTC", r.Date)
			}
			out[k] = r
			return nil
		})
		return out, err
	}
	for _, order := range [][]string{nil, {"Currency", "ServiceName", "PreTaxCost", "UsageDate", "ResourceId"}} {
		s, c := startSim(t, resourceCostWorld(), arm.WithCostColumnOrder(order...))
		got, err := collect(c, october1, october1.AddDate(0, 0, 1))
		if err != nil {
			t.Fatalf("columns %v: %v", order, err)
		}
		// Two days of 1,500 resources, and the costs of no resource of
		// the seven services.
		if len(got) != 2*(1500+7) {
			t.Fatalf("columns %v: %d rows, want 3,014", order, len(got))
		}
		for d := 0; d < 2; d++ {
			date := october1.AddDate(0, 0, d).Format(time.DateOnly)
			for _, i := range []int{0, 749, 1499} {
				r, ok := got[date+"|"+strings.ToLower(resourceID(i))+"|Storage"]
				if !ok || math.Abs(r.Cost-float64(i+1)/100) > 1e-9 || r.Currency != "EUR" {
					t.Fatalf("%s resource %d: %+v (found %v), want %.2f EUR", date, i, r, ok, float64(i+1)/100)
				}
			}
			// The 70 series of no resource, (d*1000+p)/100 each, summed.
			sum := 0.0
			for k, r := range got {
				if strings.HasPrefix(k, date+"||") {
					sum += r.Cost
				}
			}
			want := 0.0
			for p := 0; p < 70; p++ {
				want += float64(d*1000+p) / 100
			}
			if math.Abs(sum-want) > 1e-6 {
				t.Fatalf("%s: costs of no resource %.2f, want %.2f", date, sum, want)
			}
		}
		if hits := s.Faults.Hits(cloudsim.ARM, costPath(subID(0))); hits != 4 {
			t.Fatalf("%d requests for 3,014 rows, want 4 pages", hits)
		}
	}
	s, c := startSim(t, resourceCostWorld())
	if _, err := collect(c, october1.AddDate(-1, 0, -5), october30); err != nil {
		t.Fatal(err)
	}
	if hits := s.Faults.Hits(cloudsim.ARM, costPath(subID(0))); hits < 2 {
		t.Fatalf("a range of over a year in %d queries", hits)
	}
	if err := c.DailyResourceCosts(context.Background(), "", cloud.ActualCost, october1, october30, func(cloud.ResourceCostRow) error { return nil }); err == nil {
		t.Error("no subscription: queried")
	}
	if err := c.DailyResourceCosts(context.Background(), subID(0), cloud.ActualCost, october30, october1, func(cloud.ResourceCostRow) error { return nil }); err == nil {
		t.Error("backwards: queried")
	}
	stop := errors.New("stop")
	if err := c.DailyResourceCosts(context.Background(), subID(0), cloud.ActualCost, october1, october30, func(cloud.ResourceCostRow) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("fn's error: %v", err)
	}
}
