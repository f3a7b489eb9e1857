package exchange

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// JobType is the rates sync's job, of no tenant.
const JobType = "exchange_rates"

// Syncer fetches the rates against the reporting currency into the store.
type Syncer struct {
	Store  *Store
	Source Source
	// Currency is the reporting currency, the rates' base.
	Currency string
	// BackfillDays is how many days the first sync fetches, as the costs'
	// first sync does.
	BackfillDays int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Logger says why Ensure fetched nothing; nil says nothing.
	Logger hclog.Logger

	mu sync.Mutex
	// ensured is the day Ensure last looked at the store.
	ensured ledger.Day
}

// Job is the daily sync of the rates. It belongs to no tenant, so it keeps
// no tenant's freshness: the reads name the dates of the rates they used.
func (s *Syncer) Job() sdk.Job {
	return sdk.Job{Name: JobType, JobType: JobType, Schedule: "@every 6h", Run: s.Run}
}

// Ensure fetches the rates as Run does when the store holds none usable
// today (none of the last MaxCarryDays days), at most once a day: the
// costs sync calls it for each tenant before judging the tenant's
// anomalies, so an installation converts from its first sync rather than
// from the rates job's first scheduled run, hours later. Tenants synced at
// once wait for one fetch. A failed fetch fails no tenant's costs: it is
// logged, and the rates job tries again on its schedule.
func (s *Syncer) Ensure(ctx context.Context, _ sdk.Tenant, _, _ ledger.Day) error {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	today := ledger.DayOf(now())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ensured == today {
		return nil
	}
	last, ok, err := s.Store.LastDay(ctx, s.Currency)
	if err != nil {
		return err
	}
	s.ensured = today
	if ok && last >= today-MaxCarryDays {
		return nil
	}
	if _, err := s.Run(ctx, nil); err != nil && s.Logger != nil {
		s.Logger.Warn("exchange rates not fetched with the costs; the rates job tries again on its schedule", "source", s.Source.String(), "error", err)
	}
	return nil
}

// Run fetches the days from MaxCarryDays before the last stored day (so a
// rate published late, or restated, is taken) or, on the first run, the
// BackfillDays up to today, through today, and stores them.
func (s *Syncer) Run(ctx context.Context, run *sdk.JobRun) (int64, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	at := now()
	today := ledger.DayOf(at)
	from := today - ledger.Day(s.BackfillDays) + 1
	last, ok, err := s.Store.LastDay(ctx, s.Currency)
	if err != nil {
		return 0, err
	}
	if ok && last-MaxCarryDays > from {
		from = min(last-MaxCarryDays, today)
	}
	if run != nil {
		run.Progress(0, 1, fmt.Sprintf("fetching the %s rates of %s to %s from %s", s.Currency, from, today, s.Source))
	}
	quotes, err := s.Source.Fetch(ctx, s.Currency, from, today)
	if err != nil {
		return 0, err
	}
	if err := s.Store.Upsert(ctx, quotes, s.Source.String(), at); err != nil {
		return 0, err
	}
	if run != nil {
		run.Progress(1, 1, fmt.Sprintf("stored %d rates", len(quotes)))
	}
	return int64(len(quotes)), nil
}
