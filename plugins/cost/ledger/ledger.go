// Package ledger is the cost plugin's store of daily costs: the tables the
// sync writes and every read aggregates, their migrations, and the two
// value types money and dates are kept in.
//
// Amounts are integer cents of their currency (Amount), so sums in the
// database and in Go are exact; a cloud's floating-point cost is rounded
// half away from zero once, when it is stored. Days are days since
// 1970-01-01 UTC (Day), which both databases compare, subtract and index
// alike; a row also carries its month as yyyymm for grouping.
//
// The raw table cost_daily holds what the cloud reports per subscription,
// day, service, resource group and currency. Two rollups serve the reads:
// cost_service_daily (tenant, day, service, currency) and
// cost_tenant_daily (tenant, day, currency). Beside each, a table of
// running totals (cost_service_cumulative, cost_tenant_cumulative: a
// series' cost from its tenant's first day through each day, dense up to
// the tenant's last day in cost_cumulative_extent) lets a read sum any
// range of days from two rows per series, the range's last day minus the
// day before its first, however long the range. Store.Upsert writes raw
// rows and Store.Rollup rebuilds both rollups for a tenant's days and
// its running totals from the first of them on; the sync calls one after
// the other. Every rollup raises the tenant's revision in
// cost_tenant_revisions (RevisionTable) in its transaction, so the reads
// keep what they computed from the rollups and running totals until it
// changes.
//
// Apart from the days, cost_resource holds each resource's cost summed
// over one recent period per subscription (cost_resource_period), which
// Store.ReplaceResourceCosts replaces whole.
//
// The migrations also hold the plugin's other tables, which their own
// packages read and write: the anomalies', the budgets' and the daily
// exchange rates' (cost_exchange_rates, package exchange).
package ledger

import (
	"embed"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the cost plugin's schema, applied by the host.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

// Day is a calendar day as days since 1970-01-01 UTC.
type Day int32

// DayOf returns the UTC calendar day t falls on.
func DayOf(t time.Time) Day {
	return Day(math.Floor(float64(t.Unix()) / 86400))
}

// ParseDay reads a YYYY-MM-DD date.
func ParseDay(s string) (Day, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return 0, err
	}
	return DayOf(t), nil
}

// Time is the day's midnight UTC.
func (d Day) Time() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

// String is the day as YYYY-MM-DD.
func (d Day) String() string { return d.Time().Format(time.DateOnly) }

// Month is the day's month as yyyymm.
func (d Day) Month() int {
	y, m, _ := d.Time().Date()
	return y*100 + int(m)
}

// MarshalText writes the day as YYYY-MM-DD, so it reads as a date in JSON.
func (d Day) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a YYYY-MM-DD date.
func (d *Day) UnmarshalText(b []byte) error {
	v, err := ParseDay(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Amount is money in cents of its currency.
type Amount int64

// AmountOf rounds a cloud's cost to cents, half away from zero.
func AmountOf(v float64) Amount { return Amount(math.Round(v * 100)) }

// String is the amount with two decimals, as "-12.30".
func (a Amount) String() string {
	// Unsigned, so that the most negative amount has a magnitude too.
	sign, n := "", uint64(a)
	if a < 0 {
		sign, n = "-", -n
	}
	return fmt.Sprintf("%s%d.%02d", sign, n/100, n%100)
}

// Float is the amount in units of its currency, for arithmetic that is
// not money (ratios, regressions); never sum these.
func (a Amount) Float() float64 { return float64(a) / 100 }

// MarshalJSON writes the amount as a JSON number with two decimals,
// exactly: 1234.5 is written 1234.50, never 1234.4999999.
func (a Amount) MarshalJSON() ([]byte, error) { return []byte(a.String()), nil }

// Schema describes an amount in the OpenAPI document as the JSON number it
// is written as; derived from its Go type it would read as an integer.
func (Amount) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeNumber, Description: "An amount of money in units of its currency, with two decimals"}
}

// UnmarshalJSON reads a JSON number of at most two decimals.
func (a *Amount) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("amount %s: %w", b, err)
	}
	if math.IsInf(v, 0) || math.IsNaN(v) || math.Abs(v) > 9e13 {
		return fmt.Errorf("amount %s out of range", b)
	}
	*a = AmountOf(v)
	return nil
}
