package arm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
)

// Microsoft.Consumption: budgets at subscription scope.
//
// The world has no budgets, so the simulator keeps those PUT to it in
// memory, per subscription, for as long as it runs: created or replaced by
// PUT (201, then 200), read by GET, removed by DELETE. A PUT carrying an
// eTag other than the budget's current one fails with 412, as a
// concurrent update does in Azure; one without replaces the budget.
//
// currentSpend is computed on every read from the world's costs: the
// subscription's cost in the budget's current period, from the period's
// first day through today. Periods are the time grain's months, quarters
// or years counted from the budget's start date (the billing grains as the
// calendar ones); outside the budget's time period the spend is zero. The
// filter is kept and returned, but does not narrow the spend.
// forecastSpend, given as Azure gives it only to budgets with a
// Forecasted notification, extends the period's daily average so far to
// the whole period.

const (
	budgetsPath       = "/providers/Microsoft.Consumption/budgets"
	maxNotifications  = 5
	maxThreshold      = 1000
	budgetDefaultSpan = 10 // years, when a budget has no end date
)

// budgetTimeGrains are the grains a budget resets on, and their months.
var budgetTimeGrains = map[string]int{
	"Monthly": 1, "Quarterly": 3, "Annually": 12,
	"BillingMonth": 1, "BillingQuarter": 3, "BillingAnnual": 12,
}

var notificationOperators = []string{"EqualTo", "GreaterThan", "GreaterThanOrEqualTo"}

type budgetTimePeriodJSON struct {
	StartDate string `json:"startDate"`
	EndDate   string `json:"endDate,omitempty"`
}

type spendJSON struct {
	Amount float64 `json:"amount"`
	Unit   string  `json:"unit"`
}

type notificationJSON struct {
	Enabled       *bool    `json:"enabled"`
	Operator      string   `json:"operator"`
	Threshold     *float64 `json:"threshold"`
	ContactEmails []string `json:"contactEmails"`
	ContactRoles  []string `json:"contactRoles,omitempty"`
	ContactGroups []string `json:"contactGroups,omitempty"`
	ThresholdType string   `json:"thresholdType,omitempty"`
	Locale        string   `json:"locale,omitempty"`
}

type budgetPropsJSON struct {
	Category      string                      `json:"category"`
	Amount        *float64                    `json:"amount"`
	TimeGrain     string                      `json:"timeGrain"`
	TimePeriod    *budgetTimePeriodJSON       `json:"timePeriod"`
	Filter        json.RawMessage             `json:"filter,omitempty"`
	CurrentSpend  *spendJSON                  `json:"currentSpend,omitempty"`
	ForecastSpend *spendJSON                  `json:"forecastSpend,omitempty"`
	Notifications map[string]notificationJSON `json:"notifications,omitempty"`
}

type budgetJSON struct {
	ID         string           `json:"id"`
	Name       string           `json:"name"`
	Type       string           `json:"type"`
	ETag       string           `json:"eTag"`
	Properties *budgetPropsJSON `json:"properties"`
}

// budgetStore holds the budgets, by lower-case subscription id and budget
// name; ARM names are case-insensitive.
type budgetStore struct {
	srv     *server
	mu      sync.Mutex
	bySub   map[string]map[string]*budgetJSON
	version int
}

func (srv *server) registerBudgets() {
	b := &budgetStore{srv: srv, bySub: map[string]map[string]*budgetJSON{}}
	srv.handle("GET /subscriptions/{subscriptionId}"+budgetsPath, b.list)
	srv.handle("GET /subscriptions/{subscriptionId}"+budgetsPath+"/{budgetName}", b.get)
	srv.handle("PUT /subscriptions/{subscriptionId}"+budgetsPath+"/{budgetName}", b.put)
	srv.handle("DELETE /subscriptions/{subscriptionId}"+budgetsPath+"/{budgetName}", b.delete)
}

// subscription checks the request's subscription, answering 404 when the
// world has none such, and returns its id as the world spells it.
func (b *budgetStore) subscription(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("subscriptionId")
	_, s, ok := b.srv.subscription(id)
	if !ok {
		subscriptionNotFound(w, id)
	}
	return s.ID, ok
}

func budgetNotFound(w http.ResponseWriter, name string) {
	cloudsim.WriteError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("Budget '%s' was not found.", name))
}

// withSpend is a stored budget as a read answers it, its spend as of now.
func (b *budgetStore) withSpend(subID string, stored *budgetJSON) budgetJSON {
	out := *stored
	props := *stored.Properties
	out.Properties = &props
	current, days, elapsed, unit := b.spend(subID, &props)
	props.CurrentSpend = &spendJSON{Amount: current, Unit: unit}
	for _, n := range props.Notifications {
		if strings.EqualFold(n.ThresholdType, "Forecasted") {
			forecast := 0.0
			if elapsed > 0 {
				forecast = current / float64(elapsed) * float64(days)
			}
			props.ForecastSpend = &spendJSON{Amount: forecast, Unit: unit}
			break
		}
	}
	return out
}

// spend sums the subscription's costs in the budget's current period
// through today: the amount, the period's length and elapsed part in days,
// and the currency.
func (b *budgetStore) spend(subID string, p *budgetPropsJSON) (amount float64, days, elapsed int, unit string) {
	costs, idx := b.srv.costs.of(b.srv.sim.World(), subID)
	unit = "USD"
	if len(idx) > 0 {
		unit = costs[idx[0]].Currency
	}
	now := b.srv.sim.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	start, _ := parseBudgetDate(p.TimePeriod.StartDate)
	end, _ := parseBudgetDate(p.TimePeriod.EndDate)
	if today.Before(start) || today.After(end) {
		return 0, 0, 0, unit
	}
	months := budgetTimeGrains[p.TimeGrain]
	from := start
	for !from.AddDate(0, months, 0).After(today) {
		from = from.AddDate(0, months, 0)
	}
	to := from.AddDate(0, months, -1)
	days = int(to.Sub(from).Hours()/24) + 1
	elapsed = int(today.Sub(from).Hours()/24) + 1
	first, last := from.Format(time.DateOnly), today.Format(time.DateOnly)
	for _, i := range idx {
		if d := costs[i].Date; d >= first && d <= last {
			amount += costs[i].Cost
		}
	}
	return amount, days, elapsed, unit
}

// parseBudgetDate reads a budget date, a timestamp or a bare day.
func parseBudgetDate(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	return time.Parse(time.DateOnly, s)
}

func (b *budgetStore) list(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	subID, ok := b.subscription(w, r)
	if !ok {
		return
	}
	b.mu.Lock()
	names := make([]string, 0, len(b.bySub[strings.ToLower(subID)]))
	stored := b.bySub[strings.ToLower(subID)]
	for n := range stored {
		names = append(names, n)
	}
	slices.Sort(names)
	all := make([]*budgetJSON, len(names))
	for i, n := range names {
		all[i] = stored[n]
	}
	b.mu.Unlock()
	p := cloudsim.PageOf(r, b.srv.sim.URLs[cloudsim.ARM], len(all), cloudsim.DefaultPageSize)
	value := make([]budgetJSON, 0, p.End-p.Start)
	for _, s := range all[p.Start:p.End] {
		value = append(value, b.withSpend(subID, s))
	}
	body := map[string]any{"value": value}
	if p.NextLink != "" {
		body["nextLink"] = p.NextLink
	}
	cloudsim.WriteJSON(w, body)
}

func (b *budgetStore) get(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	subID, ok := b.subscription(w, r)
	if !ok {
		return
	}
	name := r.PathValue("budgetName")
	b.mu.Lock()
	stored := b.bySub[strings.ToLower(subID)][strings.ToLower(name)]
	b.mu.Unlock()
	if stored == nil {
		budgetNotFound(w, name)
		return
	}
	cloudsim.WriteJSON(w, b.withSpend(subID, stored))
}

func (b *budgetStore) delete(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	subID, ok := b.subscription(w, r)
	if !ok {
		return
	}
	name := r.PathValue("budgetName")
	b.mu.Lock()
	stored := b.bySub[strings.ToLower(subID)]
	_, found := stored[strings.ToLower(name)]
	delete(stored, strings.ToLower(name))
	b.mu.Unlock()
	if !found {
		budgetNotFound(w, name)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (b *budgetStore) put(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	subID, ok := b.subscription(w, r)
	if !ok {
		return
	}
	name := r.PathValue("budgetName")
	var in budgetJSON
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		badRequest(w, "The request body is not a budget: %v", err)
		return
	}
	if err := validateBudget(&in); err != nil {
		badRequest(w, "Invalid budget '%s': %v", name, err)
		return
	}
	props := *in.Properties
	props.CurrentSpend, props.ForecastSpend = nil, nil // read-only: computed on read

	b.mu.Lock()
	stored := b.bySub[strings.ToLower(subID)]
	if stored == nil {
		stored = map[string]*budgetJSON{}
		b.bySub[strings.ToLower(subID)] = stored
	}
	old := stored[strings.ToLower(name)]
	if old != nil && in.ETag != "" && in.ETag != old.ETag {
		b.mu.Unlock()
		cloudsim.WriteError(w, http.StatusPreconditionFailed, "PreconditionFailed", fmt.Sprintf(
			"Budget '%s' has changed since eTag %s was read; read it again and retry.", name, in.ETag))
		return
	}
	b.version++
	budget := &budgetJSON{
		ID:         "/subscriptions/" + subID + budgetsPath + "/" + name,
		Name:       name,
		Type:       "Microsoft.Consumption/budgets",
		ETag:       fmt.Sprintf(`"%x"`, 0x1d000000000000+b.version),
		Properties: &props,
	}
	if old != nil {
		// Azure keeps a resource's name as first created.
		budget.ID, budget.Name = old.ID, old.Name
	}
	stored[strings.ToLower(name)] = budget
	b.mu.Unlock()

	status := http.StatusOK
	if old == nil {
		status = http.StatusCreated
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(b.withSpend(subID, budget))
}

// validateBudget applies Azure's rules to a budget being written, and
// fills in the defaults it would.
func validateBudget(in *budgetJSON) error {
	p := in.Properties
	switch {
	case p == nil:
		return fmt.Errorf("properties are required")
	case p.Category != "Cost":
		return fmt.Errorf("category must be Cost, not %q", p.Category)
	case p.Amount == nil || *p.Amount <= 0:
		return fmt.Errorf("amount must be more than 0")
	case budgetTimeGrains[p.TimeGrain] == 0:
		return fmt.Errorf("timeGrain %q is not one of Monthly, Quarterly, Annually, BillingMonth, BillingQuarter, BillingAnnual", p.TimeGrain)
	case p.TimePeriod == nil:
		return fmt.Errorf("timePeriod is required")
	case len(p.Notifications) > maxNotifications:
		return fmt.Errorf("a budget has at most %d notifications, not %d", maxNotifications, len(p.Notifications))
	}
	start, err := parseBudgetDate(p.TimePeriod.StartDate)
	if err != nil || start.Day() != 1 {
		return fmt.Errorf("timePeriod.startDate %q must be the first day of a month", p.TimePeriod.StartDate)
	}
	end := start.AddDate(budgetDefaultSpan, 0, -1)
	if p.TimePeriod.EndDate != "" {
		if end, err = parseBudgetDate(p.TimePeriod.EndDate); err != nil || !end.After(start) {
			return fmt.Errorf("timePeriod.endDate %q must be a date after the start date", p.TimePeriod.EndDate)
		}
	}
	p.TimePeriod = &budgetTimePeriodJSON{StartDate: start.Format(time.RFC3339), EndDate: end.Format(time.RFC3339)}
	for key, n := range p.Notifications {
		switch {
		case n.Enabled == nil:
			return fmt.Errorf("notification %s: enabled is required", key)
		case !slices.Contains(notificationOperators, n.Operator):
			return fmt.Errorf("notification %s: operator %q is not one of %s", key, n.Operator, strings.Join(notificationOperators, ", "))
		case n.Threshold == nil || *n.Threshold <= 0 || *n.Threshold > maxThreshold:
			return fmt.Errorf("notification %s: threshold must be more than 0 and at most %d percent", key, maxThreshold)
		case len(n.ContactEmails) == 0 && len(n.ContactGroups) == 0:
			return fmt.Errorf("notification %s: needs a contact email or contact group", key)
		case n.ThresholdType != "" && n.ThresholdType != "Actual" && n.ThresholdType != "Forecasted":
			return fmt.Errorf("notification %s: thresholdType %q is not Actual or Forecasted", key, n.ThresholdType)
		}
		if n.ThresholdType == "" {
			n.ThresholdType = "Actual"
			p.Notifications[key] = n
		}
	}
	return nil
}
