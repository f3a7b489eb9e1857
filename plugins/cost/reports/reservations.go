package reports

import (
	"context"
	"fmt"
	"time"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// Reservations is the utilisation of a tenant's reservations, and of its
// savings plans.
type Reservations struct {
	Available        bool       `json:"available" enum:"true"`
	TenantID         string     `json:"tenant_id"`
	BillingAccountID string     `json:"billing_account_id"`
	Grain            string     `json:"grain" enum:"daily,monthly"`
	StartDate        ledger.Day `json:"start_date" format:"date"`
	EndDate          ledger.Day `json:"end_date" format:"date"`
	// Summary adds up every reservation over the whole range.
	Summary ReservationTotals  `json:"summary"`
	Items   []ReservationUsage `json:"items" doc:"One entry per reservation and day or month, in period order"`
	// SavingsPlans are the savings plans of the same billing account over
	// the same range and grain.
	SavingsPlans SavingsPlans `json:"savings_plans"`
}

// ReservationTotals are hours of the whole range.
type ReservationTotals struct {
	Reservations       int     `json:"reservations" doc:"Distinct reservations with data in the range"`
	ReservedHours      float64 `json:"reserved_hours"`
	UsedHours          float64 `json:"used_hours"`
	UtilizationPercent float64 `json:"utilization_percent" doc:"used_hours over reserved_hours, in percent: every reserved hour counts alike, whatever its size"`
	// The normalised figures weigh each hour by its SKU's size, which
	// the plain hours do not.
	NormalizedReservedHours      float64 `json:"normalized_reserved_hours" doc:"Reserved hours times each SKU's normalised size ratio (instance size flexibility): hours of the smallest size of each group"`
	NormalizedUsedHours          float64 `json:"normalized_used_hours" doc:"Used hours times each SKU's normalised size ratio"`
	NormalizedUtilizationPercent float64 `json:"normalized_utilization_percent" doc:"normalized_used_hours over normalized_reserved_hours, in percent: utilisation weighted by normalised size"`
	// Costs are per currency: amounts are never converted.
	Costs []ReservationCost `json:"costs" doc:"The reservations' cost and unused cost per currency; reservations whose purchase is unknown have none"`
}

// ReservationCost is what reservations cost in one currency over a range
// and how much of it their unused hours wasted.
type ReservationCost struct {
	Currency               string        `json:"currency"`
	Cost                   ledger.Amount `json:"cost" doc:"The purchase prices spread evenly over the days of their terms, summed over the range, exact to the cent"`
	UnusedCost             ledger.Amount `json:"unused_cost" doc:"The part of cost the unused hours wasted: each day's cost times its unused share of the reserved hours, rounded to the cent, summed"`
	CostUtilizationPercent float64       `json:"cost_utilization_percent" doc:"cost less unused_cost over cost, in percent: utilisation weighted by cost"`
}

// ReservationUsage is one reservation's use in one period.
type ReservationUsage struct {
	ReservationID      string  `json:"reservation_id"`
	ReservationOrderID string  `json:"reservation_order_id"`
	SKU                string  `json:"sku"`
	Period             string  `json:"period" doc:"The day (YYYY-MM-DD) or month (YYYY-MM)"`
	ReservedHours      float64 `json:"reserved_hours"`
	UsedHours          float64 `json:"used_hours"`
	UtilizationPercent float64 `json:"utilization_percent" doc:"used_hours over reserved_hours, in percent"`
	MinUtilization     float64 `json:"min_utilization" doc:"Lowest daily utilisation the provider reported, in percent"`
	AvgUtilization     float64 `json:"avg_utilization" doc:"Mean of the daily average utilisations, in percent"`
	MaxUtilization     float64 `json:"max_utilization" doc:"Highest daily utilisation the provider reported, in percent"`
	FlexibilityGroup   string  `json:"instance_flexibility_group" doc:"The SKU's instance size flexibility group; empty when the provider names none"`
	NormalizedRatio    float64 `json:"normalized_size_ratio" doc:"How many of its group's smallest size one instance of the SKU counts as; 1 when the provider gives none"`
	// NormalizedReservedHours and NormalizedUsedHours are the hours
	// times the ratio.
	NormalizedReservedHours float64 `json:"normalized_reserved_hours"`
	NormalizedUsedHours     float64 `json:"normalized_used_hours"`
	// Currency, Cost and UnusedCost are null when the reservation's
	// purchase is not known.
	Currency               *string        `json:"currency"`
	Cost                   *ledger.Amount `json:"cost" nullable:"true" doc:"The period's share of the purchase price, exact to the cent"`
	UnusedCost             *ledger.Amount `json:"unused_cost" nullable:"true" doc:"The part of cost the unused hours wasted: unused money of the day or month"`
	CostUtilizationPercent *float64       `json:"cost_utilization_percent" doc:"cost less unused_cost over cost, in percent"`
}

// ReservationsUnavailable answers for a tenant without a billing account.
type ReservationsUnavailable struct {
	Available bool   `json:"available" enum:"false"`
	TenantID  string `json:"tenant_id"`
	Reason    string `json:"reason" enum:"billing_account_access_required"`
	Setup     Setup  `json:"setup"`
}

// Setup is guidance to make reservation data available.
type Setup struct {
	Message string   `json:"message"`
	Steps   []string `json:"steps"`
}

var billingAccountSetup = Setup{
	Message: "Reservation and savings plan utilisation is reported per billing account, and this tenant has none configured.",
	Steps: []string{
		"Find the tenant's billing account id in the Azure portal under Cost Management + Billing > Billing scopes.",
		"Grant Steward's identity read access to that billing account (the Billing account reader role; on an Enterprise Agreement, Enterprise read-only).",
		"As an admin, set the tenant's billing_account_id: PATCH /api/v1/tenants/{tenant_id} with {\"billing_account_id\": \"…\"}.",
		"Run a cost sync (POST /api/v1/sync/costs, admin); reservation and savings plan utilisation appear once it completes.",
	},
}

// reservationDays and reservationMonths are the ranges the two grains
// show, up to today.
const (
	reservationDays   = 30
	reservationMonths = 12
)

// reservationsOut is the reservations answer: Reservations, or
// ReservationsUnavailable for a tenant without a billing account.
type reservationsOut struct{ Body any }

func (h *Handlers) reservations(ctx context.Context, in *reservationsIn) (*reservationsOut, error) {
	id := string(in.Tenant)
	if id == "" {
		ids := sdk.PrincipalFrom(ctx).TenantIDs
		if len(ids) == 0 {
			return nil, sdk.NotFound("the caller has no tenant")
		}
		id = ids[0]
	}
	tenants, err := h.Host.Tenants(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(tenants) == 0 {
		return nil, sdk.NotFound("the tenant is not active")
	}
	if tenants[0].BillingAccountID == "" {
		return &reservationsOut{ReservationsUnavailable{TenantID: id, Reason: "billing_account_access_required", Setup: billingAccountSetup}}, nil
	}
	grain := in.Grain
	today := h.today()
	rng := Range{From: today - reservationDays + 1, To: today}
	if grain == GrainMonthly {
		y, m, _ := today.Time().Date()
		rng.From = ledger.DayOf(time.Date(y, m-reservationMonths+1, 1, 0, 0, 0, 0, time.UTC))
	}
	uses, err := h.Store.Reservations(ctx, id, rng, grain)
	if err != nil {
		return nil, err
	}
	out := Reservations{Available: true, TenantID: id, BillingAccountID: tenants[0].BillingAccountID, Grain: grain,
		StartDate: rng.From, EndDate: rng.To, Items: make([]ReservationUsage, 0, len(uses))}
	seen := map[string]bool{}
	for _, u := range uses {
		seen[u.ReservationID] = true
		period := ledger.Day(u.Period).String()
		if grain == GrainMonthly {
			period = fmt.Sprintf("%04d-%02d", u.Period/100, u.Period%100)
		}
		item := ReservationUsage{ReservationID: u.ReservationID, ReservationOrderID: u.ReservationOrderID, SKU: u.SKU,
			Period: period, ReservedHours: u.ReservedHours, UsedHours: u.UsedHours, UtilizationPercent: utilisation(u.UsedHours, u.ReservedHours),
			MinUtilization: round2(u.MinUtilization), AvgUtilization: round2(u.AvgUtilization), MaxUtilization: round2(u.MaxUtilization),
			FlexibilityGroup: u.FlexibilityGroup, NormalizedRatio: u.NormalizedRatio,
			NormalizedReservedHours: round2(u.NormalizedReserved), NormalizedUsedHours: round2(u.NormalizedUsed)}
		if u.Currency != "" {
			currency, cost, unused := u.Currency, u.Cost, u.Unused
			used := costUtilisation(cost, unused)
			item.Currency, item.Cost, item.UnusedCost, item.CostUtilizationPercent = &currency, &cost, &unused, &used
		}
		out.Items = append(out.Items, item)
	}
	totals, err := h.Store.ReservationTotals(ctx, []string{id}, rng)
	if err != nil {
		return nil, err
	}
	out.Summary = Summarise(totals, len(seen))
	if out.SavingsPlans, err = h.savingsPlans(ctx, id, rng, grain); err != nil {
		return nil, err
	}
	return &reservationsOut{out}, nil
}

// Summarise adds up the range's totals per currency into the summary of
// the range's reservations: the hours of every currency together, the
// money of each apart.
func Summarise(totals []ReservationTotal, reservations int) ReservationTotals {
	out := ReservationTotals{Reservations: reservations, Costs: []ReservationCost{}}
	for _, t := range totals {
		out.ReservedHours += t.ReservedHours
		out.UsedHours += t.UsedHours
		out.NormalizedReservedHours += t.NormalizedReserved
		out.NormalizedUsedHours += t.NormalizedUsed
		if t.Currency != "" {
			out.Costs = append(out.Costs, ReservationCost{Currency: t.Currency, Cost: t.Cost, UnusedCost: t.Unused,
				CostUtilizationPercent: costUtilisation(t.Cost, t.Unused)})
		}
	}
	out.UtilizationPercent = utilisation(out.UsedHours, out.ReservedHours)
	out.NormalizedUtilizationPercent = utilisation(out.NormalizedUsedHours, out.NormalizedReservedHours)
	out.ReservedHours, out.UsedHours = round2(out.ReservedHours), round2(out.UsedHours)
	out.NormalizedReservedHours, out.NormalizedUsedHours = round2(out.NormalizedReservedHours), round2(out.NormalizedUsedHours)
	return out
}

// costUtilisation is the share of cost not wasted, in percent.
func costUtilisation(cost, unused ledger.Amount) float64 {
	if cost == 0 {
		return 0
	}
	return round2(100 * float64(cost-unused) / float64(cost))
}

func utilisation(used, reserved float64) float64 {
	if reserved == 0 {
		return 0
	}
	return round2(100 * used / reserved)
}
