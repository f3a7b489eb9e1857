package exchange

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/plugins/cost/ledger"
)

// MaxCarryDays is how many days before a day without a rate the latest
// rate may be: enough for a long weekend with its holidays (Easter's is
// four days), short enough that a sync that has stopped leaves totals
// null instead of converting at a rate weeks old.
const MaxCarryDays = 7

// stored is one row of cost_exchange_rates.
type stored struct {
	bun.BaseModel `bun:"table:cost_exchange_rates"`
	Base          string     `bun:"base,pk"`
	Quote         string     `bun:"quote,pk"`
	Day           ledger.Day `bun:"day,pk"`
	Rate          Rate       `bun:"rate_e10"`
	Source        string     `bun:"source"`
	SyncedAt      time.Time  `bun:"synced_at"`
}

// Store reads and writes the daily rates.
type Store struct{ DB *bun.DB }

// batchRows is how many rates one INSERT carries.
const batchRows = 1000

// Upsert writes the quotes in one transaction; a day's rate already
// stored takes the new one, so writing the same days twice changes
// nothing but their source and time.
func (s *Store) Upsert(ctx context.Context, quotes []Quote, source string, at time.Time) error {
	if len(quotes) == 0 {
		return nil
	}
	rows := make([]stored, len(quotes))
	for i, q := range quotes {
		rows[i] = stored{Base: q.Base, Quote: q.Quote, Day: q.Day, Rate: q.Rate, Source: source, SyncedAt: at.UTC()}
	}
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for start := 0; start < len(rows); start += batchRows {
			batch := rows[start:min(start+batchRows, len(rows))]
			if _, err := tx.NewInsert().Model(&batch).
				On("CONFLICT (base, quote, day) DO UPDATE").
				Set("rate_e10 = EXCLUDED.rate_e10").Set("source = EXCLUDED.source").Set("synced_at = EXCLUDED.synced_at").
				Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// LastDay is the latest day with a rate against base; ok is false when
// there is none.
func (s *Store) LastDay(ctx context.Context, base string) (day ledger.Day, ok bool, err error) {
	var last sql.NullInt64
	err = s.DB.NewRaw(`SELECT MAX(day) FROM cost_exchange_rates WHERE base = ?`, base).Scan(ctx, &last)
	return ledger.Day(last.Int64), last.Valid, err
}

// Latest is the latest rate of quote against base on or before day;
// ok is false when there is none.
func (s *Store) Latest(ctx context.Context, base, quote string, day ledger.Day) (q Quote, ok bool, err error) {
	var row stored
	err = s.DB.NewSelect().Model(&row).Where("base = ? AND quote = ? AND day <= ?", base, quote, day).
		OrderExpr("day DESC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Quote{}, false, nil
	}
	if err != nil {
		return Quote{}, false, err
	}
	return Quote{Day: row.Day, Base: row.Base, Quote: row.Quote, Rate: row.Rate}, true, nil
}

// Table loads the rates of the quoted currencies against base that the
// days from through to may use: theirs, and up to MaxCarryDays before.
func (s *Store) Table(ctx context.Context, base string, quotes []string, from, to ledger.Day) (Table, error) {
	t := Table{}
	if len(quotes) == 0 {
		return t, nil
	}
	var rows []stored
	if err := s.DB.NewSelect().Model(&rows).Column("quote", "day", "rate_e10").
		Where("base = ? AND quote IN (?) AND day BETWEEN ? AND ?", base, bun.List(quotes), from-MaxCarryDays, to).
		OrderExpr("quote, day").Scan(ctx); err != nil {
		return nil, err
	}
	for _, r := range rows {
		t[r.Quote] = append(t[r.Quote], DayRate{Day: r.Day, Rate: r.Rate})
	}
	return t, nil
}

// DayRate is a currency's rate published on a day.
type DayRate struct {
	Day  ledger.Day
	Rate Rate
}

// Table holds the rates of some currencies by currency, in day order.
type Table map[string][]DayRate

// On is the rate of currency that day uses: that day's, or the latest of
// the MaxCarryDays before; ok is false when there is none.
func (t Table) On(currency string, day ledger.Day) (DayRate, bool) {
	rates := t[currency]
	// The last rate on or before day.
	lo, hi := 0, len(rates)
	for lo < hi {
		mid := (lo + hi) / 2
		if rates[mid].Day <= day {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 || day-rates[lo-1].Day > MaxCarryDays {
		return DayRate{}, false
	}
	return rates[lo-1], true
}
