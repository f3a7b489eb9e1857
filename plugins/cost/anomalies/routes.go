package anomalies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

// List is a page of anomalies.
type List struct {
	Items  []Anomaly `json:"items"`
	Total  int64     `json:"total"`
	Limit  int       `json:"limit"`
	Offset int       `json:"offset"`
}

// CurrencyImpact is the anomalies of one currency in a month.
type CurrencyImpact struct {
	Currency string        `json:"currency"`
	Count    int64         `json:"count"`
	Impact   ledger.Amount `json:"impact"`
}

// Month is one month of the anomaly trend.
type Month struct {
	Month        string           `json:"month" doc:"The month the anomalous costs were incurred, yyyy-mm"`
	Count        int64            `json:"count"`
	Acknowledged int64            `json:"acknowledged"`
	Impact       *ledger.Amount   `json:"impact" nullable:"true" doc:"The sum of the month's impacts; null when the response has several currencies (see by_currency)"`
	ByCurrency   []CurrencyImpact `json:"by_currency"`
}

// Trends is the anomaly trend by month.
type Trends struct {
	Months     int      `json:"months"`
	Currency   string   `json:"currency,omitempty" doc:"The one currency of the response's anomalies, when they have exactly one"`
	Currencies []string `json:"currencies"`
	Items      []Month  `json:"items" doc:"Oldest month first, the current month last; months without anomalies count zero"`
}

// ByService is the anomalies grouped by service.
type ByService struct {
	Items []ServiceCount `json:"items"`
}

// Top is the anomalies of largest impact.
type Top struct {
	Items []Anomaly `json:"items"`
}

// Acknowledgement is the answer to acknowledging one anomaly.
type Acknowledgement struct {
	Anomaly             Anomaly `json:"anomaly"`
	AlreadyAcknowledged bool    `json:"already_acknowledged" doc:"True when it was acknowledged before; it keeps its first acknowledgement"`
}

// MaxBulk is how many anomalies one bulk acknowledgement may name.
const MaxBulk = 500

// BulkRequest is the bulk acknowledgement's body.
type BulkRequest struct {
	AnomalyIDs []int64 `json:"anomaly_ids" minItems:"1" maxItems:"500" doc:"The anomalies to acknowledge"`
}

// BulkResult is the answer to a bulk acknowledgement.
type BulkResult struct {
	AnomalyIDs          []int64 `json:"anomaly_ids" doc:"The distinct ids named, in ascending order"`
	Acknowledged        int64   `json:"acknowledged" doc:"How many were acknowledged by this request"`
	AlreadyAcknowledged int64   `json:"already_acknowledged" doc:"How many had been acknowledged before"`
}

// Handlers serves the anomaly routes.
type Handlers struct {
	DB   *bun.DB
	Host *sdk.Host
	// Now is the clock of acknowledgements and of the trend's current
	// month; nil means time.Now.
	Now func() time.Time
}

func (h *Handlers) now() time.Time {
	if h.Now != nil {
		return h.Now().UTC()
	}
	return time.Now().UTC()
}

func ptr[T any](v T) *T { return &v }

const method = " Anomalies are found at each cost sync: a day of a tenant's service (in one currency) is anomalous when its cost exceeds the median of the same weekday in the four weeks before by more than 4 robust standard deviations (1.4826 × the median absolute deviation of those weeks' residuals from their weekday medians, at least 3 % of the expected cost), by at least 50.00 and by at least 25 %. Only rises are flagged; a restated day is judged again."

var (
	tenantIDsParam = &huma.Param{Name: "tenant_ids", In: "query", Description: "Only these tenants (default: every tenant the caller may see)",
		Schema: &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString}}}
	acknowledgedParam = &huma.Param{Name: "acknowledged", In: "query", Description: "Only acknowledged (true) or unacknowledged (false) anomalies",
		Schema: &huma.Schema{Type: huma.TypeBoolean}}
)

func intParam(name, desc string, lo, hi float64, def int) *huma.Param {
	return &huma.Param{Name: name, In: "query", Description: desc, Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: &lo, Maximum: &hi, Default: def}}
}

// Routes declares the anomaly routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	zero, one := 0.0, 1.0
	tags := []string{"Costs"}
	return []sdk.Route{
		{Method: http.MethodGet, Path: "/api/v1/costs/anomalies", TenantScoped: true, Handler: h.list, Operation: &huma.Operation{
			OperationID: "costs-anomalies", Tags: tags, Summary: "Cost anomalies, paginated",
			Description: "The anomalies of the caller's tenants." + method,
			Parameters: []*huma.Param{
				acknowledgedParam, tenantIDsParam,
				intParam("limit", "Page size", 1, 200, 50),
				{Name: "offset", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: &zero, Default: 0}},
				{Name: "sort_by", In: "query", Description: "detected_at (when first flagged), date (of the cost), impact, deviation (percent), score or service",
					Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"detected_at", "date", "impact", "deviation", "score", "service"}, Default: "detected_at"}},
				{Name: "sort_order", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"asc", "desc"}, Default: "desc"}},
			},
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Anomalies", List{})},
		}},
		{Method: http.MethodGet, Path: "/api/v1/costs/anomalies/trends", TenantScoped: true, Handler: h.trends, Operation: &huma.Operation{
			OperationID: "costs-anomalies-trends", Tags: tags, Summary: "Anomaly counts and impact by month",
			Description: "Counts and summed impact per month of the cost's date, for the current month and the months before it, zero-filled; impact per currency." + method,
			Parameters:  []*huma.Param{intParam("months", "How many months, the current one included", 1, 24, 6), tenantIDsParam},
			Responses:   map[string]*huma.Response{"200": sdk.JSONResponse("Anomaly trend", Trends{})},
		}},
		{Method: http.MethodGet, Path: "/api/v1/costs/anomalies/by-service", TenantScoped: true, Handler: h.byService, Operation: &huma.Operation{
			OperationID: "costs-anomalies-by-service", Tags: tags, Summary: "Anomalies grouped by service",
			Description: "One entry per service and currency, most anomalies first, then largest total impact." + method,
			Parameters:  []*huma.Param{intParam("limit", "How many entries", 1, 50, 20), tenantIDsParam},
			Responses:   map[string]*huma.Response{"200": sdk.JSONResponse("Anomalies by service", ByService{})},
		}},
		{Method: http.MethodGet, Path: "/api/v1/costs/anomalies/top", TenantScoped: true, Handler: h.top, Operation: &huma.Operation{
			OperationID: "costs-anomalies-top", Tags: tags, Summary: "The anomalies of largest impact",
			Description: "Ranked by impact, each in its own currency." + method,
			Parameters:  []*huma.Param{intParam("n", "How many anomalies", 1, 50, 10), acknowledgedParam, tenantIDsParam},
			Responses:   map[string]*huma.Response{"200": sdk.JSONResponse("Top anomalies", Top{})},
		}},
		{Method: http.MethodPost, Path: "/api/v1/costs/anomalies/{anomaly_id}/acknowledge", TenantScoped: true, Handler: h.acknowledge, Operation: &huma.Operation{
			OperationID: "costs-anomalies-acknowledge", Tags: tags, Summary: "Acknowledge an anomaly",
			Description: "Idempotent: acknowledging an acknowledged anomaly answers 200 and keeps its first acknowledgement. Audited. An acknowledged anomaly is kept even when a restated day is no longer anomalous.",
			Parameters: []*huma.Param{{Name: "anomaly_id", In: "path", Required: true,
				Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: &one}}},
			Responses: map[string]*huma.Response{
				"200": sdk.JSONResponse("Acknowledged", Acknowledgement{}),
				"404": {Description: "No such anomaly, or one of a tenant the caller may not see"},
			},
		}},
		{Method: http.MethodPost, Path: "/api/v1/costs/anomalies/bulk-acknowledge", TenantScoped: true, Handler: h.bulkAcknowledge, Operation: &huma.Operation{
			OperationID: "costs-anomalies-bulk-acknowledge", Tags: tags, Summary: "Acknowledge anomalies in bulk",
			Description: "All or none: when any id names no anomaly or one of a tenant the caller may not see, nothing is acknowledged and the answer is 404, naming those ids in its errors (location body.anomaly_ids, value the id) — the same answer for both, so ids cannot be probed. Otherwise every named anomaly is acknowledged in one transaction; ids already acknowledged keep their first acknowledgement and are counted apart. Audited per tenant.",
			RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{"application/json": {Schema: sdk.SchemaOf(BulkRequest{})}}},
			Responses: map[string]*huma.Response{
				"200": sdk.JSONResponse("Acknowledged", BulkResult{}),
				"404": {Description: "Some ids name no anomaly the caller may see; none was acknowledged"},
				"422": {Description: "The body is not an object with 1 to 500 positive integer anomaly_ids"},
			},
		}},
	}
}

func boolQuery(r *http.Request, name string) *bool {
	v, err := strconv.ParseBool(r.URL.Query().Get(name))
	if err != nil {
		return nil
	}
	return &v
}

// intQuery reads a parameter the host has checked and the SDK defaulted.
func intQuery(r *http.Request, name string) int {
	n, _ := strconv.Atoi(r.URL.Query().Get(name))
	return n
}

func (h *Handlers) list(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	q := ListQuery{TenantIDs: tenants, Acknowledged: boolQuery(r, "acknowledged"), SortBy: r.URL.Query().Get("sort_by"),
		Desc: r.URL.Query().Get("sort_order") == "desc", Limit: intQuery(r, "limit"), Offset: intQuery(r, "offset")}
	items, total, err := queries{h.DB}.list(r.Context(), q)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, List{Items: items, Total: total, Limit: q.Limit, Offset: q.Offset})
}

// monthsBack returns the months ending with t's as yyyymm, oldest first.
func monthsBack(t time.Time, n int) []int {
	first := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 1-n, 0)
	out := make([]int, n)
	for i := range out {
		m := first.AddDate(0, i, 0)
		out[i] = m.Year()*100 + int(m.Month())
	}
	return out
}

func (h *Handlers) trends(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	months := monthsBack(h.now(), intQuery(r, "months"))
	rows, err := queries{h.DB}.byMonth(r.Context(), tenants, months[0], months[len(months)-1])
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out := Trends{Months: len(months), Currencies: []string{}, Items: make([]Month, len(months))}
	index := map[int]*Month{}
	for i, m := range months {
		out.Items[i] = Month{Month: fmt.Sprintf("%04d-%02d", m/100, m%100), ByCurrency: []CurrencyImpact{}}
		index[m] = &out.Items[i]
	}
	for _, row := range rows {
		m := index[row.Month]
		m.Count += row.Count
		m.Acknowledged += row.Acknowledged
		m.ByCurrency = append(m.ByCurrency, CurrencyImpact{Currency: row.Currency, Count: row.Count, Impact: row.Impact})
		if !slices.Contains(out.Currencies, row.Currency) {
			out.Currencies = append(out.Currencies, row.Currency)
		}
	}
	slices.Sort(out.Currencies)
	// A month's impact is a sum only when every amount is in one currency.
	if len(out.Currencies) <= 1 {
		for i := range out.Items {
			var sum ledger.Amount
			for _, c := range out.Items[i].ByCurrency {
				sum += c.Impact
			}
			out.Items[i].Impact = ptr(sum)
		}
	}
	if len(out.Currencies) == 1 {
		out.Currency = out.Currencies[0]
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) byService(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	items, err := queries{h.DB}.byService(r.Context(), tenants, intQuery(r, "limit"))
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, ByService{Items: items})
}

func (h *Handlers) top(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	items, err := queries{h.DB}.top(r.Context(), tenants, boolQuery(r, "acknowledged"), intQuery(r, "n"))
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, Top{Items: items})
}

const resourceType = "cost_anomaly"

func (h *Handlers) acknowledge(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := sdk.PrincipalFrom(ctx)
	raw := r.PathValue("anomaly_id")
	var out Acknowledgement
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		err = errNotFound
	} else {
		at := h.now()
		err = h.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			a, err := get(ctx, tx, id)
			if err != nil {
				return err
			}
			// Another tenant's anomaly is answered as a missing one, so
			// ids cannot be probed.
			if !p.CanSee(a.TenantID) {
				return errNotFound
			}
			out.AlreadyAcknowledged = a.Acknowledged
			if !a.Acknowledged {
				if _, err := acknowledge(ctx, tx, []int64{id}, p.ID, at); err != nil {
					return err
				}
				a.Acknowledged, a.AcknowledgedBy, a.AcknowledgedAt = true, &p.ID, &at
			}
			out.Anomaly = a
			return nil
		})
	}
	// The audit entry is written after the commit: the host writes it to
	// the same database, which SQLite would not let it do while this
	// transaction holds the write lock. Should it fail, the caller gets an
	// error and may repeat the idempotent request.
	if errors.Is(err, errNotFound) {
		if err := h.Host.Audit(ctx, sdk.AuditEntry{Action: "anomaly.acknowledge.failure", Status: "failure", ResourceType: resourceType, ResourceID: raw,
			Details: map[string]any{"reason": "not found"}}); err != nil {
			sdk.WriteError(w, err)
			return
		}
		sdk.WriteError(w, sdk.NotFound("no anomaly "+raw))
		return
	}
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if err := h.Host.Audit(ctx, sdk.AuditEntry{Action: "anomaly.acknowledge.success", Status: "success", TenantID: out.Anomaly.TenantID,
		ResourceType: resourceType, ResourceID: raw, Details: map[string]any{
			"already_acknowledged": out.AlreadyAcknowledged, "service": out.Anomaly.Service, "date": out.Anomaly.Day.String()}}); err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

// bulkIDs reads the bulk body's distinct ids in ascending order.
func bulkIDs(r *http.Request) ([]int64, error) {
	var body struct {
		AnomalyIDs []any `json:"anomaly_ids"`
	}
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return nil, sdk.Invalid("body", "not a JSON object with anomaly_ids: %v", err)
	}
	if dec.More() {
		return nil, sdk.Invalid("body", "more than one JSON value")
	}
	if len(body.AnomalyIDs) == 0 || len(body.AnomalyIDs) > MaxBulk {
		return nil, sdk.Invalid("body.anomaly_ids", "must name 1 to %d anomalies, not %d", MaxBulk, len(body.AnomalyIDs))
	}
	ids := make([]int64, 0, len(body.AnomalyIDs))
	for i, v := range body.AnomalyIDs {
		n, ok := v.(json.Number)
		id, err := n.Int64()
		if !ok || err != nil || id < 1 {
			return nil, sdk.Invalid("body.anomaly_ids", "item %d (%v) is not a positive integer", i, v)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// errRefused rolls back a bulk acknowledgement naming ids the caller may
// not acknowledge.
var errRefused = errors.New("refused")

func (h *Handlers) bulkAcknowledge(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := sdk.PrincipalFrom(ctx)
	ids, err := bulkIDs(r)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	at := h.now()
	var refused []int64
	var rows []Anomaly
	var done int64
	err = h.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		rows = nil
		q := tx.NewSelect().Model(&rows).Column("id", "tenant_id", "acknowledged").Where("id IN (?)", bun.List(ids))
		if err := forUpdate(q).Scan(ctx); err != nil {
			return err
		}
		visible := map[int64]bool{}
		for _, a := range rows {
			visible[a.ID] = p.CanSee(a.TenantID)
		}
		refused = nil
		for _, id := range ids {
			if !visible[id] {
				refused = append(refused, id)
			}
		}
		if len(refused) > 0 {
			return errRefused
		}
		done, err = acknowledge(ctx, tx, ids, p.ID, at)
		return err
	})
	if errors.Is(err, errRefused) {
		h.refuse(w, r, ids, refused)
		return
	}
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	// One audit entry per tenant, after the commit (see acknowledge).
	type tally struct {
		ids                []int64
		acknowledged, seen int
	}
	perTenant := map[string]*tally{}
	var tenants []string
	for _, a := range rows {
		t := perTenant[a.TenantID]
		if t == nil {
			t = &tally{}
			perTenant[a.TenantID] = t
			tenants = append(tenants, a.TenantID)
		}
		t.ids = append(t.ids, a.ID)
		if a.Acknowledged {
			t.seen++
		} else {
			t.acknowledged++
		}
	}
	slices.Sort(tenants)
	for _, tenant := range tenants {
		t := perTenant[tenant]
		slices.Sort(t.ids)
		if err := h.Host.Audit(ctx, sdk.AuditEntry{Action: "anomaly.bulk_acknowledge.success", Status: "success", TenantID: tenant, ResourceType: resourceType,
			Details: map[string]any{"anomaly_ids": t.ids, "acknowledged": t.acknowledged, "already_acknowledged": t.seen}}); err != nil {
			sdk.WriteError(w, err)
			return
		}
	}
	sdk.WriteJSON(w, http.StatusOK, BulkResult{AnomalyIDs: ids, Acknowledged: done, AlreadyAcknowledged: int64(len(ids)) - done})
}

// refuse answers a bulk acknowledgement that named ids the caller may not
// acknowledge: 404 naming each, after auditing the refusal.
func (h *Handlers) refuse(w http.ResponseWriter, r *http.Request, ids, refused []int64) {
	names := make([]string, len(refused))
	for i, id := range refused {
		names[i] = strconv.FormatInt(id, 10)
	}
	if err := h.Host.Audit(r.Context(), sdk.AuditEntry{Action: "anomaly.bulk_acknowledge.failure", Status: "failure", ResourceType: resourceType,
		Details: map[string]any{"anomaly_ids": ids, "refused_ids": refused}}); err != nil {
		sdk.WriteError(w, err)
		return
	}
	problem := sdk.NotFound("no anomalies " + strings.Join(names, ", ") + "; none of the anomalies named was acknowledged")
	for _, id := range refused {
		problem.Errors = append(problem.Errors, sdk.ErrorDetail{Location: "body.anomaly_ids", Message: "no anomaly " + strconv.FormatInt(id, 10), Value: id})
	}
	sdk.WriteError(w, problem)
}
