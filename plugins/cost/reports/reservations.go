package reports

import (
	"context"
	"fmt"
	"time"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// Reservations is the utilisation of a tenant's reservations.
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
}

// ReservationTotals are hours of the whole range.
type ReservationTotals struct {
	Reservations       int     `json:"reservations" doc:"Distinct reservations with data in the range"`
	ReservedHours      float64 `json:"reserved_hours"`
	UsedHours          float64 `json:"used_hours"`
	UtilizationPercent float64 `json:"utilization_percent" doc:"used_hours over reserved_hours, in percent"`
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
	Message: "Reservation utilisation is reported per billing account, and this tenant has none configured.",
	Steps: []string{
		"Find the tenant's billing account id in the Azure portal under Cost Management + Billing > Billing scopes.",
		"Grant Steward's identity read access to that billing account (the Billing account reader role; on an Enterprise Agreement, Enterprise read-only).",
		"As an admin, set the tenant's billing_account_id: PATCH /api/v1/tenants/{tenant_id} with {\"billing_account_id\": \"…\"}.",
		"Run a cost sync (POST /api/v1/sync/costs, admin); reservation utilisation appears once it completes.",
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
		period := ledger.Day(u.Period).String()
		if grain == GrainMonthly {
			period = fmt.Sprintf("%04d-%02d", u.Period/100, u.Period%100)
		}
		out.Items = append(out.Items, ReservationUsage{ReservationID: u.ReservationID, ReservationOrderID: u.ReservationOrderID, SKU: u.SKU,
			Period: period, ReservedHours: u.ReservedHours, UsedHours: u.UsedHours, UtilizationPercent: utilisation(u.UsedHours, u.ReservedHours),
			MinUtilization: round2(u.MinUtilization), AvgUtilization: round2(u.AvgUtilization), MaxUtilization: round2(u.MaxUtilization)})
		seen[u.ReservationID] = true
		out.Summary.ReservedHours += u.ReservedHours
		out.Summary.UsedHours += u.UsedHours
	}
	out.Summary.Reservations = len(seen)
	out.Summary.UtilizationPercent = utilisation(out.Summary.UsedHours, out.Summary.ReservedHours)
	return &reservationsOut{out}, nil
}

func utilisation(used, reserved float64) float64 {
	if reserved == 0 {
		return 0
	}
	return round2(100 * used / reserved)
}
