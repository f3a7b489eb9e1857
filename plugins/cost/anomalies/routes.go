package anomalies

import (
	"context"
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
	AlreadyAcknowledged bool    `json:"already_acknowledged" doc:"True when it was acknowledged before; it keeps its first acknowledgement and note"`
}

// Unacknowledgement is the answer to undoing an acknowledgement.
type Unacknowledgement struct {
	Anomaly         Anomaly `json:"anomaly"`
	WasAcknowledged bool    `json:"was_acknowledged" doc:"False when it was not acknowledged; nothing changed"`
}

// MaxBulk is how many anomalies one bulk acknowledgement may name.
const MaxBulk = 500

// BulkRequest is the bulk acknowledgement's body.
type BulkRequest struct {
	// The maximum is the largest integer a JSON number holds exactly.
	AnomalyIDs []int64 `json:"anomaly_ids" nullable:"false" minItems:"1" maxItems:"500" minimum:"1" maximum:"9007199254740991" doc:"The anomalies to acknowledge"`
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

// TenantsParam is the tenant input of the anomaly reads.
type TenantsParam struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
}

type listIn struct {
	TenantsParam
	Acknowledged sdk.Optional[bool] `query:"acknowledged" doc:"Only acknowledged (true) or unacknowledged (false) anomalies"`
	Limit        int                `query:"limit" minimum:"1" maximum:"200" default:"50" doc:"Page size"`
	Offset       int                `query:"offset" minimum:"0" default:"0"`
	SortBy       string             `query:"sort_by" enum:"detected_at,date,impact,deviation,score,service" default:"detected_at" doc:"detected_at (when first flagged), date (of the cost), impact, deviation (percent), score or service"`
	SortOrder    string             `query:"sort_order" enum:"asc,desc" default:"desc"`
	StartDate    string             `query:"start_date" format:"date" doc:"Only anomalies of costs on or after this day"`
	EndDate      string             `query:"end_date" format:"date" doc:"Only anomalies of costs on or before this day, not before start_date"`
}

type trendsIn struct {
	Months int `query:"months" minimum:"1" maximum:"24" default:"6" doc:"How many months, the current one included"`
	TenantsParam
}

type byServiceIn struct {
	Limit int `query:"limit" minimum:"1" maximum:"50" default:"20" doc:"How many entries"`
	TenantsParam
}

type topIn struct {
	N            int                `query:"n" minimum:"1" maximum:"50" default:"10" doc:"How many anomalies"`
	Acknowledged sdk.Optional[bool] `query:"acknowledged" doc:"Only acknowledged (true) or unacknowledged (false) anomalies"`
	TenantsParam
}

type acknowledgeIn struct {
	AnomalyRef
	Body *ackBody
}

// AnomalyRef names an anomaly in the path.
type AnomalyRef struct {
	ID int64 `path:"anomaly_id" minimum:"1"`
}

// MaxNote is the longest acknowledgement note, in characters.
const MaxNote = 1000

// ackBody is an acknowledgement's optional body: a client may leave it
// out or send null or {}, as it does to acknowledge a budget alert
// without a note.
type ackBody struct {
	Note *string `json:"note,omitempty"`
}

// Schema documents the body: null or an object with an optional note.
func (ackBody) Schema(huma.Registry) *huma.Schema {
	maxNote := MaxNote
	return &huma.Schema{Type: huma.TypeObject, Nullable: true, AdditionalProperties: false, Properties: map[string]*huma.Schema{
		"note": {Type: huma.TypeString, Nullable: true, MaxLength: &maxNote, Description: "Why the anomaly needs no more attention; stored as sent, trimmed (blank is none)"},
	}, Description: "Optional: absent, null, {} or {\"note\": \"…\"}"}
}

// note is the body's note trimmed, nil when there is none.
func (b *ackBody) note() *string {
	if b == nil || b.Note == nil {
		return nil
	}
	if t := strings.TrimSpace(*b.Note); t != "" {
		return &t
	}
	return nil
}

type bulkIn struct {
	Body BulkRequest
}

// Routes declares the anomaly routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	tags := []string{"Costs"}
	return []sdk.Route{
		sdk.Get("/api/v1/costs/anomalies", sdk.Op{ID: "costs-anomalies", Tags: tags, Summary: "Cost anomalies, paginated",
			Description: "The anomalies of the caller's tenants, newest first: by default those flagged last, and of those flagged together (a first sync flags a year at once) the latest day first. " +
				"start_date and end_date keep the anomalies of the costs of those days." + method,
			Responses: map[string]*huma.Response{"422": {Description: "A parameter is out of bounds, or end_date is before start_date"}}}, h.list),
		sdk.Get("/api/v1/costs/anomalies/trends", sdk.Op{ID: "costs-anomalies-trends", Tags: tags, Summary: "Anomaly counts and impact by month",
			Description: "Counts and summed impact per month of the cost's date, for the current month and the months before it, zero-filled; impact per currency." + method}, h.trends),
		sdk.Get("/api/v1/costs/anomalies/by-service", sdk.Op{ID: "costs-anomalies-by-service", Tags: tags, Summary: "Anomalies grouped by service",
			Description: "One entry per service and currency, most anomalies first, then largest total impact." + method}, h.byService),
		sdk.Get("/api/v1/costs/anomalies/top", sdk.Op{ID: "costs-anomalies-top", Tags: tags, Summary: "The anomalies of largest impact",
			Description: "Ranked by impact, each in its own currency." + method}, h.top),
		sdk.Post("/api/v1/costs/anomalies/{anomaly_id}/acknowledge", sdk.Op{ID: "costs-anomalies-acknowledge", Tags: tags, Summary: "Acknowledge an anomaly",
			Description: "Idempotent: acknowledging an acknowledged anomaly answers 200 and keeps its first acknowledgement and note. Audited. An acknowledged anomaly is kept even when a restated day is no longer anomalous. " +
				"The body is optional: absent, null, {} or an object with a note of at most 1,000 characters, which the anomaly shows as note.",
			Responses: map[string]*huma.Response{"404": {Description: "No such anomaly, or one of a tenant the caller may not see"},
				"422": {Description: "The anomaly id is not a positive integer, or the body is not absent, null or an object with only a note"}}}, h.acknowledge),
		sdk.Delete("/api/v1/costs/anomalies/{anomaly_id}/acknowledge", sdk.Op{ID: "costs-anomalies-unacknowledge", Tags: tags, Summary: "Undo an anomaly's acknowledgement",
			Description: "The anomaly is unacknowledged again, its note removed, and listed among those to acknowledge. Idempotent: an anomaly that is not acknowledged answers 200 with was_acknowledged false. " +
				"Audited. Unacknowledged, it is removed by a later sync if its restated day is no longer anomalous.",
			Status: http.StatusOK, Responses: map[string]*huma.Response{"404": {Description: "No such anomaly, or one of a tenant the caller may not see"},
				"422": {Description: "The anomaly id is not a positive integer"}}}, h.unacknowledge),
		sdk.Post("/api/v1/costs/anomalies/bulk-acknowledge", sdk.Op{ID: "costs-anomalies-bulk-acknowledge", Tags: tags, Summary: "Acknowledge anomalies in bulk",
			Description: "All or none: when any id names no anomaly or one of a tenant the caller may not see, nothing is acknowledged and the answer is 404, naming those ids in its errors (location body.anomaly_ids, value the id) — the same answer for both, so ids cannot be probed. Otherwise every named anomaly is acknowledged in one transaction; ids already acknowledged keep their first acknowledgement and are counted apart. Audited per tenant.",
			Responses: map[string]*huma.Response{
				"404": {Description: "Some ids name no anomaly the caller may see; none was acknowledged"},
				"422": {Description: "The body is not an object with 1 to 500 positive integer anomaly_ids"},
			}}, h.bulkAcknowledge),
	}
}

// dateParam reads an optional date parameter.
func dateParam(loc, s string) (*ledger.Day, error) {
	if s == "" {
		return nil, nil
	}
	d, err := ledger.ParseDay(s)
	if err != nil {
		return nil, sdk.Invalid(loc, "must be a date, YYYY-MM-DD")
	}
	return &d, nil
}

func (h *Handlers) list(ctx context.Context, in *listIn) (*List, error) {
	q := ListQuery{TenantIDs: in.Tenants, Acknowledged: in.Acknowledged.Ptr(), SortBy: in.SortBy,
		Desc: in.SortOrder == "desc", Limit: in.Limit, Offset: in.Offset}
	var err error
	if q.From, err = dateParam("query.start_date", in.StartDate); err != nil {
		return nil, err
	}
	if q.To, err = dateParam("query.end_date", in.EndDate); err != nil {
		return nil, err
	}
	if q.From != nil && q.To != nil && *q.To < *q.From {
		return nil, sdk.Invalid("query.end_date", "must not be before start_date (%s)", *q.From)
	}
	items, total, err := queries{h.DB}.list(ctx, q)
	if err != nil {
		return nil, err
	}
	return &List{Items: items, Total: total, Limit: q.Limit, Offset: q.Offset}, nil
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

func (h *Handlers) trends(ctx context.Context, in *trendsIn) (*Trends, error) {
	months := monthsBack(h.now(), in.Months)
	rows, err := queries{h.DB}.byMonth(ctx, in.Tenants, months[0], months[len(months)-1])
	if err != nil {
		return nil, err
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
	return &out, nil
}

func (h *Handlers) byService(ctx context.Context, in *byServiceIn) (*ByService, error) {
	items, err := queries{h.DB}.byService(ctx, in.Tenants, in.Limit)
	if err != nil {
		return nil, err
	}
	return &ByService{Items: items}, nil
}

func (h *Handlers) top(ctx context.Context, in *topIn) (*Top, error) {
	items, err := queries{h.DB}.top(ctx, in.Tenants, in.Acknowledged.Ptr(), in.N)
	if err != nil {
		return nil, err
	}
	return &Top{Items: items}, nil
}

const resourceType = "cost_anomaly"

func (h *Handlers) acknowledge(ctx context.Context, in *acknowledgeIn) (*Acknowledgement, error) {
	p := sdk.PrincipalFrom(ctx)
	id, raw := in.ID, strconv.FormatInt(in.ID, 10)
	note := in.Body.note()
	var out Acknowledgement
	at := h.now()
	err := h.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		a, err := get(ctx, tx, id)
		if err != nil {
			return err
		}
		// Another tenant's anomaly is answered as a missing one, so ids
		// cannot be probed.
		if !p.CanSee(a.TenantID) {
			return errNotFound
		}
		out.AlreadyAcknowledged = a.Acknowledged
		if !a.Acknowledged {
			if _, err := acknowledge(ctx, tx, []int64{id}, p.ID, at, note); err != nil {
				return err
			}
			a.Acknowledged, a.AcknowledgedBy, a.AcknowledgedAt, a.Note = true, &p.ID, &at, note
		}
		out.Anomaly = a
		return nil
	})
	// The audit entry is written after the commit: the host writes it to
	// the same database, which SQLite would not let it do while this
	// transaction holds the write lock. Should it fail, the caller gets an
	// error and may repeat the idempotent request.
	if errors.Is(err, errNotFound) {
		if err := h.Host.Audit(ctx, sdk.AuditEntry{Action: "anomaly.acknowledge.failure", Status: "failure", ResourceType: resourceType, ResourceID: raw,
			Details: map[string]any{"reason": "not found"}}); err != nil {
			return nil, err
		}
		return nil, sdk.NotFound("no anomaly " + raw)
	}
	if err != nil {
		return nil, err
	}
	if err := h.Host.Audit(ctx, sdk.AuditEntry{Action: "anomaly.acknowledge.success", Status: "success", TenantID: out.Anomaly.TenantID,
		ResourceType: resourceType, ResourceID: raw, Details: map[string]any{
			"already_acknowledged": out.AlreadyAcknowledged, "service": out.Anomaly.Service, "date": out.Anomaly.Day.String(), "note": note}}); err != nil {
		return nil, err
	}
	return &out, nil
}

func (h *Handlers) unacknowledge(ctx context.Context, in *AnomalyRef) (*Unacknowledgement, error) {
	p := sdk.PrincipalFrom(ctx)
	raw := strconv.FormatInt(in.ID, 10)
	var out Unacknowledgement
	err := h.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		a, err := get(ctx, tx, in.ID)
		if err != nil {
			return err
		}
		if !p.CanSee(a.TenantID) {
			return errNotFound
		}
		out.WasAcknowledged = a.Acknowledged
		if a.Acknowledged {
			if err := unacknowledge(ctx, tx, in.ID); err != nil {
				return err
			}
			a.Acknowledged, a.AcknowledgedBy, a.AcknowledgedAt, a.Note = false, nil, nil, nil
		}
		out.Anomaly = a
		return nil
	})
	// Audited after the commit, as acknowledge is.
	if errors.Is(err, errNotFound) {
		if err := h.Host.Audit(ctx, sdk.AuditEntry{Action: "anomaly.unacknowledge.failure", Status: "failure", ResourceType: resourceType, ResourceID: raw,
			Details: map[string]any{"reason": "not found"}}); err != nil {
			return nil, err
		}
		return nil, sdk.NotFound("no anomaly " + raw)
	}
	if err != nil {
		return nil, err
	}
	if err := h.Host.Audit(ctx, sdk.AuditEntry{Action: "anomaly.unacknowledge.success", Status: "success", TenantID: out.Anomaly.TenantID,
		ResourceType: resourceType, ResourceID: raw, Details: map[string]any{
			"was_acknowledged": out.WasAcknowledged, "service": out.Anomaly.Service, "date": out.Anomaly.Day.String()}}); err != nil {
		return nil, err
	}
	return &out, nil
}

// errRefused rolls back a bulk acknowledgement naming ids the caller may
// not acknowledge.
var errRefused = errors.New("refused")

func (h *Handlers) bulkAcknowledge(ctx context.Context, in *bulkIn) (*BulkResult, error) {
	p := sdk.PrincipalFrom(ctx)
	ids := slices.Clone(in.Body.AnomalyIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	at := h.now()
	var refused []int64
	var rows []Anomaly
	var done int64
	err := h.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
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
		var err error
		done, err = acknowledge(ctx, tx, ids, p.ID, at, nil)
		return err
	})
	if errors.Is(err, errRefused) {
		return nil, h.refuse(ctx, ids, refused)
	}
	if err != nil {
		return nil, err
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
			return nil, err
		}
	}
	return &BulkResult{AnomalyIDs: ids, Acknowledged: done, AlreadyAcknowledged: int64(len(ids)) - done}, nil
}

// refuse is the answer to a bulk acknowledgement that named ids the caller
// may not acknowledge: 404 naming each, after auditing the refusal.
func (h *Handlers) refuse(ctx context.Context, ids, refused []int64) error {
	names := make([]string, len(refused))
	for i, id := range refused {
		names[i] = strconv.FormatInt(id, 10)
	}
	if err := h.Host.Audit(ctx, sdk.AuditEntry{Action: "anomaly.bulk_acknowledge.failure", Status: "failure", ResourceType: resourceType,
		Details: map[string]any{"anomaly_ids": ids, "refused_ids": refused}}); err != nil {
		return err
	}
	problem := sdk.NotFound("no anomalies " + strings.Join(names, ", ") + "; none of the anomalies named was acknowledged")
	for _, id := range refused {
		problem.Errors = append(problem.Errors, sdk.ErrorDetail{Location: "body.anomaly_ids", Message: "no anomaly " + strconv.FormatInt(id, 10), Value: id})
	}
	return problem
}
