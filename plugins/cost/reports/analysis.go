package reports

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// Groupings of the cost analysis, and the ledger's columns each groups by.
// The ledger keeps a day's costs per subscription, resource group and
// service, without the resources' tags: tags are the resources plugin's,
// and a resource's cost is kept only over its last 30 days, so costs
// cannot be grouped by tag by day. A resource group is named within its
// subscription.
var analysisColumns = map[string][]string{
	GroupTenant:        {"tenant_id"},
	GroupSubscription:  {"subscription_id"},
	GroupResourceGroup: {"subscription_id", "resource_group"},
	GroupService:       {"service"},
}

// The analysis's groupings.
const (
	GroupTenant        = "tenant"
	GroupSubscription  = "subscription"
	GroupResourceGroup = "resource_group"
	GroupService       = "service"
)

// Groupings are the analysis's groupings, in the order a form offers them.
var Groupings = []string{GroupService, GroupResourceGroup, GroupSubscription, GroupTenant}

// AnalysisQuery is what a cost analysis reads: the tenants' costs of the
// range that match every filter given, grouped and paged.
type AnalysisQuery struct {
	Tenants []string
	// GroupBy is one of the groupings, Grain one of the grains.
	GroupBy, Grain string
	Range          Range
	// Filters: a cost counts when its service, subscription and resource
	// group are among those given (all when none are given).
	Services, SubscriptionIDs, ResourceGroups []string
	Limit, Offset                             int
}

// AnalysisGroup is one group's cost in one currency.
type AnalysisGroup struct {
	Group          string          `json:"group" doc:"The tenant id, subscription id, resource group or service"`
	SubscriptionID *string         `json:"subscription_id" doc:"The resource group's subscription, when grouped by resource group; else null"`
	Label          string          `json:"label" doc:"The group as people read it: a tenant's name, a resource group with its subscription, else the group"`
	Currency       string          `json:"currency"`
	Total          ledger.Amount   `json:"total"`
	Costs          []ledger.Amount `json:"costs" doc:"The cost of each period, in the order of periods"`
}

// Analysis is one page of a cost analysis.
type Analysis struct {
	GroupBy   string           `json:"group_by" enum:"tenant,subscription,resource_group,service"`
	Grain     string           `json:"grain" enum:"daily,monthly"`
	StartDate ledger.Day       `json:"start_date" format:"date"`
	EndDate   ledger.Day       `json:"end_date" format:"date"`
	Periods   []string         `json:"periods" doc:"The days (YYYY-MM-DD) or months (YYYY-MM) of the range"`
	Items     []AnalysisGroup  `json:"items" doc:"This page of the groups, costliest first (each currency's amounts apart)"`
	Totals    []CurrencyAmount `json:"totals" doc:"The cost of every group, not only this page's, per currency"`
	Total     int              `json:"total" doc:"How many groups (of a currency each) match in all"`
	Limit     int              `json:"limit"`
	Offset    int              `json:"offset"`
}

// analysisRow is a group's cost in a currency, of a period or of all.
type analysisRow struct {
	K1       string        `bun:"k1"`
	K2       string        `bun:"k2"`
	Currency string        `bun:"currency"`
	Period   int           `bun:"period"`
	Total    ledger.Amount `bun:"total"`
}

// filtered selects the raw ledger rows q counts.
func (s *Store) filtered(q AnalysisQuery) *bun.SelectQuery {
	sel := s.DB.NewSelect().TableExpr("cost_daily").
		Where("tenant_id IN (?)", bun.List(q.Tenants)).Where("day BETWEEN ? AND ?", q.Range.From, q.Range.To)
	for col, values := range map[string][]string{"service": q.Services, "subscription_id": q.SubscriptionIDs, "resource_group": q.ResourceGroups} {
		if len(values) > 0 {
			sel = sel.Where("? IN (?)", bun.Ident(col), bun.List(values))
		}
	}
	return sel
}

// grouped selects q's groups, with the period expression when given.
func (s *Store) grouped(q AnalysisQuery, period string) *bun.SelectQuery {
	cols := analysisColumns[q.GroupBy]
	k2 := "''"
	if len(cols) > 1 {
		k2 = cols[1]
	}
	sel := s.filtered(q).ColumnExpr(cols[0] + " AS k1, " + k2 + " AS k2, currency").
		ColumnExpr("CAST(SUM(cost_cents) AS BIGINT) AS total").GroupExpr(cols[0])
	if len(cols) > 1 {
		sel = sel.GroupExpr(cols[1])
	}
	sel = sel.GroupExpr("currency")
	if period != "" {
		sel = sel.ColumnExpr(period + " AS period").GroupExpr(period)
	}
	return sel
}

// Analyse runs the cost analysis of q in the database: the page of its
// groups, costliest first, each with its cost per period; how many groups
// match; and every group's cost per currency. No tenants is nothing.
func (s *Store) Analyse(ctx context.Context, q AnalysisQuery) (Analysis, error) {
	out := Analysis{GroupBy: q.GroupBy, Grain: q.Grain, StartDate: q.Range.From, EndDate: q.Range.To, Periods: periods(q),
		Items: []AnalysisGroup{}, Totals: []CurrencyAmount{}, Limit: q.Limit, Offset: q.Offset}
	if len(q.Tenants) == 0 {
		return out, nil
	}
	var page []analysisRow
	if err := s.grouped(q, "").OrderExpr("total DESC, k1, k2, currency").Limit(int64(q.Limit)).Offset(int64(q.Offset)).Scan(ctx, &page); err != nil {
		return out, err
	}
	if err := s.DB.NewSelect().TableExpr("(?) AS g", s.grouped(q, "")).ColumnExpr("COUNT(*)").Scan(ctx, &out.Total); err != nil {
		return out, err
	}
	if err := s.filtered(q).ColumnExpr("currency, CAST(SUM(cost_cents) AS BIGINT) AS total_cost").GroupExpr("currency").
		OrderExpr("currency").Scan(ctx, &out.Totals); err != nil {
		return out, err
	}
	if len(page) == 0 {
		return out, nil
	}
	// The page's groups by period: only the page's first keys and
	// currencies are read, and rows of other groups that share them are
	// left out here.
	index := map[[3]string]int{}
	k1s, currencies := make([]string, 0, len(page)), make([]string, 0, len(page))
	for i, r := range page {
		index[[3]string{r.K1, r.K2, r.Currency}] = i
		k1s, currencies = append(k1s, r.K1), append(currencies, r.Currency)
		g := AnalysisGroup{Group: r.K1, Label: r.K1, Currency: r.Currency, Total: r.Total, Costs: make([]ledger.Amount, len(out.Periods))}
		if q.GroupBy == GroupResourceGroup {
			g.Group, g.SubscriptionID, g.Label = r.K2, &page[i].K1, r.K2+" ("+r.K1+")"
		}
		out.Items = append(out.Items, g)
	}
	period := "day"
	if q.Grain == GrainMonthly {
		period = "month"
	}
	var cells []analysisRow
	byPeriod := s.grouped(q, period).Where("? IN (?)", bun.Ident(analysisColumns[q.GroupBy][0]), bun.List(slices.Compact(slices.Sorted(slices.Values(k1s))))).
		Where("currency IN (?)", bun.List(slices.Compact(slices.Sorted(slices.Values(currencies)))))
	if err := byPeriod.Scan(ctx, &cells); err != nil {
		return out, err
	}
	for _, c := range cells {
		i, ok := index[[3]string{c.K1, c.K2, c.Currency}]
		if !ok {
			continue
		}
		if p := periodIndex(q, c.Period); p >= 0 && p < len(out.Periods) {
			out.Items[i].Costs[p] = c.Total
		}
	}
	return out, nil
}

// periods are the labels of q's periods.
func periods(q AnalysisQuery) []string {
	var out []string
	if q.Grain == GrainMonthly {
		for m := q.Range.From.Time(); !m.After(q.Range.To.Time()); m = m.AddDate(0, 1, 0) {
			m = time.Date(m.Year(), m.Month(), 1, 0, 0, 0, 0, time.UTC)
			out = append(out, m.Format("2006-01"))
		}
		return out
	}
	for d := q.Range.From; d <= q.Range.To; d++ {
		out = append(out, d.String())
	}
	return out
}

// periodIndex is the index among q's periods of a day, or of a month as
// yyyymm.
func periodIndex(q AnalysisQuery, p int) int {
	if q.Grain == GrainMonthly {
		first := q.Range.From.Month()
		return (p/100-first/100)*12 + p%100 - first%100
	}
	return p - int(q.Range.From)
}

type analysisIn struct {
	Tenants         sdk.TenantIDs `query:"tenant_ids"`
	GroupBy         string        `query:"group_by" enum:"service,resource_group,subscription,tenant" default:"service" doc:"What a row is: a service, a resource group (of a subscription), a subscription or a tenant. Tags are not a grouping: the ledger's daily costs carry none"`
	Grain           string        `query:"grain" enum:"daily,monthly" default:"daily" doc:"The periods of each row's costs"`
	StartDate       string        `query:"start_date" format:"date" doc:"First day (inclusive); the range may span at most 366 days"`
	EndDate         string        `query:"end_date" format:"date" doc:"Last day (inclusive); today (UTC) when absent"`
	Services        []string      `query:"services" maxItems:"50" doc:"Only these services"`
	SubscriptionIDs []string      `query:"subscription_ids" maxItems:"50" doc:"Only these subscriptions"`
	ResourceGroups  []string      `query:"resource_groups" maxItems:"50" doc:"Only these resource groups (of any subscription)"`
	Limit           int           `query:"limit" minimum:"1" maximum:"100" default:"20" doc:"Groups per page"`
	Offset          int           `query:"offset" minimum:"0" default:"0"`
	Format          string        `query:"format" enum:"json,csv" default:"json" doc:"csv: this page as the cost page's table shows it"`
}

type analysisOut struct {
	ContentDisposition *string `header:"Content-Disposition" doc:"With format=csv: attachment; filename=\"cost-analysis-<group_by>-<start_date>-<end_date>.csv\""`
	Body               func(huma.Context)
}

// analysisRoute declares the cost analysis.
func (h *Handlers) analysisRoute() sdk.Route {
	return sdk.Get("/api/v1/costs/analysis", sdk.Op{ID: "costs-analysis", Tags: []string{tag}, Summary: "Cost analysis: the caller's costs grouped, by day or month",
		Description: "The costs of the tenants (all the caller's when tenant_ids is absent) over start_date to end_date (the 30 days to end_date when start_date is absent), " +
			"filtered by service, subscription and resource group, grouped by group_by, one row per group and currency, costliest first, with its cost per day or month; " +
			"summed in the database, one page at a time. totals holds every group's cost per currency. Amounts are never converted between currencies.",
		Responses: map[string]*huma.Response{
			"200": {Description: "A page of the analysis as JSON, or as CSV with format=csv", Content: map[string]*huma.MediaType{
				"application/json": {Schema: sdk.SchemaOf(Analysis{})},
				"text/csv": {Schema: &huma.Schema{Type: huma.TypeString, Description: "Header row: the group's columns (tenant_id and tenant_name, subscription_id, " +
					"subscription_id and resource_group, or service), currency, one column per period, total; then one row per group of the page"}},
			}},
			"422": {Description: "A bad group_by, grain, date, range, filter or page"},
		}}, h.analysis)
}

func (h *Handlers) analysis(ctx context.Context, in *analysisIn) (*analysisOut, error) {
	rng, err := h.dateRange(RangeParams{StartDate: in.StartDate, EndDate: in.EndDate}, 30)
	if err != nil {
		return nil, err
	}
	tenants := []string(in.Tenants)
	if len(tenants) == 0 {
		tenants = sdk.PrincipalFrom(ctx).TenantIDs
	}
	a, err := h.Store.Analyse(ctx, AnalysisQuery{Tenants: tenants, GroupBy: in.GroupBy, Grain: in.Grain, Range: rng,
		Services: in.Services, SubscriptionIDs: in.SubscriptionIDs, ResourceGroups: in.ResourceGroups, Limit: in.Limit, Offset: in.Offset})
	if err != nil {
		return nil, err
	}
	if err := NameTenants(ctx, h.Host, &a); err != nil {
		return nil, err
	}
	if in.Format == "csv" {
		disposition := fmt.Sprintf("attachment; filename=%q", fmt.Sprintf("cost-analysis-%s-%s-%s.csv", a.GroupBy, a.StartDate, a.EndDate))
		return &analysisOut{ContentDisposition: &disposition, Body: func(hc huma.Context) {
			_, w := humago.Unwrap(hc)
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			// The page is computed; a write that fails leaves the
			// client a broken response, not one that looks complete.
			if err := csv.NewWriter(w).WriteAll(AnalysisCSV(a)); err != nil {
				panic(http.ErrAbortHandler)
			}
		}}, nil
	}
	return &analysisOut{Body: func(hc huma.Context) {
		_, w := humago.Unwrap(hc)
		sdk.WriteJSON(w, http.StatusOK, a)
	}}, nil
}

// NameTenants labels the groups of an analysis by tenant with the
// tenants' names, which the host tells.
func NameTenants(ctx context.Context, host *sdk.Host, a *Analysis) error {
	if a.GroupBy != GroupTenant || len(a.Items) == 0 {
		return nil
	}
	ids := make([]string, len(a.Items))
	for i, g := range a.Items {
		ids[i] = g.Group
	}
	names, err := pluginenv.TenantNames(ctx, host, ids)
	if err != nil {
		return err
	}
	for i := range a.Items {
		a.Items[i].Label = names[a.Items[i].Group]
	}
	return nil
}

// AnalysisColumns are the group's columns of an analysis's table.
func AnalysisColumns(groupBy string) []string {
	switch groupBy {
	case GroupTenant:
		return []string{"tenant_id", "tenant_name"}
	case GroupResourceGroup:
		return []string{"subscription_id", "resource_group"}
	case GroupSubscription:
		return []string{"subscription_id"}
	}
	return []string{"service"}
}

// AnalysisCells are a group's cells of those columns.
func AnalysisCells(groupBy string, g AnalysisGroup) []string {
	switch groupBy {
	case GroupTenant:
		return []string{g.Group, g.Label}
	case GroupResourceGroup:
		return []string{*g.SubscriptionID, g.Group}
	}
	return []string{g.Group}
}

// AnalysisCSV is the page of the analysis as the cost page's table shows
// it: the header, then a row per group, each text cell guarded against
// being read as a formula.
func AnalysisCSV(a Analysis) [][]string {
	header := append(append(AnalysisColumns(a.GroupBy), "currency"), a.Periods...)
	out := [][]string{append(header, "total")}
	for _, g := range a.Items {
		row := make([]string, 0, len(header)+1)
		for _, c := range AnalysisCells(a.GroupBy, g) {
			row = append(row, cell(c))
		}
		row = append(row, g.Currency)
		for _, c := range g.Costs {
			row = append(row, c.String())
		}
		out = append(out, append(row, g.Total.String()))
	}
	return out
}
