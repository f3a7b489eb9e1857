package ledger

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"time"

	"github.com/uptrace/bun"
)

// UpsertReservations writes reservation days in one transaction, a
// multi-row insert per thousand rows; a day already stored for the same
// tenant and reservation takes the new figures.
func (s *Store) UpsertReservations(ctx context.Context, rows []Reservation) error {
	if len(rows) == 0 {
		return nil
	}
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for start := 0; start < len(rows); start += batchRows {
			batch := rows[start:min(start+batchRows, len(rows))]
			q := tx.NewInsert().Model(&batch).On("CONFLICT (tenant_id, reservation_id, day) DO UPDATE")
			for _, col := range []string{"reservation_order_id", "sku", "reserved_hours", "used_hours",
				"min_utilization", "avg_utilization", "max_utilization",
				"flexibility_group", "normalized_ratio", "currency", "cost_cents", "unused_cents", "synced_at"} {
				q = q.Set(col + " = EXCLUDED." + col)
			}
			if _, err := q.Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// LastReservationDay is the latest day of a tenant's stored reservation
// utilisation; ok is false when none is stored.
func (s *Store) LastReservationDay(ctx context.Context, tenantID string) (day Day, ok bool, err error) {
	var last sql.NullInt32
	err = s.DB.NewSelect().Table("cost_reservations").ColumnExpr("MAX(day)").Where("tenant_id = ?", tenantID).Scan(ctx, &last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, false, err
	}
	return Day(last.Int32), last.Valid, nil
}

// The kinds of commitment.
const (
	KindReservation = "reservation"
	KindSavingsPlan = "savings_plan"
)

// Commitment is a reservation order's purchase or a savings plan: row of
// cost_commitments.
type Commitment struct {
	bun.BaseModel `bun:"table:cost_commitments"`
	TenantID      string `bun:"tenant_id,pk"`
	// ReservationOrderID is the reservation order's id, or the savings
	// plan order's.
	ReservationOrderID string `bun:"reservation_order_id,pk"`
	// Kind is KindReservation or KindSavingsPlan.
	Kind string `bun:"kind"`
	// SavingsPlanID and HourlyCommitment (in Currency, as the provider
	// states it) are a savings plan's; empty and 0 for a reservation.
	SavingsPlanID    string  `bun:"savings_plan_id"`
	HourlyCommitment float64 `bun:"hourly_commitment"`
	Name             string  `bun:"name"`
	SKU              string  `bun:"sku"`
	Region           string  `bun:"region"`
	Term             string  `bun:"term"`
	// The order covers PurchaseDay up to the day before ExpiryDay.
	PurchaseDay Day       `bun:"purchase_day"`
	ExpiryDay   Day       `bun:"expiry_day"`
	Quantity    float64   `bun:"quantity"`
	Currency    string    `bun:"currency"`
	Amount      Amount    `bun:"amount_cents"`
	SyncedAt    time.Time `bun:"synced_at"`
}

// DayCost is the order's price spread evenly over the days of its term,
// to the cent: the day's cost is the whole cents the term has cost by its
// end less those it had cost by its start, so the days add up to Amount
// exactly. A day outside the term costs 0.
func (c Commitment) DayCost(d Day) Amount {
	days := int64(c.ExpiryDay - c.PurchaseDay)
	i := int64(d - c.PurchaseDay)
	if days <= 0 || i < 0 || i >= days {
		return 0
	}
	a := int64(c.Amount)
	return Amount(a*(i+1)/days - a*i/days)
}

// DayCommitment is what a savings plan of hourly commitment commits a day:
// 24 hours' worth in cents, rounded half away from zero. Computing it once
// per day, rather than summing 24 rounded hours, keeps a day's figure
// exact to the cent whatever the hourly amount's decimals.
func DayCommitment(hourly float64) Amount {
	return Amount(math.Round(hourly * 24 * 100))
}

// UsedShare is the part of a day's commitment the usage used: committed
// times avgUtilization percent, rounded to the cent half away from zero
// and never above committed; the unused money is committed less it.
func UsedShare(committed Amount, avgUtilization float64) Amount {
	used := Amount(math.Round(float64(committed) * max(0, avgUtilization) / 100))
	return min(used, committed)
}

// UnusedShare is the part of cost the unused hours of a day wasted,
// rounded to the cent half away from zero.
func UnusedShare(cost Amount, reservedHours, usedHours float64) Amount {
	if reservedHours <= 0 || usedHours >= reservedHours {
		return 0
	}
	return Amount(math.Round(float64(cost) * (reservedHours - usedHours) / reservedHours))
}

// Recommendation is the provider's advice to buy reservations or a
// savings plan for a tenant: row of cost_reservation_recommendations.
type Recommendation struct {
	bun.BaseModel `bun:"table:cost_reservation_recommendations"`
	TenantID      string `bun:"tenant_id,pk"`
	Position      int    `bun:"position,pk"`
	// Kind is KindReservation or KindSavingsPlan. A savings plan's names
	// the commitment per hour to buy in Currency (CommitmentAmount) and
	// the percentages of it the usage would have used (AverageUtilization)
	// and of the usage it would have covered (Coverage); its SKU is the
	// provider's, its location, quantity and size flexibility empty.
	Kind                string    `bun:"kind"`
	CommitmentAmount    float64   `bun:"commitment_amount"`
	AverageUtilization  float64   `bun:"average_utilization"`
	Coverage            float64   `bun:"coverage"`
	SKU                 string    `bun:"sku"`
	Location            string    `bun:"location"`
	Term                string    `bun:"term"`
	Scope               string    `bun:"scope"`
	LookBackDays        int       `bun:"look_back_days"`
	RecommendedQuantity float64   `bun:"recommended_quantity"`
	NormalizedSize      string    `bun:"normalized_size"`
	FlexibilityGroup    string    `bun:"flexibility_group"`
	FlexibilityRatio    float64   `bun:"flexibility_ratio"`
	Currency            string    `bun:"currency"`
	CostWithout         Amount    `bun:"cost_without_cents"`
	CostWith            Amount    `bun:"cost_with_cents"`
	NetSavings          Amount    `bun:"net_savings_cents"`
	FirstUsageDay       Day       `bun:"first_usage_day"`
	SyncedAt            time.Time `bun:"synced_at"`
}

// ReplaceCommitments replaces a tenant's reservation purchases and savings
// plans with rows in one transaction.
func (s *Store) ReplaceCommitments(ctx context.Context, tenantID string, rows []Commitment) error {
	return replaceTenantRows(ctx, s.DB, (*Commitment)(nil), tenantID, rows)
}

// ReplaceRecommendations replaces a tenant's recommendations to buy
// reservations and savings plans with rows in one transaction.
func (s *Store) ReplaceRecommendations(ctx context.Context, tenantID string, rows []Recommendation) error {
	return replaceTenantRows(ctx, s.DB, (*Recommendation)(nil), tenantID, rows)
}

// replaceTenantRows deletes a tenant's rows of model's table and inserts
// rows, in one transaction, so a reader sees the old set or the new one.
func replaceTenantRows[T any](ctx context.Context, db *bun.DB, model *T, tenantID string, rows []T) error {
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model(model).Where("tenant_id = ?", tenantID).Exec(ctx); err != nil {
			return err
		}
		for start := 0; start < len(rows); start += batchRows {
			batch := rows[start:min(start+batchRows, len(rows))]
			if _, err := tx.NewInsert().Model(&batch).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// SavingsPlanDay is a savings plan's utilisation and money on one day: row
// of cost_savings_plan_days. Committed is the day's commitment, Used its
// part the usage used and Unused the rest, all in Currency.
type SavingsPlanDay struct {
	bun.BaseModel      `bun:"table:cost_savings_plan_days"`
	TenantID           string    `bun:"tenant_id,pk"`
	SavingsPlanID      string    `bun:"savings_plan_id,pk"`
	Day                Day       `bun:"day,pk"`
	SavingsPlanOrderID string    `bun:"savings_plan_order_id"`
	MinUtilization     float64   `bun:"min_utilization"`
	AvgUtilization     float64   `bun:"avg_utilization"`
	MaxUtilization     float64   `bun:"max_utilization"`
	Currency           string    `bun:"currency"`
	Committed          Amount    `bun:"committed_cents"`
	Used               Amount    `bun:"used_cents"`
	Unused             Amount    `bun:"unused_cents"`
	SyncedAt           time.Time `bun:"synced_at"`
}

// UpsertSavingsPlanDays writes savings plan days in one transaction, a
// multi-row insert per thousand rows; a day already stored for the same
// tenant and plan takes the new figures.
func (s *Store) UpsertSavingsPlanDays(ctx context.Context, rows []SavingsPlanDay) error {
	if len(rows) == 0 {
		return nil
	}
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for start := 0; start < len(rows); start += batchRows {
			batch := rows[start:min(start+batchRows, len(rows))]
			q := tx.NewInsert().Model(&batch).On("CONFLICT (tenant_id, savings_plan_id, day) DO UPDATE")
			for _, col := range []string{"savings_plan_order_id", "min_utilization", "avg_utilization", "max_utilization",
				"currency", "committed_cents", "used_cents", "unused_cents", "synced_at"} {
				q = q.Set(col + " = EXCLUDED." + col)
			}
			if _, err := q.Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// LastSavingsPlanDay is the latest day of a tenant's stored savings plan
// utilisation; ok is false when none is stored.
func (s *Store) LastSavingsPlanDay(ctx context.Context, tenantID string) (day Day, ok bool, err error) {
	var last sql.NullInt32
	err = s.DB.NewSelect().Table("cost_savings_plan_days").ColumnExpr("MAX(day)").Where("tenant_id = ?", tenantID).Scan(ctx, &last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, false, err
	}
	return Day(last.Int32), last.Valid, nil
}

// Commitments are a tenant's reservation purchases and savings plans by
// order.
func (s *Store) Commitments(ctx context.Context, tenantID string) (map[string]Commitment, error) {
	var rows []Commitment
	if err := s.DB.NewSelect().Model(&rows).Where("tenant_id = ?", tenantID).Scan(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]Commitment, len(rows))
	for _, c := range rows {
		out[c.ReservationOrderID] = c
	}
	return out, nil
}
