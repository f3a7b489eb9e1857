package ingest

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/cost/ledger"
)

const (
	// ReservationDays is how far back a tenant's first reservation sync
	// reads.
	ReservationDays = 90
	// PurchaseYears is how far back every sync reads reservation
	// purchases: the longest term, so every reservation still running is
	// among them.
	PurchaseYears = 5
	// RecommendationLookBackDays is the period of usage the
	// recommendations a sync reads are drawn from.
	RecommendationLookBackDays = 30
)

// syncReservations syncs a tenant's commitments: reservations and savings
// plans. It replaces the billing account's reservation purchases (the
// last PurchaseYears years) and savings plans, reads the reservations'
// daily utilisation and usage details from RestateDays before the last
// day stored (or over the last ReservationDays on the first sync), prices
// each day with its order's purchase and weights it by its SKU's
// normalised size, upserts the days, does the same for the savings plans'
// days (see syncSavingsPlanDays), then replaces the account's
// recommendations to buy reservations and savings plans.
func (s *Syncer) syncReservations(ctx context.Context, tw pluginenv.TenantWork, today ledger.Day, p *pluginenv.Progress) error {
	tenant := tw.Tenant
	account := tenant.BillingAccountID
	restate := s.RestateDays
	if restate <= 0 {
		restate = DefaultRestateDays
	}
	from := today - ReservationDays + 1
	last, ok, err := s.Ledger.LastReservationDay(ctx, tenant.ID)
	if err != nil {
		return err
	}
	if ok {
		from = min(max(last-ledger.Day(restate)+1, from), today)
	}
	now := s.now().UTC()
	commitments, purchases, err := s.purchases(ctx, tw, today, now)
	if err != nil {
		return fmt.Errorf("purchases: %w", err)
	}
	plans, err := s.savingsPlans(ctx, tw, now)
	if err != nil {
		return fmt.Errorf("savings plans: %w", err)
	}
	if err := s.Ledger.ReplaceCommitments(ctx, tenant.ID, append(purchases, plans...)); err != nil {
		return err
	}
	flex, err := flexibility(ctx, tw.Cloud, account, from, today)
	if err != nil {
		return fmt.Errorf("details: %w", err)
	}
	var rows []ledger.Reservation
	err = tw.Cloud.ReservationSummaries(ctx, account, cloud.GrainDaily, from.Time(), today.Time(), func(r cloud.ReservationSummary) error {
		day := ledger.DayOf(r.UsageDate)
		f := flex.of(r.ReservationID, day)
		rows = append(rows, ledger.Reservation{TenantID: tenant.ID, ReservationID: r.ReservationID, Day: day,
			ReservationOrderID: r.ReservationOrderID, SKU: r.SKUName, ReservedHours: r.ReservedHours, UsedHours: r.UsedHours,
			MinUtilization: r.MinUtilization, AvgUtilization: r.AvgUtilization, MaxUtilization: r.MaxUtilization,
			FlexibilityGroup: f.group, NormalizedRatio: f.ratio, SyncedAt: now})
		return nil
	})
	if err == nil {
		price(rows, commitments)
		err = s.Ledger.UpsertReservations(ctx, rows)
	}
	if err == nil {
		p.Records += int64(len(rows))
	}
	p.Step(fmt.Sprintf("tenant %s reservations %s..%s: %d days", tenant.Name, from, today, len(rows)))
	if err != nil {
		return err
	}
	if err := s.syncSavingsPlanDays(ctx, tw, plans, today, restate, now, p); err != nil {
		return fmt.Errorf("savings plan utilisation: %w", err)
	}
	if err := s.syncRecommendations(ctx, tw, now); err != nil {
		return fmt.Errorf("recommendations: %w", err)
	}
	return nil
}

// purchases reads a tenant's reservation purchases of its billing account
// over the last PurchaseYears years, by reservation order and as rows.
func (s *Syncer) purchases(ctx context.Context, tw pluginenv.TenantWork, today ledger.Day, now time.Time) (map[string]ledger.Commitment, []ledger.Commitment, error) {
	var rows []ledger.Commitment
	out := map[string]ledger.Commitment{}
	err := tw.Cloud.ReservationPurchases(ctx, tw.Tenant.BillingAccountID, today.Time().AddDate(-PurchaseYears, 0, 0), today.Time(), func(r cloud.ReservationPurchase) error {
		years, ok := termYears[r.Term]
		if !ok {
			return fmt.Errorf("reservation order %s: term %q is not P1Y, P3Y or P5Y", r.ReservationOrderID, r.Term)
		}
		c := ledger.Commitment{TenantID: tw.Tenant.ID, ReservationOrderID: r.ReservationOrderID, Kind: ledger.KindReservation, Name: r.ReservationOrderName, SKU: r.SKUName,
			Region: r.Region, Term: r.Term, PurchaseDay: ledger.DayOf(r.PurchaseDate), ExpiryDay: ledger.DayOf(r.PurchaseDate.AddDate(years, 0, 0)),
			Quantity: r.Quantity, Currency: r.Currency, Amount: ledger.AmountOf(r.Amount), SyncedAt: now}
		if _, dup := out[c.ReservationOrderID]; dup {
			return fmt.Errorf("reservation order %s was purchased twice", c.ReservationOrderID)
		}
		out[c.ReservationOrderID] = c
		rows = append(rows, c)
		return nil
	})
	return out, rows, err
}

// savingsPlans reads the savings plans of a tenant's billing account as
// commitments: each plan's term commits its day's commitment (see
// ledger.DayCommitment) every day from its purchase to its expiry.
func (s *Syncer) savingsPlans(ctx context.Context, tw pluginenv.TenantWork, now time.Time) ([]ledger.Commitment, error) {
	var rows []ledger.Commitment
	seen := map[string]bool{}
	err := tw.Cloud.SavingsPlans(ctx, tw.Tenant.BillingAccountID, func(p cloud.SavingsPlan) error {
		if _, ok := termYears[p.Term]; !ok {
			return fmt.Errorf("savings plan %s: term %q is not P1Y, P3Y or P5Y", p.SavingsPlanID, p.Term)
		}
		if seen[p.SavingsPlanOrderID] {
			return fmt.Errorf("savings plan order %s was listed twice", p.SavingsPlanOrderID)
		}
		seen[p.SavingsPlanOrderID] = true
		bought, ends := ledger.DayOf(p.PurchaseDate), ledger.DayOf(p.ExpiryDate)
		rows = append(rows, ledger.Commitment{TenantID: tw.Tenant.ID, ReservationOrderID: p.SavingsPlanOrderID, Kind: ledger.KindSavingsPlan,
			SavingsPlanID: p.SavingsPlanID, HourlyCommitment: p.HourlyCommitment, Name: p.Name, SKU: p.SKUName, Term: p.Term,
			PurchaseDay: bought, ExpiryDay: ends, Quantity: 1, Currency: p.Currency,
			Amount: ledger.DayCommitment(p.HourlyCommitment) * ledger.Amount(max(0, ends-bought)), SyncedAt: now})
		return nil
	})
	return rows, err
}

// syncSavingsPlanDays reads the daily utilisation of a tenant's savings
// plans from restate days before the last day stored (or over the last
// ReservationDays on the first sync), one request per plan whose term
// meets that range, and upserts each day with its money: the day's
// commitment, the part the mean utilisation used and the rest unused. A
// day outside its plan's term commits nothing.
func (s *Syncer) syncSavingsPlanDays(ctx context.Context, tw pluginenv.TenantWork, plans []ledger.Commitment, today ledger.Day, restate int, now time.Time, p *pluginenv.Progress) error {
	tenant := tw.Tenant
	from := today - ReservationDays + 1
	last, ok, err := s.Ledger.LastSavingsPlanDay(ctx, tenant.ID)
	if err != nil {
		return err
	}
	if ok {
		from = min(max(last-ledger.Day(restate)+1, from), today)
	}
	var rows []ledger.SavingsPlanDay
	for _, c := range plans {
		start, end := max(from, c.PurchaseDay), min(today, c.ExpiryDay-1)
		if start > end {
			continue
		}
		err := tw.Cloud.SavingsPlanUtilization(ctx, c.ReservationOrderID, start.Time(), end.Time(), func(u cloud.SavingsPlanDay) error {
			day := ledger.DayOf(u.UsageDate)
			var committed ledger.Amount
			if day >= c.PurchaseDay && day < c.ExpiryDay {
				committed = ledger.DayCommitment(c.HourlyCommitment)
			}
			used := ledger.UsedShare(committed, u.AvgUtilization)
			rows = append(rows, ledger.SavingsPlanDay{TenantID: tenant.ID, SavingsPlanID: u.SavingsPlanID, Day: day, SavingsPlanOrderID: c.ReservationOrderID,
				MinUtilization: u.MinUtilization, AvgUtilization: u.AvgUtilization, MaxUtilization: u.MaxUtilization,
				Currency: c.Currency, Committed: committed, Used: used, Unused: committed - used, SyncedAt: now})
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := s.Ledger.UpsertSavingsPlanDays(ctx, rows); err != nil {
		return err
	}
	// The billing account's one progress step is the reservations'.
	p.Records += int64(len(rows))
	return nil
}

// termYears are the years of each reservation term the provider names.
var termYears = map[string]int{"P1Y": 1, "P3Y": 3, "P5Y": 5}

// syncRecommendations replaces a tenant's recommendations to buy
// reservations and savings plans with those its billing account's
// provider draws from the last RecommendationLookBackDays days, the
// reservations' first.
func (s *Syncer) syncRecommendations(ctx context.Context, tw pluginenv.TenantWork, now time.Time) error {
	var rows []ledger.Recommendation
	err := tw.Cloud.ReservationRecommendations(ctx, tw.Tenant.BillingAccountID, RecommendationLookBackDays, func(r cloud.ReservationRecommendation) error {
		rows = append(rows, ledger.Recommendation{TenantID: tw.Tenant.ID, Position: len(rows), Kind: ledger.KindReservation, SKU: r.SKUName, Location: r.Location,
			Term: r.Term, Scope: r.Scope, LookBackDays: r.LookBackDays, RecommendedQuantity: r.RecommendedQuantity,
			NormalizedSize: r.NormalizedSize, FlexibilityGroup: r.InstanceFlexibilityGroup, FlexibilityRatio: r.InstanceFlexibilityRatio,
			Currency: r.Currency, CostWithout: ledger.AmountOf(r.CostWithoutReservations), CostWith: ledger.AmountOf(r.CostWithReservations),
			NetSavings: ledger.AmountOf(r.NetSavings), FirstUsageDay: ledger.DayOf(r.FirstUsageDate), SyncedAt: now})
		return nil
	})
	if err != nil {
		return err
	}
	err = tw.Cloud.BenefitRecommendations(ctx, tw.Tenant.BillingAccountID, RecommendationLookBackDays, func(r cloud.BenefitRecommendation) error {
		rows = append(rows, ledger.Recommendation{TenantID: tw.Tenant.ID, Position: len(rows), Kind: ledger.KindSavingsPlan, SKU: r.SKUName,
			Term: r.Term, Scope: r.Scope, LookBackDays: r.LookBackDays, CommitmentAmount: r.CommitmentAmount,
			AverageUtilization: r.AverageUtilization, Coverage: r.Coverage, Currency: r.Currency,
			CostWithout: ledger.AmountOf(r.CostWithoutBenefit), CostWith: ledger.AmountOf(r.TotalCost), NetSavings: ledger.AmountOf(r.SavingsAmount),
			FirstUsageDay: ledger.DayOf(r.FirstUsageDate), SyncedAt: now})
		return nil
	})
	if err != nil {
		return err
	}
	return s.Ledger.ReplaceRecommendations(ctx, tw.Tenant.ID, rows)
}

// sizing is a SKU's instance size flexibility.
type sizing struct {
	group string
	ratio float64
}

// flexibilities are the reservations' instance size flexibility by
// reservation and day, and the latest one of each reservation.
type flexibilities struct {
	byDay  map[string]map[ledger.Day]sizing
	latest map[string]sizing
}

// of is a reservation's flexibility on day: that day's usage details', else
// the latest read, else ratio 1 (the reservation counts as its hours).
func (f flexibilities) of(reservationID string, day ledger.Day) sizing {
	if s, ok := f.byDay[reservationID][day]; ok {
		return s
	}
	if s, ok := f.latest[reservationID]; ok {
		return s
	}
	return sizing{ratio: 1}
}

// flexibility reads the instance size flexibility of an account's
// reservations from their usage details over from..to; a detail without a
// ratio is skipped.
func flexibility(ctx context.Context, rm *cloud.ResourceManager, account string, from, to ledger.Day) (flexibilities, error) {
	f := flexibilities{byDay: map[string]map[ledger.Day]sizing{}, latest: map[string]sizing{}}
	lastDay := map[string]ledger.Day{}
	err := rm.ReservationDetails(ctx, account, from.Time(), to.Time(), func(d cloud.ReservationDetail) error {
		if d.InstanceFlexibilityRatio <= 0 {
			return nil
		}
		day, s := ledger.DayOf(d.UsageDate), sizing{d.InstanceFlexibilityGroup, d.InstanceFlexibilityRatio}
		if f.byDay[d.ReservationID] == nil {
			f.byDay[d.ReservationID] = map[ledger.Day]sizing{}
		}
		f.byDay[d.ReservationID][day] = s
		if last, ok := lastDay[d.ReservationID]; !ok || day >= last {
			lastDay[d.ReservationID], f.latest[d.ReservationID] = day, s
		}
		return nil
	})
	return f, err
}

// price gives each reservation day its share of its order's cost of the
// day, with the part its unused hours wasted. An order of several
// reservations shares the day's cost among them by reserved hours, to the
// cent; a day of an order whose purchase is unknown stays unpriced.
func price(rows []ledger.Reservation, commitments map[string]ledger.Commitment) {
	type key struct {
		order string
		day   ledger.Day
	}
	groups := map[key][]int{}
	for i, r := range rows {
		k := key{r.ReservationOrderID, r.Day}
		groups[k] = append(groups[k], i)
	}
	for k, at := range groups {
		c, ok := commitments[k.order]
		if !ok {
			continue
		}
		slices.SortFunc(at, func(a, b int) int { return cmp.Compare(rows[a].ReservationID, rows[b].ReservationID) })
		weights := make([]float64, len(at))
		for j, i := range at {
			weights[j] = rows[i].ReservedHours
		}
		for j, share := range split(c.DayCost(k.day), weights) {
			r := &rows[at[j]]
			r.Currency, r.Cost, r.Unused = c.Currency, share, ledger.UnusedShare(share, r.ReservedHours, r.UsedHours)
		}
	}
}

// split divides total among weights in proportion, to the cent: each gets
// the whole cents of its share and the cents left over go one each to the
// largest remainders, the first of equal ones first. Without any weight
// the first takes all.
func split(total ledger.Amount, weights []float64) []ledger.Amount {
	out := make([]ledger.Amount, len(weights))
	var sum float64
	for _, w := range weights {
		sum += w
	}
	if sum <= 0 {
		out[0] = total
		return out
	}
	rem := make([]float64, len(weights))
	left := total
	for i, w := range weights {
		exact := float64(total) * w / sum
		out[i] = ledger.Amount(math.Floor(exact))
		rem[i] = exact - math.Floor(exact)
		left -= out[i]
	}
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rem[b], rem[a]) })
	for i := 0; left > 0; i = (i + 1) % len(order) {
		out[order[i]]++
		left--
	}
	return out
}
