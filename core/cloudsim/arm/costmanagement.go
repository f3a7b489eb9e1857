package arm

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Microsoft.CostManagement: the query API at subscription scope.
//
// A query is answered by streaming over the subscription's costs in date
// order, one bucket (a day, or the whole period without granularity) at a
// time: each bucket is summed by group into a few hundred rows at most, and
// a page takes the buckets it needs. The $skiptoken names where the next
// page starts (a bucket and how many of its rows were sent), so every page
// costs the same however deep into a year it is.

func (srv *server) registerCostManagement() {
	srv.handle("POST /subscriptions/{subscriptionId}/providers/Microsoft.CostManagement/query", srv.costQuery)
}

// queryDefinition is the request body, as the API defines it.
type queryDefinition struct {
	Type       string `json:"type"`
	Timeframe  string `json:"timeframe"`
	TimePeriod *struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"timePeriod"`
	Dataset struct {
		Granularity string `json:"granularity"`
		Aggregation map[string]struct {
			Name     string `json:"name"`
			Function string `json:"function"`
		} `json:"aggregation"`
		Grouping []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"grouping"`
		Filter json.RawMessage `json:"filter"`
	} `json:"dataset"`
}

// The API's limits on a query.
const (
	maxAggregations = 2
	maxGroupings    = 2
)

// The cost columns a query can sum. The world has one cost series in the
// subscription's currency, so both read it.
var costColumns = []string{"Cost", "PreTaxCost"}

// dimension is a column a query can group by.
type dimension struct {
	name  string
	value func(*world.Cost) string
}

var dimensions = []dimension{
	{"ServiceName", func(c *world.Cost) string { return c.Service }},
	{"ResourceGroupName", func(c *world.Cost) string { return c.ResourceGroup }},
	{"ResourceGroup", func(c *world.Cost) string { return c.ResourceGroup }},
	// Cost Management reports resource ids in lower case; a cost of no
	// resource groups under the empty id.
	{"ResourceId", func(c *world.Cost) string { return strings.ToLower(c.ResourceID) }},
}

// The kinds of result column.
const (
	colAggregation = iota
	colGroup
	colDate
	colCurrency
)

type column struct {
	name, typ string
	kind, i   int
}

// costQuery is a validated query.
type costQuery struct {
	from, to string // YYYY-MM-DD, both included
	// amortized: the query sums amortised costs (type AmortizedCost),
	// else actual ones.
	amortized bool
	daily     bool
	aggs      int
	groups    []dimension
	columns   []column
}

// parseQuery validates a query definition against the API's rules and
// what the simulator implements, answering what a client got wrong.
func (srv *server) parseQuery(def queryDefinition) (*costQuery, error) {
	q := &costQuery{}
	switch strings.ToLower(def.Type) {
	case "actualcost", "usage":
	case "amortizedcost":
		q.amortized = true
	default:
		return nil, fmt.Errorf("type %q is not one of ActualCost, AmortizedCost, Usage", def.Type)
	}
	if err := q.period(def, srv.sim.Now().UTC()); err != nil {
		return nil, err
	}
	switch strings.ToLower(def.Dataset.Granularity) {
	case "daily":
		q.daily = true
	case "", "none":
	default:
		return nil, fmt.Errorf("granularity %q is not supported; use Daily or none", def.Dataset.Granularity)
	}
	if len(def.Dataset.Filter) > 0 && string(def.Dataset.Filter) != "null" {
		return nil, fmt.Errorf("the simulated cloud does not implement query filters")
	}
	if len(def.Dataset.Aggregation) > maxAggregations {
		return nil, fmt.Errorf("a query can have up to %d aggregation clauses", maxAggregations)
	}
	if len(def.Dataset.Grouping) > maxGroupings {
		return nil, fmt.Errorf("a query can have up to %d group by clauses", maxGroupings)
	}
	var cols []column
	for gi, g := range def.Dataset.Grouping {
		if !strings.EqualFold(g.Type, "Dimension") {
			return nil, fmt.Errorf("grouping type %q is not supported; use Dimension", g.Type)
		}
		i := slices.IndexFunc(dimensions, func(d dimension) bool { return strings.EqualFold(d.name, g.Name) })
		if i < 0 {
			return nil, fmt.Errorf("grouping by %q is not supported; use ServiceName, ResourceGroupName, ResourceGroup or ResourceId", g.Name)
		}
		if slices.ContainsFunc(q.groups, func(d dimension) bool { return d.name == dimensions[i].name }) {
			return nil, fmt.Errorf("grouping by %q twice", g.Name)
		}
		q.groups = append(q.groups, dimensions[i])
		// Grouping columns lead, in reverse: an order no client should
		// count on.
		cols = append([]column{{name: dimensions[i].name, typ: "String", kind: colGroup, i: gi}}, cols...)
	}
	cols = append(cols, column{name: "Currency", typ: "String", kind: colCurrency})
	aliases := make([]string, 0, len(def.Dataset.Aggregation))
	for alias := range def.Dataset.Aggregation {
		aliases = append(aliases, alias)
	}
	slices.Sort(aliases)
	for _, alias := range aliases {
		a := def.Dataset.Aggregation[alias]
		if !strings.EqualFold(a.Function, "Sum") {
			return nil, fmt.Errorf("aggregation %q: function %q is not supported; use Sum", alias, a.Function)
		}
		i := slices.IndexFunc(costColumns, func(c string) bool { return strings.EqualFold(c, a.Name) })
		if i < 0 {
			return nil, fmt.Errorf("aggregation %q: column %q is not supported; use Cost or PreTaxCost", alias, a.Name)
		}
		cols = append(cols, column{name: costColumns[i], typ: "Number", kind: colAggregation, i: q.aggs})
		q.aggs++
	}
	if q.aggs == 0 {
		// Without an aggregation the API still sums the pre-tax cost.
		cols = append(cols, column{name: "PreTaxCost", typ: "Number", kind: colAggregation})
		q.aggs = 1
	}
	if q.daily {
		cols = append(cols, column{name: "UsageDate", typ: "Number", kind: colDate})
	}
	q.columns = srv.orderColumns(cols)
	return q, nil
}

// period resolves the timeframe to the days it covers.
func (q *costQuery) period(def queryDefinition, now time.Time) error {
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	var from, to time.Time
	switch strings.ToLower(def.Timeframe) {
	case "custom":
		if def.TimePeriod == nil {
			return fmt.Errorf("a Custom timeframe needs a timePeriod")
		}
		var err error
		if from, err = parseDay(def.TimePeriod.From); err != nil {
			return fmt.Errorf("timePeriod.from: %w", err)
		}
		if to, err = parseDay(def.TimePeriod.To); err != nil {
			return fmt.Errorf("timePeriod.to: %w", err)
		}
	case "monthtodate", "billingmonthtodate":
		from, to = today.AddDate(0, 0, 1-today.Day()), today
	case "thelastmonth", "thelastbillingmonth":
		to = today.AddDate(0, 0, -today.Day())
		from = to.AddDate(0, 0, 1-to.Day())
	default:
		return fmt.Errorf("timeframe %q is not supported; use Custom, MonthToDate, BillingMonthToDate, TheLastMonth or TheLastBillingMonth", def.Timeframe)
	}
	if to.Before(from) {
		return fmt.Errorf("the time period ends before it starts")
	}
	if !to.Before(from.AddDate(1, 0, 0)) {
		return fmt.Errorf("the time period for pulling the data cannot exceed 1 year(s)")
	}
	q.from, q.to = from.Format(time.DateOnly), to.Format(time.DateOnly)
	return nil
}

// parseDay reads a date-time of a time period as its UTC day.
func parseDay(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			t = t.UTC()
			return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a date-time", s)
}

// orderColumns applies WithCostColumnOrder.
func (srv *server) orderColumns(cols []column) []column {
	out := make([]column, 0, len(cols))
	for _, name := range srv.opts.costColumnOrder {
		for _, c := range cols {
			if strings.EqualFold(c.name, name) && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	for _, c := range cols {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// rowKey groups costs into a row: the grouping values and the currency.
type rowKey struct {
	g        [maxGroupings]string
	currency string
}

type costRow struct {
	key  rowKey
	date int // yyyymmdd
	sums [maxAggregations]float64
}

func compareRows(a, b costRow) int {
	return cmp.Or(cmp.Compare(a.key.g[0], b.key.g[0]), cmp.Compare(a.key.g[1], b.key.g[1]),
		cmp.Compare(a.key.currency, b.key.currency))
}

// aggregator sums one bucket at a time, reusing its memory.
type aggregator struct {
	q    *costQuery
	rows []costRow
	seen map[rowKey]int
}

// bucket sums the costs of idx by group and currency, sorted by group.
func (a *aggregator) bucket(costs []world.Cost, idx []int32) []costRow {
	clear(a.seen)
	a.rows = a.rows[:0]
	for _, i := range idx {
		c := &costs[i]
		var k rowKey
		for j, d := range a.q.groups {
			k.g[j] = d.value(c)
		}
		k.currency = currencyOf(c)
		n, ok := a.seen[k]
		if !ok {
			n = len(a.rows)
			a.seen[k] = n
			a.rows = append(a.rows, costRow{key: k, date: dateNumber(c.Date)})
		}
		v := c.Cost
		if a.q.amortized {
			v = c.Amortized()
		}
		for j := 0; j < a.q.aggs; j++ {
			a.rows[n].sums[j] += v
		}
	}
	slices.SortFunc(a.rows, compareRows)
	return a.rows
}

func currencyOf(c *world.Cost) string {
	if c.Currency == "" {
		return "USD"
	}
	return c.Currency
}

// dateNumber turns YYYY-MM-DD into the API's yyyymmdd number.
func dateNumber(d string) int {
	n, _ := strconv.Atoi(strings.ReplaceAll(d, "-", ""))
	return n
}

func (srv *server) costQuery(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	subID := r.PathValue("subscriptionId")
	if _, _, ok := srv.subscription(subID); !ok {
		subscriptionNotFound(w, subID)
		return
	}
	var def queryDefinition
	if err := json.NewDecoder(r.Body).Decode(&def); err != nil {
		badRequest(w, "Invalid query definition: %v", err)
		return
	}
	q, err := srv.parseQuery(def)
	if err != nil {
		badRequest(w, "Invalid query definition: %v", err)
		return
	}
	costs, idx := srv.costs.of(srv.sim.World(), subID)
	lo := sort.Search(len(idx), func(i int) bool { return costs[idx[i]].Date >= q.from })
	hi := sort.Search(len(idx), func(i int) bool { return costs[idx[i]].Date > q.to })
	if lo >= hi {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	pos, skip := lo, 0
	if tok := r.URL.Query().Get("$skiptoken"); tok != "" {
		p, s, ok := parseCostToken(tok)
		if !ok || p < lo || p > hi || s < 0 {
			badRequest(w, "Invalid $skiptoken %q.", tok)
			return
		}
		pos, skip = p, s
	}

	size := srv.opts.costPageSize
	page := make([]costRow, 0, min(size, hi-pos))
	agg := &aggregator{q: q, seen: map[rowKey]int{}}
	for pos < hi {
		end := hi
		if q.daily {
			day := costs[idx[pos]].Date
			end = pos + 1
			for end < hi && costs[idx[end]].Date == day {
				end++
			}
		}
		rows := srv.lastBucket.rows(agg, subID, costs, idx, pos, end, size)
		skip = min(skip, len(rows))
		n := min(len(rows)-skip, size-len(page))
		page = append(page, rows[skip:skip+n]...)
		if skip+n < len(rows) {
			skip += n
			break
		}
		pos, skip = end, 0
		if len(page) == size {
			break
		}
	}
	next := ""
	if pos < hi && !truncated(r) {
		next = srv.nextLink(r, fmt.Sprintf("%d.%d", pos, skip))
	}
	srv.writeQueryResult(w, subID, q, page, next)
}

// bucketCache keeps the last bucket summed whose costs are more than a
// page's rows: a query without granularity is one bucket, the whole
// period, and each of its pages would otherwise sum the period again.
type bucketCache struct {
	mu   sync.Mutex
	key  bucketKey
	sums []costRow
}

// bucketKey names a bucket: the world's cost list (by its first element
// and length), the subscription, the bucket's positions among its costs
// and what the query sums by.
type bucketKey struct {
	costs     *world.Cost
	n         int
	sub       string
	pos, end  int
	groups    string
	aggs      int
	amortized bool
}

// rows sums the bucket idx[pos:end] with agg, or returns the sums kept
// from the page before.
func (bc *bucketCache) rows(agg *aggregator, subID string, costs []world.Cost, idx []int32, pos, end, size int) []costRow {
	if end-pos <= size {
		return agg.bucket(costs, idx[pos:end])
	}
	names := make([]string, len(agg.q.groups))
	for i, d := range agg.q.groups {
		names[i] = d.name
	}
	k := bucketKey{costs: &costs[0], n: len(costs), sub: strings.ToLower(subID), pos: pos, end: end, groups: strings.Join(names, ","), aggs: agg.q.aggs, amortized: agg.q.amortized}
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.sums != nil && bc.key == k {
		return bc.sums
	}
	bc.key, bc.sums = k, slices.Clone(agg.bucket(costs, idx[pos:end]))
	return bc.sums
}

// parseCostToken reads a $skiptoken: "position.skip".
func parseCostToken(tok string) (pos, skip int, ok bool) {
	a, b, found := strings.Cut(tok, ".")
	if !found {
		return 0, 0, false
	}
	pos, err1 := strconv.Atoi(a)
	skip, err2 := strconv.Atoi(b)
	return pos, skip, err1 == nil && err2 == nil
}

// writeQueryResult writes the page straight into one buffer: encoding a
// thousand rows through reflection would cost more than summing them. The
// few distinct strings of a page are JSON-encoded once each.
func (srv *server) writeQueryResult(w http.ResponseWriter, subID string, q *costQuery, rows []costRow, next string) {
	id := uuid.NewString()
	buf := make([]byte, 0, 256+len(rows)*96)
	enc := map[string][]byte{}
	str := func(b []byte, s string) []byte {
		e, ok := enc[s]
		if !ok {
			e, _ = json.Marshal(s)
			enc[s] = e
		}
		return append(b, e...)
	}
	buf = append(buf, `{"id":`...)
	buf = str(buf, "subscriptions/"+subID+"/providers/Microsoft.CostManagement/query/"+id)
	buf = append(buf, `,"name":`...)
	buf = str(buf, id)
	buf = append(buf, `,"type":"Microsoft.CostManagement/query","location":null,"sku":null,"eTag":null,"properties":{"nextLink":`...)
	if next == "" {
		buf = append(buf, "null"...)
	} else {
		buf = str(buf, next)
	}
	buf = append(buf, `,"columns":[`...)
	for i, c := range q.columns {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"name":`...)
		buf = str(buf, c.name)
		buf = append(buf, `,"type":`...)
		buf = str(buf, c.typ)
		buf = append(buf, '}')
	}
	buf = append(buf, `],"rows":[`...)
	for ri, row := range rows {
		if ri > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		for i, c := range q.columns {
			if i > 0 {
				buf = append(buf, ',')
			}
			switch c.kind {
			case colAggregation:
				buf = strconv.AppendFloat(buf, row.sums[c.i], 'f', -1, 64)
			case colGroup:
				buf = str(buf, row.key.g[c.i])
			case colDate:
				buf = strconv.AppendInt(buf, int64(row.date), 10)
			case colCurrency:
				buf = str(buf, row.key.currency)
			}
		}
		buf = append(buf, ']')
	}
	buf = append(buf, "]}}"...)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	_, _ = w.Write(buf)
}

// costIndex orders each subscription's costs by date, so a query finds its
// period by binary search. It is built on first use and again whenever the
// world's cost list is replaced or grows.
type costIndex struct {
	mu    sync.Mutex
	built []world.Cost
	bySub map[string][]int32
}

// of returns the world's costs and the positions of a subscription's
// costs among them, in date order.
func (ci *costIndex) of(w *world.World, subID string) ([]world.Cost, []int32) {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	costs := w.Costs
	if ci.bySub == nil || len(costs) != len(ci.built) || (len(costs) > 0 && &costs[0] != &ci.built[0]) {
		ci.bySub = map[string][]int32{}
		for i := range costs {
			k := strings.ToLower(costs[i].SubscriptionID)
			ci.bySub[k] = append(ci.bySub[k], int32(i))
		}
		for _, idx := range ci.bySub {
			slices.SortStableFunc(idx, func(a, b int32) int { return strings.Compare(costs[a].Date, costs[b].Date) })
		}
		ci.built = costs
	}
	return costs, ci.bySub[strings.ToLower(subID)]
}
