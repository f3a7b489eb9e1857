// Package anomalies finds cost anomalies — days on which a tenant's spend
// on one service, in one currency, rose far above what that service
// usually costs on that weekday — and serves the routes that list,
// summarise and acknowledge them.
//
// # The method
//
// The sync calls Detector.Evaluate for each tenant with the days it wrote.
// Each day of each series of cost_service_daily (tenant, service,
// currency) is judged against the 28 days before it:
//
//   - Expected cost: the median of the same weekday's cost in the previous
//     four weeks. Costs follow the week (batch and web load drop at
//     weekends), so a Monday is compared with Mondays; the median ignores
//     one earlier spike among the four, and a four-week window follows
//     growth and yearly seasonality closely.
//   - Spread: 1.4826 times the median absolute deviation (MAD) of the 28
//     history days' residuals, each from its own weekday's median — a
//     robust standard deviation that earlier spikes barely move — widened
//     1.56 times to the spread of a new day about a median of four (the
//     residuals are smaller, being taken from the medians they helped
//     make; the ratio is simulated for normal noise). It is
//     floored at 3 % of the expected cost, so a perfectly flat series does
//     not turn every small rise into an anomaly, and at one cent, the
//     resolution costs are kept at.
//   - Score: (actual − expected) / spread, a robust z-score.
//   - Anomalous when the score exceeds K = 4, the rise (the impact,
//     actual − expected) is at least 25 % of the expected cost, and the
//     impact is at least the currency's floor (MinImpacts: configured per
//     currency; in a currency not configured, the reporting currency's
//     floor at the latest exchange rate when rates are synced; 1.00
//     otherwise). Every threshold but the last is relative to the
//     series' own scale, so a Key Vault costing 10.00 a day that triples
//     is flagged as surely as a fleet of virtual machines that does; the
//     floor only keeps rises too small to matter off the list, and is
//     set per currency because a unit of JPY or INR is worth far less
//     than one of USD.
//
// Only rises are anomalies: a fall is most often a recent day the provider
// has not finished reporting, which it restates later. A day is judged only
// when the tenant has costs from at least 28 days before it, and a series
// that usually costs nothing on that weekday (an expected cost of zero) has
// no baseline and is not judged.
//
// An anomaly is stored once per tenant, service, currency and day with
// its expected and actual cost, impact, deviation (impact as a percentage
// of the expected cost) and score. Re-evaluating a day, as the sync does
// for the recent days providers restate, updates that row's figures and
// keeps its id, detection time and acknowledgement; a day that is no
// longer anomalous loses its anomaly unless someone acknowledged it, in
// which case it is kept as it was, as the record of what was looked at.
package anomalies

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// chunkDays bounds how many days Evaluate judges at once, so the history
// it holds stays small when the sync writes a whole year.
const chunkDays = 92

// batchRows is how many anomalies one INSERT carries: well under both
// databases' bound-parameter limits at twelve columns a row.
const batchRows = 1000

// Detector judges a tenant's daily service costs and stores the anomalies.
type Detector struct {
	DB *bun.DB
	// MinImpacts are the currencies' floors of the impact flagged.
	MinImpacts MinImpacts
	// Rates, with conversion on, turn the reporting currency's floor into
	// that of a currency MinImpacts does not list; nil leaves such a
	// currency at DefaultMinImpact.
	Rates *exchange.Converter
	// Now is the clock of detected_at; nil means time.Now.
	Now func() time.Time
	// Host takes an event (EventAnomaly) for each anomaly first stored;
	// nil raises none.
	Host *sdk.Host
	// Logger logs the events that could not be raised.
	Logger hclog.Logger
}

// Evaluate judges the tenant's days from through to (inclusive), which the
// sync has just written and rolled up, and stores what it finds: after it,
// the tenant's unacknowledged anomalies of those days are exactly the days
// the method flags.
func (d *Detector) Evaluate(ctx context.Context, tenant sdk.Tenant, from, to ledger.Day) error {
	if to < from {
		return errors.New("anomalies: evaluation range ends before it starts")
	}
	var first []ledger.Day
	err := d.DB.NewSelect().Table("cost_tenant_daily").ColumnExpr("MIN(day)").
		Where("tenant_id = ?", tenant.ID).Having("COUNT(*) > 0").Scan(ctx, &first)
	if err != nil {
		return err
	}
	// Without costs no day is judged, so none can be anomalous.
	judgeFrom := to + 1
	if len(first) > 0 {
		judgeFrom = first[0] + HistoryDays
	}
	for lo := from; lo <= to; lo += chunkDays {
		if err := d.evaluate(ctx, tenant.ID, lo, min(lo+chunkDays-1, to), judgeFrom); err != nil {
			return err
		}
	}
	return nil
}

type seriesKey struct{ service, currency string }

// floor is the least impact flagged in currency: its configured floor;
// else, with conversion on, the reporting currency's floor at the latest
// rate on or before day; else DefaultMinImpact.
func (d *Detector) floor(ctx context.Context, currency string, day ledger.Day) (ledger.Amount, error) {
	if v, ok := d.MinImpacts[currency]; ok {
		return v, nil
	}
	if d.Rates == nil {
		return DefaultMinImpact, nil
	}
	v, ok, err := d.Rates.Floor(ctx, d.MinImpacts.For(d.Rates.Code()), currency, day)
	if err != nil {
		return 0, fmt.Errorf("anomalies: the floor in %s: %w", currency, err)
	}
	if !ok {
		return DefaultMinImpact, nil
	}
	return v, nil
}

// evaluate judges days lo..hi from judgeFrom on and replaces the range's
// anomalies in one transaction.
func (d *Detector) evaluate(ctx context.Context, tenantID string, lo, hi, judgeFrom ledger.Day) error {
	start := lo - HistoryDays
	series := map[seriesKey][]ledger.Amount{}
	rows, err := d.DB.QueryContext(ctx, `SELECT service, currency, day, cost_cents FROM cost_service_daily
		WHERE tenant_id = ? AND day BETWEEN ? AND ?`, tenantID, start, hi)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k seriesKey
		var day ledger.Day
		var cost ledger.Amount
		if err := rows.Scan(&k.service, &k.currency, &day, &cost); err != nil {
			rows.Close()
			return err
		}
		costs, ok := series[k]
		if !ok {
			// A day without a row cost nothing.
			costs = make([]ledger.Amount, hi-start+1)
			series[k] = costs
		}
		costs[day-start] = cost
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	at := now().UTC()
	found := []Anomaly{}
	floors := map[string]ledger.Amount{}
	for k, costs := range series {
		minImpact, ok := floors[k.currency]
		if !ok {
			if minImpact, err = d.floor(ctx, k.currency, hi); err != nil {
				return err
			}
			floors[k.currency] = minImpact
		}
		for day := max(lo, judgeFrom); day <= hi; day++ {
			i := int(day - start)
			v := Judge(costs[i-HistoryDays:i], costs[i], minImpact)
			if !v.Anomalous {
				continue
			}
			found = append(found, Anomaly{TenantID: tenantID, Service: k.service, Currency: k.currency, Day: day, Month: day.Month(),
				Expected: v.Expected, Actual: v.Actual, Impact: v.Impact, DeviationPercent: v.DeviationPercent, Score: v.Score,
				DetectedAt: at, EvaluatedAt: at})
		}
	}
	var added []Anomaly
	err = d.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		added, err = replace(ctx, tx, tenantID, lo, hi, found)
		return err
	})
	if err != nil {
		return err
	}
	d.raise(ctx, added)
	return nil
}

// replace makes found the unacknowledged anomalies of the tenant's days
// lo..hi: it removes the others and upserts found, keeping the id,
// detection time and acknowledgement of a day flagged before. It returns
// those of found that were not stored before.
func replace(ctx context.Context, tx bun.Tx, tenantID string, lo, hi ledger.Day, found []Anomaly) ([]Anomaly, error) {
	type anomalyKey struct {
		service, currency string
		day               ledger.Day
	}
	keep := make(map[anomalyKey]bool, len(found))
	for _, a := range found {
		keep[anomalyKey{a.Service, a.Currency, a.Day}] = true
	}
	var existing []Anomaly
	err := tx.NewSelect().Model(&existing).Column("id", "service", "currency", "day", "acknowledged").
		Where("tenant_id = ? AND day BETWEEN ? AND ?", tenantID, lo, hi).Scan(ctx)
	if err != nil {
		return nil, err
	}
	var stale []int64
	stored := make(map[anomalyKey]bool, len(existing))
	for _, a := range existing {
		k := anomalyKey{a.Service, a.Currency, a.Day}
		stored[k] = true
		if !a.Acknowledged && !keep[k] {
			stale = append(stale, a.ID)
		}
	}
	if len(stale) > 0 {
		// Still unacknowledged: one acknowledged since the select stays.
		if _, err := tx.NewDelete().Model((*Anomaly)(nil)).Where("id IN (?) AND acknowledged = ?", bun.List(stale), false).Exec(ctx); err != nil {
			return nil, err
		}
	}
	var added []Anomaly
	for _, a := range found {
		if !stored[anomalyKey{a.Service, a.Currency, a.Day}] {
			added = append(added, a)
		}
	}
	for start := 0; start < len(found); start += batchRows {
		batch := found[start:min(start+batchRows, len(found))]
		_, err := tx.NewInsert().Model(&batch).ExcludeColumn("id").
			On("CONFLICT (tenant_id, service, currency, day) DO UPDATE").
			Set("expected_cents = EXCLUDED.expected_cents").
			Set("actual_cents = EXCLUDED.actual_cents").
			Set("impact_cents = EXCLUDED.impact_cents").
			Set("deviation_percent = EXCLUDED.deviation_percent").
			Set("score = EXCLUDED.score").
			Set("evaluated_at = EXCLUDED.evaluated_at").
			Exec(ctx)
		if err != nil {
			return nil, err
		}
	}
	return added, nil
}
