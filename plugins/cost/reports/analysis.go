package reports

import (
	"context"
	"encoding/csv"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// The analysis's groupings.
const (
	GroupTenant        = "tenant"
	GroupSubscription  = "subscription"
	GroupResourceGroup = "resource_group"
	GroupService       = "service"
	GroupResource      = "resource"
	GroupTag           = "tag"
)

// Groupings are the analysis's groupings, in the order a form offers them.
var Groupings = []string{GroupService, GroupResourceGroup, GroupSubscription, GroupTenant, GroupResource, GroupTag}

// analysisKeys are the expressions each grouping groups by, over the
// ledger's rows as d and, grouped by tag, the group's tag as t: a
// resource group is named within its subscription, a resource with its
// subscription, and a cost whose resource lacks the tag under ”.
var analysisKeys = map[string][2]string{
	GroupTenant:        {"d.tenant_id", "''"},
	GroupSubscription:  {"d.subscription_id", "''"},
	GroupResourceGroup: {"d.subscription_id", "d.resource_group"},
	GroupService:       {"d.service", "''"},
	GroupResource:      {"d.resource_id", "d.subscription_id"},
	GroupTag:           {"COALESCE(t.tag_value, '')", "''"},
}

// AnalysisQuery is what a cost analysis reads: the tenants' costs of the
// range that match every filter given, grouped and paged.
type AnalysisQuery struct {
	Tenants []string
	// GroupBy is one of the groupings, Grain one of the grains; TagKey
	// is the tag grouped by, when GroupBy is GroupTag.
	GroupBy, Grain, TagKey string
	Range                  Range
	Metric                 Metric
	// Filters: a cost counts when its service, subscription and resource
	// group are among those given (all when none are given) and its
	// resource has, for each key of Tags, one of its values.
	Services, SubscriptionIDs, ResourceGroups []string
	Tags                                      map[string][]string
	Limit, Offset                             int
}

// byResource is whether q reads the ledger's days by resource: to group
// by resource or tag, or to filter by tag. Other analyses read the days
// by resource group, which hold the same costs.
func (q AnalysisQuery) byResource() bool {
	return q.GroupBy == GroupResource || q.GroupBy == GroupTag || len(q.Tags) > 0
}

// AnalysisGroup is one group's cost in one currency.
type AnalysisGroup struct {
	Group          string          `json:"group" doc:"The tenant id, subscription id, resource group, service, resource id (lower case; empty for the costs of no resource) or tag value (empty for the costs of resources without the tag)"`
	SubscriptionID *string         `json:"subscription_id" doc:"The resource group's or resource's subscription, when grouped by either; else null"`
	Label          string          `json:"label" doc:"The group as people read it: a tenant's name, a resource group or resource with its subscription, a tag's value, else the group"`
	Currency       string          `json:"currency"`
	Total          ledger.Amount   `json:"total"`
	Costs          []ledger.Amount `json:"costs" doc:"The cost of each period, in the order of periods"`
}

// Analysis is one page of a cost analysis.
type Analysis struct {
	Metric    Metric           `json:"metric" enum:"actual,amortized" doc:"The cost summed"`
	GroupBy   string           `json:"group_by" enum:"tenant,subscription,resource_group,service,resource,tag"`
	TagKey    *string          `json:"tag_key" doc:"The tag grouped by (lower case), when group_by is tag; else null"`
	Grain     string           `json:"grain" enum:"daily,monthly"`
	StartDate ledger.Day       `json:"start_date" format:"date"`
	EndDate   ledger.Day       `json:"end_date" format:"date"`
	Periods   []string         `json:"periods" doc:"The days (YYYY-MM-DD) or months (YYYY-MM) of the range"`
	Items     []AnalysisGroup  `json:"items" doc:"This page of the groups, costliest first (each currency's amounts apart)"`
	Totals    []CurrencyAmount `json:"totals" doc:"The cost of every group, not only this page's, per currency"`
	// Reporting is beside the totals, which it leaves as they are.
	Reporting exchange.Reporting `json:"reporting" doc:"The cost of every group in the reporting currency, converted at daily exchange rates; totals keeps each currency's own"`
	Total     int                `json:"total" doc:"How many groups (of a currency each) match in all"`
	Limit     int                `json:"limit"`
	Offset    int                `json:"offset"`
}

// analysisRow is a group's cost in a currency, of a period or of all.
type analysisRow struct {
	K1       string        `bun:"k1"`
	K2       string        `bun:"k2"`
	Currency string        `bun:"currency"`
	Period   int           `bun:"period"`
	Total    ledger.Amount `bun:"total"`
}

// filtered selects the ledger rows q counts, as d: the days by resource
// group or, when q needs them, by resource, with the group's tag as t.
func (s *Store) filtered(q AnalysisQuery) *bun.SelectQuery {
	table := "cost_daily"
	if q.byResource() {
		table = "cost_resource_daily"
	}
	sel := s.DB.NewSelect().TableExpr("? AS d", bun.Ident(table)).
		Where("d.tenant_id IN (?)", bun.List(q.Tenants)).Where("d.day BETWEEN ? AND ?", q.Range.From, q.Range.To)
	if q.GroupBy == GroupTag {
		sel = sel.Join("LEFT JOIN cost_resource_tags AS t ON t.subscription_id = d.subscription_id AND t.resource_id = d.resource_id AND t.tag_key = ?", strings.ToLower(q.TagKey))
	}
	groups := q.ResourceGroups
	if q.byResource() {
		// The days by resource name a group as the resource's id does,
		// in lower case.
		groups = make([]string, len(q.ResourceGroups))
		for i, g := range q.ResourceGroups {
			groups[i] = strings.ToLower(g)
		}
	}
	for col, values := range map[string][]string{"service": q.Services, "subscription_id": q.SubscriptionIDs, "resource_group": groups} {
		if len(values) > 0 {
			sel = sel.Where("d.? IN (?)", bun.Ident(col), bun.List(values))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(q.Tags)) {
		sel = sel.Where(`EXISTS (SELECT 1 FROM cost_resource_tags AS f WHERE f.subscription_id = d.subscription_id
			AND f.resource_id = d.resource_id AND f.tag_key = ? AND f.tag_value IN (?))`, strings.ToLower(key), bun.List(q.Tags[key]))
	}
	return sel
}

// grouped selects q's groups, with the period expression when given.
func (s *Store) grouped(q AnalysisQuery, period string) *bun.SelectQuery {
	keys := analysisKeys[q.GroupBy]
	sel := s.filtered(q).ColumnExpr(keys[0]+" AS k1, "+keys[1]+" AS k2, d.currency").
		ColumnExpr("CAST(SUM(d.?) AS BIGINT) AS total", bun.Ident(q.Metric.Column())).GroupExpr(keys[0])
	if keys[1] != "''" {
		sel = sel.GroupExpr(keys[1])
	}
	sel = sel.GroupExpr("d.currency")
	if period != "" {
		sel = sel.ColumnExpr("d." + period + " AS period").GroupExpr("d." + period)
	}
	return sel
}

// Analyse runs the cost analysis of q in the database: the page of its
// groups, costliest first, each with its cost per period; how many groups
// match; and every group's cost per currency. No tenants is nothing.
func (s *Store) Analyse(ctx context.Context, q AnalysisQuery) (Analysis, error) {
	out := Analysis{Metric: q.Metric, GroupBy: q.GroupBy, Grain: q.Grain, StartDate: q.Range.From, EndDate: q.Range.To, Periods: periods(q),
		Items: []AnalysisGroup{}, Totals: []CurrencyAmount{}, Limit: q.Limit, Offset: q.Offset}
	if q.GroupBy == GroupTag {
		key := strings.ToLower(q.TagKey)
		out.TagKey = &key
	}
	if len(q.Tenants) == 0 {
		out.Reporting = s.Exchange.Total(nil, nil)
		return out, nil
	}
	var page []analysisRow
	if err := s.grouped(q, "").OrderExpr("total DESC, k1, k2, currency").Limit(int64(q.Limit)).Offset(int64(q.Offset)).Scan(ctx, &page); err != nil {
		return out, err
	}
	if err := s.DB.NewSelect().TableExpr("(?) AS g", s.grouped(q, "")).ColumnExpr("COUNT(*)").Scan(ctx, &out.Total); err != nil {
		return out, err
	}
	if err := s.filtered(q).ColumnExpr("d.currency, CAST(SUM(d.?) AS BIGINT) AS total_cost", bun.Ident(q.Metric.Column())).GroupExpr("d.currency").
		OrderExpr("d.currency").Scan(ctx, &out.Totals); err != nil {
		return out, err
	}
	totals := map[string]ledger.Amount{}
	for _, t := range out.Totals {
		totals[t.Currency] = t.TotalCost
	}
	var err error
	if out.Reporting, err = s.reporting(ctx, totals, func(ctx context.Context, foreign []string) ([]exchange.DayAmount, error) {
		sums := []exchange.DayAmount{}
		err := s.filtered(q).Where("d.currency IN (?)", bun.List(foreign)).ColumnExpr("d.day, d.currency, CAST(SUM(d.?) AS BIGINT) AS amount", bun.Ident(q.Metric.Column())).
			GroupExpr("d.day").GroupExpr("d.currency").OrderExpr("d.day, d.currency").Scan(ctx, &sums)
		return sums, err
	}); err != nil {
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
		switch q.GroupBy {
		case GroupResourceGroup:
			g.Group, g.SubscriptionID, g.Label = r.K2, &page[i].K1, r.K2+" ("+r.K1+")"
		case GroupResource:
			g.SubscriptionID, g.Label = &page[i].K2, ResourceLabel(r.K1)
		case GroupTag:
			if r.K1 == "" {
				g.Label = "(without the tag)"
			}
		}
		out.Items = append(out.Items, g)
	}
	period := "day"
	if q.Grain == GrainMonthly {
		period = "month"
	}
	var cells []analysisRow
	byPeriod := s.grouped(q, period).Where(analysisKeys[q.GroupBy][0]+" IN (?)", bun.List(slices.Compact(slices.Sorted(slices.Values(k1s))))).
		Where("d.currency IN (?)", bun.List(slices.Compact(slices.Sorted(slices.Values(currencies)))))
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
	GroupBy         string        `query:"group_by" enum:"service,resource_group,subscription,tenant,resource,tag" default:"service" doc:"What a row is: a service, a resource group (of a subscription), a subscription, a tenant, a resource, or a value of the tag tag_key"`
	TagKey          string        `query:"tag_key" maxLength:"512" doc:"The tag to group by, required with group_by=tag; tag names are compared without case"`
	Tags            []string      `query:"tags" maxItems:"20" doc:"Only the costs of resources with these tags, each key=value: values of one key are alternatives, keys must all match"`
	Grain           string        `query:"grain" enum:"daily,monthly" default:"daily" doc:"The periods of each row's costs"`
	StartDate       string        `query:"start_date" format:"date" doc:"First day (inclusive); the range may span at most 366 days"`
	EndDate         string        `query:"end_date" format:"date" doc:"Last day (inclusive); today (UTC) when absent"`
	Services        []string      `query:"services" maxItems:"50" doc:"Only these services"`
	SubscriptionIDs []string      `query:"subscription_ids" maxItems:"50" doc:"Only these subscriptions"`
	ResourceGroups  []string      `query:"resource_groups" maxItems:"50" doc:"Only these resource groups (of any subscription)"`
	Limit           int           `query:"limit" minimum:"1" maximum:"100" default:"20" doc:"Groups per page"`
	Offset          int           `query:"offset" minimum:"0" default:"0"`
	Format          string        `query:"format" enum:"json,csv" default:"json" doc:"csv: this page as the cost page's table shows it"`
	MetricParam
}

type analysisOut struct {
	ContentDisposition *string `header:"Content-Disposition" doc:"With format=csv: attachment; filename=\"cost-analysis-<group_by>-<start_date>-<end_date>.csv\""`
	Body               func(huma.Context)
}

// analysisRoute declares the cost analysis.
func (h *Handlers) analysisRoute() sdk.Route {
	return sdk.Get("/api/v1/costs/analysis", sdk.Op{ID: "costs-analysis", Tags: []string{tag}, Summary: "Cost analysis: the caller's costs grouped, by day or month",
		Description: "The costs of the tenants (all the caller's when tenant_ids is absent) over start_date to end_date (the 30 days to end_date when start_date is absent), " +
			"filtered by service, subscription, resource group and tag, grouped by group_by, one row per group and currency, costliest first, with its cost per day or month; " +
			"summed in the database, one page at a time. totals holds every group's cost per currency; the groups' amounts are never converted between currencies, " +
			"and reporting holds every group's cost in the reporting currency, each day's sum of a currency converted at that day's exchange rate. " +
			"Grouped by resource or tag, or filtered by tag, the costs are read per resource: the costs of no resource (support, some marketplace and tax lines) " +
			"form one group and match no tag filter, and tags are the resources' tags as at the last cost sync, not as they were on the day of a cost.",
		Responses: map[string]*huma.Response{
			"200": {Description: "A page of the analysis as JSON, or as CSV with format=csv", Content: map[string]*huma.MediaType{
				"application/json": {Schema: sdk.SchemaOf(Analysis{})},
				"text/csv": {Schema: &huma.Schema{Type: huma.TypeString, Description: "Header row: the group's columns (tenant_id and tenant_name, subscription_id, " +
					"subscription_id and resource_group, service, resource_id and resource, or tag_value), currency, one column per period, total; then one row per group of the page"}},
			}},
			"422": {Description: "A bad group_by, tag_key, grain, date, range, filter or page"},
		}}, h.analysis)
}

func (h *Handlers) analysis(ctx context.Context, in *analysisIn) (*analysisOut, error) {
	rng, err := h.dateRange(RangeParams{StartDate: in.StartDate, EndDate: in.EndDate}, 30)
	if err != nil {
		return nil, err
	}
	if in.GroupBy == GroupTag && strings.TrimSpace(in.TagKey) == "" {
		return nil, sdk.Invalid("query.tag_key", "group_by=tag needs the tag's key in tag_key")
	}
	tags, err := ParseTagFilters("query.tags", in.Tags)
	if err != nil {
		return nil, err
	}
	tenants := []string(in.Tenants)
	if len(tenants) == 0 {
		tenants = sdk.PrincipalFrom(ctx).TenantIDs
	}
	a, err := h.Store.Analyse(ctx, AnalysisQuery{Tenants: tenants, GroupBy: in.GroupBy, Grain: in.Grain, TagKey: strings.TrimSpace(in.TagKey), Range: rng, Metric: in.Metric,
		Services: in.Services, SubscriptionIDs: in.SubscriptionIDs, ResourceGroups: in.ResourceGroups, Tags: tags, Limit: in.Limit, Offset: in.Offset})
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

// ParseTagFilters reads tag filters, each key=value, into the values
// allowed per key (keys in lower case); location names the parameter in
// the 422 of a filter without a key or an "=".
func ParseTagFilters(location string, filters []string) (map[string][]string, error) {
	if len(filters) == 0 {
		return nil, nil
	}
	out := map[string][]string{}
	for i, f := range filters {
		key, value, ok := strings.Cut(f, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if !ok || key == "" {
			return nil, sdk.Invalid(fmt.Sprintf("%s[%d]", location, i), "%q is not a tag filter key=value", f)
		}
		out[key] = append(out[key], value)
	}
	return out, nil
}

// ResourceLabel is a resource as people read it: its name and resource
// group, from its id.
func ResourceLabel(id string) string {
	if id == "" {
		return "(costs of no resource)"
	}
	name := id[strings.LastIndex(id, "/")+1:]
	if g := ledger.ResourceGroupOf(id); g != "" {
		return name + " (" + g + ")"
	}
	return name
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
	case GroupResource:
		return []string{"resource_id", "resource"}
	case GroupTag:
		return []string{"tag_value"}
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
	case GroupResource:
		return []string{g.Group, g.Label}
	case GroupTag:
		return []string{g.Label}
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
			row = append(row, Cell(c))
		}
		row = append(row, g.Currency)
		for _, c := range g.Costs {
			row = append(row, c.String())
		}
		out = append(out, append(row, g.Total.String()))
	}
	return out
}
