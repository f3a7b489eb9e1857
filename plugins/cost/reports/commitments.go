package reports

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// ReservationTotal is the tenants' reservation hours and money over a
// range in one currency ("" for the days whose purchase is unknown).
type ReservationTotal struct {
	Currency           string        `bun:"currency"`
	ReservedHours      float64       `bun:"reserved_hours"`
	UsedHours          float64       `bun:"used_hours"`
	NormalizedReserved float64       `bun:"normalized_reserved"`
	NormalizedUsed     float64       `bun:"normalized_used"`
	Cost               ledger.Amount `bun:"cost"`
	Unused             ledger.Amount `bun:"unused"`
}

// ReservationTotals sums the tenants' reservation days over r per
// currency, in currency order.
func (s *Store) ReservationTotals(ctx context.Context, tenants []string, r Range) ([]ReservationTotal, error) {
	out := []ReservationTotal{}
	err := s.DB.NewRaw(`SELECT currency, SUM(reserved_hours) AS reserved_hours, SUM(used_hours) AS used_hours,
		SUM(reserved_hours * normalized_ratio) AS normalized_reserved, SUM(used_hours * normalized_ratio) AS normalized_used,
		CAST(SUM(cost_cents) AS BIGINT) AS cost, CAST(SUM(unused_cents) AS BIGINT) AS unused
		FROM cost_reservations
		WHERE tenant_id IN (?) AND day BETWEEN ? AND ?
		GROUP BY currency
		ORDER BY currency`,
		bun.List(tenants), r.From, r.To).Scan(ctx, &out)
	return out, err
}

// ExpiryThresholds are the days before a commitment's expiry at which it
// raises an alert, widest first.
var ExpiryThresholds = []int{90, 30, 7}

// AlertThreshold is the narrowest of ExpiryThresholds that a commitment
// with daysLeft days to its expiry has crossed; ok is false before the
// widest.
func AlertThreshold(daysLeft int) (threshold int, ok bool) {
	for _, th := range ExpiryThresholds {
		if daysLeft <= th {
			threshold, ok = th, true
		}
	}
	return threshold, ok
}

// Expiring lists commitments that end within a number of days.
type Expiring struct {
	AsOf       ledger.Day `json:"as_of" format:"date" doc:"Today (UTC), the day days_left counts from"`
	WithinDays int        `json:"within_days"`
	Thresholds []int      `json:"thresholds" doc:"The days before expiry at which a commitment alerts"`
	Items      []Expiry   `json:"items" doc:"Soonest expiry first"`
}

// Expiry is a reservation order or savings plan still running and when it
// ends.
type Expiry struct {
	TenantID           string        `json:"tenant_id"`
	Kind               string        `json:"kind" enum:"reservation,savings_plan"`
	ReservationOrderID string        `json:"reservation_order_id" doc:"The reservation order, or the savings plan's order"`
	SavingsPlanID      *string       `json:"savings_plan_id" doc:"The savings plan; null for a reservation"`
	Name               string        `json:"name"`
	SKU                string        `json:"sku"`
	Region             string        `json:"region" doc:"The reservation's region; empty for a savings plan, which applies in every region"`
	Term               string        `json:"term" enum:"P1Y,P3Y,P5Y"`
	Quantity           float64       `json:"quantity" doc:"Reserved instances; 1 for a savings plan"`
	PurchaseDate       ledger.Day    `json:"purchase_date" format:"date"`
	ExpiryDate         ledger.Day    `json:"expiry_date" format:"date" doc:"The first day the commitment no longer applies: its term after its purchase"`
	DaysLeft           int           `json:"days_left" doc:"Days from as_of to expiry_date"`
	AlertThreshold     *int          `json:"alert_threshold" doc:"The narrowest threshold crossed: 7, 30 or 90 when days_left is at most that; null before the widest"`
	Amount             ledger.Amount `json:"amount" doc:"The price of the whole term; for a savings plan, each day's commitment over the days of the term"`
	HourlyCommitment   *float64      `json:"hourly_commitment" doc:"A savings plan's commitment per hour in currency, as the provider states it; null for a reservation"`
	Currency           string        `json:"currency"`
}

type expiringIn struct {
	Tenants    sdk.TenantIDs `query:"tenant_ids"`
	WithinDays int           `query:"within_days" minimum:"1" maximum:"1826" default:"90" doc:"List the commitments ending within this many days of today; 90, the widest threshold, lists every one alerting"`
}

func (h *Handlers) expiring(ctx context.Context, in *expiringIn) (*Expiring, error) {
	today := h.today()
	rows, err := h.Store.Expiring(ctx, in.Tenants, today, today+ledger.Day(in.WithinDays))
	if err != nil {
		return nil, err
	}
	out := &Expiring{AsOf: today, WithinDays: in.WithinDays, Thresholds: ExpiryThresholds, Items: make([]Expiry, 0, len(rows))}
	for _, c := range rows {
		left := int(c.ExpiryDay - today)
		e := Expiry{TenantID: c.TenantID, Kind: c.Kind, ReservationOrderID: c.ReservationOrderID, Name: c.Name, SKU: c.SKU, Region: c.Region, Term: c.Term,
			Quantity: c.Quantity, PurchaseDate: c.PurchaseDay, ExpiryDate: c.ExpiryDay, DaysLeft: left, Amount: c.Amount, Currency: c.Currency}
		if c.Kind == ledger.KindSavingsPlan {
			plan, hourly := c.SavingsPlanID, c.HourlyCommitment
			e.SavingsPlanID, e.HourlyCommitment = &plan, &hourly
		}
		if th, ok := AlertThreshold(left); ok {
			e.AlertThreshold = &th
		}
		out.Items = append(out.Items, e)
	}
	return out, nil
}

// Expiring reads the tenants' reservation orders and savings plans still
// running after today and ending by until, soonest first.
func (s *Store) Expiring(ctx context.Context, tenants []string, today, until ledger.Day) ([]ledger.Commitment, error) {
	out := []ledger.Commitment{}
	err := s.DB.NewSelect().Model(&out).
		Where("tenant_id IN (?)", bun.List(tenants)).Where("expiry_day > ?", today).Where("expiry_day <= ?", until).
		Order("expiry_day", "tenant_id", "reservation_order_id").Scan(ctx)
	return out, err
}

// Recommendations are the provider's advice to buy reservations and
// savings plans.
type Recommendations struct {
	Items []Recommendation `json:"items" doc:"By tenant, the largest net savings first"`
}

// Recommendation is the advice to buy reservations of one SKU in one
// location, or a savings plan of an hourly commitment, for one tenant.
type Recommendation struct {
	TenantID            string        `json:"tenant_id"`
	Kind                string        `json:"kind" enum:"reservation,savings_plan"`
	SKU                 string        `json:"sku" doc:"The reservation's SKU, or the savings plan's (Compute_Savings_Plan)"`
	Location            string        `json:"location" doc:"Empty for a savings plan, which applies in every region"`
	Term                string        `json:"term" enum:"P1Y,P3Y,P5Y"`
	Scope               string        `json:"scope" doc:"Shared: the reservation applies across the billing account"`
	LookBackDays        int           `json:"look_back_days" doc:"The days of usage the advice is drawn from"`
	RecommendedQuantity float64       `json:"recommended_quantity"`
	NormalizedSize      string        `json:"normalized_size" doc:"The smallest size of the SKU's instance size flexibility group"`
	FlexibilityGroup    string        `json:"instance_flexibility_group"`
	NormalizedRatio     float64       `json:"normalized_size_ratio"`
	Currency            string        `json:"currency"`
	CostWithout         ledger.Amount `json:"cost_without_reservations" doc:"The look-back period's cost without the recommended reservations"`
	CostWith            ledger.Amount `json:"cost_with_reservations" doc:"The same period's cost had they been bought"`
	NetSavings          ledger.Amount `json:"net_savings" doc:"What they would have saved over the period"`
	FirstUsageDate      ledger.Day    `json:"first_usage_date" format:"date"`
	// A savings plan's figures; null for reservations.
	CommitmentAmount          *float64 `json:"commitment_amount" doc:"A savings plan's commitment per hour to buy, in currency; null for reservations"`
	AverageUtilizationPercent *float64 `json:"average_utilization_percent" doc:"The percentage of a savings plan's commitment the look-back period's usage would have used; null for reservations"`
	CoveragePercent           *float64 `json:"coverage_percent" doc:"The percentage of the look-back period's eligible usage a savings plan would have covered; null for reservations"`
}

type recommendationsIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
}

func (h *Handlers) recommendations(ctx context.Context, in *recommendationsIn) (*Recommendations, error) {
	rows, err := h.Store.Recommendations(ctx, in.Tenants)
	if err != nil {
		return nil, err
	}
	out := &Recommendations{Items: make([]Recommendation, 0, len(rows))}
	for _, r := range rows {
		rec := Recommendation{TenantID: r.TenantID, Kind: r.Kind, SKU: r.SKU, Location: r.Location, Term: r.Term, Scope: r.Scope,
			LookBackDays: r.LookBackDays, RecommendedQuantity: r.RecommendedQuantity, NormalizedSize: r.NormalizedSize,
			FlexibilityGroup: r.FlexibilityGroup, NormalizedRatio: r.FlexibilityRatio, Currency: r.Currency,
			CostWithout: r.CostWithout, CostWith: r.CostWith, NetSavings: r.NetSavings, FirstUsageDate: r.FirstUsageDay}
		if r.Kind == ledger.KindSavingsPlan {
			amount, used, covered := r.CommitmentAmount, r.AverageUtilization, r.Coverage
			rec.CommitmentAmount, rec.AverageUtilizationPercent, rec.CoveragePercent = &amount, &used, &covered
		}
		out.Items = append(out.Items, rec)
	}
	return out, nil
}

// Recommendations reads the tenants' stored recommendations, by tenant and
// the largest net savings first.
func (s *Store) Recommendations(ctx context.Context, tenants []string) ([]ledger.Recommendation, error) {
	out := []ledger.Recommendation{}
	err := s.DB.NewSelect().Model(&out).Where("tenant_id IN (?)", bun.List(tenants)).
		Order("tenant_id").OrderExpr("net_savings_cents DESC").Order("position").Scan(ctx)
	return out, err
}

// commitmentRoutes declare the routes of expiring commitments and of
// recommendations to buy.
func (h *Handlers) commitmentRoutes() []sdk.Route {
	tags := []string{tag}
	return []sdk.Route{
		sdk.Get("/api/v1/costs/commitments/expiring", sdk.Op{ID: "costs-commitments-expiring", Tags: tags, Summary: "Reservations and savings plans about to expire",
			Description: "The reservation orders and savings plans (kind) of the tenants' billing accounts that end within within_days days of today (UTC), soonest first, " +
				"each with the narrowest of the alert thresholds (90, 30 and 7 days before expiry) it has crossed. " +
				"Purchases and plans are those the last cost sync read; a tenant without a billing account has none."}, h.expiring),
		sdk.Get("/api/v1/costs/commitments/recommendations", sdk.Op{ID: "costs-commitments-recommendations", Tags: tags, Summary: "Reservation and savings plan purchase recommendations",
			Description: "The provider's recommendations to buy virtual machine reservations and savings plans (kind) shared across each tenant's billing account, drawn from the last 30 days of usage, " +
				"as the last cost sync read them: a reservation's names a SKU, a location and a quantity, a savings plan's an hourly commitment with the utilisation and coverage it would have had. " +
				"Amounts are in the currency each names, never converted."}, h.recommendations),
	}
}
