package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/costmanagement/armcostmanagement/v2"
)

// CostType is which cost a query sums.
type CostType string

// The cost types, as Cost Management names them.
const (
	// ActualCost is the cost as billed: a commitment's purchase on the
	// day it is bought, and nothing for the usage it covers.
	ActualCost CostType = CostType(armcostmanagement.ExportTypeActualCost)
	// AmortizedCost spreads commitments over their terms: the covered
	// usage costs its share of the purchase, and unused commitment shows
	// as a cost of its own.
	AmortizedCost CostType = CostType(armcostmanagement.ExportTypeAmortizedCost)
)

// CostRow is one day's cost of a service in a resource group.
type CostRow struct {
	// Date is the day, at midnight UTC.
	Date          time.Time
	Service       string
	ResourceGroup string
	Cost          float64
	Currency      string
}

// The Cost Management columns DailyCosts asks for and reads. PreTaxCost is
// the cost column both Enterprise Agreement and Microsoft Customer
// Agreement scopes accept; "Cost" exists on the latter only.
const (
	colCost          = "PreTaxCost"
	colDate          = "UsageDate"
	colService       = "ServiceName"
	colResourceGroup = "ResourceGroupName"
	colCurrency      = "Currency"
)

// DailyCosts calls fn for each day, service and resource group's cost of
// the type in a subscription, from the calendar day of from through that
// of to (both included). Cost Management caps a query at one year, so longer
// ranges are queried a year at a time. Rows are streamed a page at a time;
// an error from fn stops the query and is returned as is.
func (c *ResourceManager) DailyCosts(ctx context.Context, subscriptionID string, typ CostType, from, to time.Time, fn func(CostRow) error) error {
	if subscriptionID == "" {
		return errors.New("cloud: daily costs: no subscription id")
	}
	return byYear("daily costs", from, to, func(start, end time.Time) error {
		def := costQuery(typ, start, end, armcostmanagement.GranularityTypeDaily, colService, colResourceGroup)
		return c.queryCosts(ctx, subscriptionID, def, func(props *armcostmanagement.QueryProperties) error {
			return emitCostRows(props, fn)
		})
	})
}

// byYear calls query for the calendar days of from through to a year at a
// time, the most Cost Management answers in one query.
func byYear(what string, from, to time.Time, query func(start, end time.Time) error) error {
	first, last := calendarDay(from), calendarDay(to)
	if last.Before(first) {
		return fmt.Errorf("cloud: %s: %s is after %s", what, first.Format(time.DateOnly), last.Format(time.DateOnly))
	}
	for start := first; !start.After(last); {
		end := start.AddDate(1, 0, -1)
		if end.After(last) {
			end = last
		}
		if err := query(start, end); err != nil {
			return err
		}
		start = end.AddDate(0, 0, 1)
	}
	return nil
}

// ResourceCostRow is one day's cost of a resource under a service.
type ResourceCostRow struct {
	// Date is the day, at midnight UTC.
	Date time.Time
	// ResourceID is the resource's ARM id in lower case, as Cost
	// Management reports it; empty for the costs of no resource.
	ResourceID string
	Service    string
	Cost       float64
	Currency   string
}

// DailyResourceCosts calls fn for each day, resource and service's cost
// of the type in a subscription, from the calendar day of from through that of
// to (both included): the same costs as DailyCosts, one grain finer, as a
// query grouped by ResourceId and ServiceName (a query takes two
// groupings at most, so a row carries no resource group; a resource's is
// in its id). Queried a year at a time and streamed a page at a time; an
// error from fn stops the query and is returned as is.
func (c *ResourceManager) DailyResourceCosts(ctx context.Context, subscriptionID string, typ CostType, from, to time.Time, fn func(ResourceCostRow) error) error {
	if subscriptionID == "" {
		return errors.New("cloud: daily resource costs: no subscription id")
	}
	return byYear("daily resource costs", from, to, func(start, end time.Time) error {
		def := costQuery(typ, start, end, armcostmanagement.GranularityTypeDaily, colResourceID, colService)
		return c.queryCosts(ctx, subscriptionID, def, func(props *armcostmanagement.QueryProperties) error {
			return eachDailyRow(props, colResourceID, colService, func(date time.Time, cost float64, id, service, currency string) error {
				return fn(ResourceCostRow{Date: date, ResourceID: strings.ToLower(id), Service: service, Cost: cost, Currency: currency})
			})
		})
	})
}

// costQuery is a query of the days start..end summing the pre-tax cost of
// the type by the dimensions given.
func costQuery(typ CostType, start, end time.Time, granularity armcostmanagement.GranularityType, dimensions ...string) armcostmanagement.QueryDefinition {
	endOfDay := end.Add(24*time.Hour - time.Second)
	grouping := make([]*armcostmanagement.QueryGrouping, len(dimensions))
	for i, d := range dimensions {
		grouping[i] = &armcostmanagement.QueryGrouping{Type: to.Ptr(armcostmanagement.QueryColumnTypeDimension), Name: to.Ptr(d)}
	}
	ds := &armcostmanagement.QueryDataset{
		Aggregation: map[string]*armcostmanagement.QueryAggregation{
			"totalCost": {Name: to.Ptr(colCost), Function: to.Ptr(armcostmanagement.FunctionTypeSum)},
		},
		Grouping: grouping,
	}
	if granularity != "" {
		ds.Granularity = to.Ptr(granularity)
	}
	return armcostmanagement.QueryDefinition{
		Type:       to.Ptr(armcostmanagement.ExportType(typ)),
		Timeframe:  to.Ptr(armcostmanagement.TimeframeTypeCustom),
		TimePeriod: &armcostmanagement.QueryTimePeriod{From: &start, To: &endOfDay},
		Dataset:    ds,
	}
}

// queryCosts runs a Cost Management query at a subscription's scope and
// calls page for each page of the answer. The SDK's Usage has no pager, so
// the pages after the first are fetched by posting the same query to
// properties.nextLink through the same pipeline, as the Cost Management
// API asks.
func (c *ResourceManager) queryCosts(ctx context.Context, subscriptionID string, def armcostmanagement.QueryDefinition, page func(*armcostmanagement.QueryProperties) error) error {
	op := "query costs of subscription " + subscriptionID
	resp, err := c.query.Usage(ctx, "subscriptions/"+subscriptionID, def, nil)
	if err != nil {
		return wrap(op, err)
	}
	props := resp.Properties
	for props != nil { // nil: 204 No Content, nothing in range
		if err := page(props); err != nil {
			return err
		}
		next := deref(props.NextLink)
		if next == "" {
			return nil
		}
		if props, err = c.nextCostPage(ctx, next, def); err != nil {
			return wrap(op, err)
		}
	}
	return nil
}

func (c *ResourceManager) nextCostPage(ctx context.Context, nextLink string, def armcostmanagement.QueryDefinition) (*armcostmanagement.QueryProperties, error) {
	req, err := runtime.NewRequest(ctx, http.MethodPost, nextLink)
	if err != nil {
		return nil, err
	}
	req.Raw().Header["Accept"] = []string{"application/json"}
	if err := runtime.MarshalAsJSON(req, def); err != nil {
		return nil, err
	}
	resp, err := c.raw.Pipeline().Do(req)
	if err != nil {
		return nil, err
	}
	if !runtime.HasStatusCode(resp, http.StatusOK, http.StatusNoContent) {
		return nil, runtime.NewResponseError(resp)
	}
	var result armcostmanagement.QueryResult
	if err := runtime.UnmarshalAsJSON(resp, &result); err != nil {
		return nil, err
	}
	return result.Properties, nil
}

// columnsAt finds the named columns of a page: Cost Management orders
// columns as it likes, and the order differs between scopes and queries.
func columnsAt(props *armcostmanagement.QueryProperties, names ...string) ([]int, error) {
	at := map[string]int{}
	for i, col := range props.Columns {
		if col != nil && col.Name != nil {
			at[*col.Name] = i
		}
	}
	idx := make([]int, len(names))
	for i, name := range names {
		j, ok := at[name]
		if !ok {
			return nil, fmt.Errorf("cloud: cost query answered without the %s column", name)
		}
		idx[i] = j
	}
	return idx, nil
}

// costCell reads a row's cost; n is the row's number, for the error.
func costCell(row []any, i, n, columns int) (float64, error) {
	if len(row) != columns {
		return 0, fmt.Errorf("cloud: cost row %d has %d values for %d columns", n, len(row), columns)
	}
	cost, ok := row[i].(float64)
	if !ok {
		return 0, fmt.Errorf("cloud: cost row %d: %s is %T, not a number", n, colCost, row[i])
	}
	return cost, nil
}

// emitCostRows reads a page's rows by column name.
func emitCostRows(props *armcostmanagement.QueryProperties, fn func(CostRow) error) error {
	return eachDailyRow(props, colService, colResourceGroup, func(date time.Time, cost float64, service, group, currency string) error {
		return fn(CostRow{Date: date, Cost: cost, Service: service, ResourceGroup: group, Currency: currency})
	})
}

// eachDailyRow reads a daily page's rows by column name: each row's day,
// cost, values of the two dimensions it is grouped by, and currency.
func eachDailyRow(props *armcostmanagement.QueryProperties, dim1, dim2 string, fn func(date time.Time, cost float64, v1, v2, currency string) error) error {
	idx, err := columnsAt(props, colCost, colDate, dim1, dim2, colCurrency)
	if err != nil {
		return err
	}
	for n, row := range props.Rows {
		cost, err := costCell(row, idx[0], n, len(props.Columns))
		if err != nil {
			return err
		}
		date, err := usageDate(row[idx[1]])
		if err != nil {
			return fmt.Errorf("cloud: cost row %d: %w", n, err)
		}
		if err := fn(date, cost, text(row[idx[2]]), text(row[idx[3]]), text(row[idx[4]])); err != nil {
			return err
		}
	}
	return nil
}

// usageDate reads Cost Management's UsageDate: a number like 20261001.
func usageDate(v any) (time.Time, error) {
	f, ok := v.(float64)
	if !ok {
		return time.Time{}, fmt.Errorf("%s is %T, not a yyyymmdd number", colDate, v)
	}
	n := int(f)
	d := time.Date(n/10000, time.Month(n/100%100), n%100, 0, 0, 0, 0, time.UTC)
	if float64(n) != f || d.Year() != n/10000 || int(d.Month()) != n/100%100 || d.Day() != n%100 {
		return time.Time{}, fmt.Errorf("%s %v is not a yyyymmdd date", colDate, v)
	}
	return d, nil
}

// text reads a string cell; Cost Management sends null for an empty
// dimension, such as the resource group of a subscription-level charge.
func text(v any) string {
	s, _ := v.(string)
	return s
}

// calendarDay is t's calendar day in its own location, at midnight UTC: the
// day the caller means, as Cost Management's days are UTC days.
func calendarDay(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// ResourceCost is a resource's actual cost over a period.
type ResourceCost struct {
	// ResourceID is the resource's ARM id in lower case, as Cost
	// Management reports it; empty for the costs of no resource (a
	// subscription's support plan, marketplace or tax lines).
	ResourceID string
	Cost       float64
	Currency   string
}

// colResourceID is the dimension ResourceCosts groups by.
const colResourceID = "ResourceId"

// ResourceCosts calls fn for each resource's actual cost in a subscription
// summed over the calendar days of from through to (both included, at
// most a year): one query without granularity grouped by ResourceId, read
// a page at a time. An error from fn stops the query and is returned as
// is.
func (c *ResourceManager) ResourceCosts(ctx context.Context, subscriptionID string, from, to time.Time, fn func(ResourceCost) error) error {
	if subscriptionID == "" {
		return errors.New("cloud: resource costs: no subscription id")
	}
	first, last := calendarDay(from), calendarDay(to)
	if last.Before(first) || !last.Before(first.AddDate(1, 0, 0)) {
		return fmt.Errorf("cloud: resource costs: %s..%s is not a period of one day to a year", first.Format(time.DateOnly), last.Format(time.DateOnly))
	}
	def := costQuery(ActualCost, first, last, "", colResourceID)
	return c.queryCosts(ctx, subscriptionID, def, func(props *armcostmanagement.QueryProperties) error {
		idx, err := columnsAt(props, colCost, colResourceID, colCurrency)
		if err != nil {
			return err
		}
		for n, row := range props.Rows {
			cost, err := costCell(row, idx[0], n, len(props.Columns))
			if err != nil {
				return err
			}
			r := ResourceCost{ResourceID: strings.ToLower(text(row[idx[1]])), Cost: cost, Currency: text(row[idx[2]])}
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	})
}
