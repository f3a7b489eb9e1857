package checks

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/partner/catalogue"
	"github.com/stewardhq/steward/sdk"
)

// Handlers serves the partner reads.
type Handlers struct {
	Catalogue *catalogue.Catalogue
	Store     *Store
	// Host names the tenants.
	Host *sdk.Host
	// Now is the clock days left and the trend count from; nil is
	// time.Now.
	Now func() time.Time
}

func (h *Handlers) now() time.Time {
	if h.Now != nil {
		return h.Now().UTC()
	}
	return time.Now().UTC()
}

const tag = "partner"

// TenantMaturity is a tenant's latest assessment.
type TenantMaturity struct {
	TenantID         string    `json:"tenant_id"`
	TenantName       string    `json:"tenant_name"`
	Date             string    `json:"date" doc:"Day (UTC) of the assessment"`
	Maturity         float64   `json:"maturity" doc:"Priority-weighted share of the requirements met, 0 to 5"`
	MeetsTarget      bool      `json:"meets_target" doc:"maturity is at least the programme's target maturity"`
	Requirements     int       `json:"requirements"`
	Met              int       `json:"met"`
	NotMet           int       `json:"not_met"`
	Unknown          int       `json:"unknown"`
	AwaitingEvidence int       `json:"awaiting_evidence"`
	Gaps             int       `json:"gaps" doc:"Requirements not met"`
	CriticalGaps     int       `json:"critical_gaps" doc:"Critical requirements not met"`
	CheckedAt        time.Time `json:"checked_at"`
}

// Programme is the programme's summary with a page of its tenants.
type Programme struct {
	Partner        string           `json:"partner"`
	Description    string           `json:"description"`
	Deadline       string           `json:"deadline" format:"date"`
	DaysLeft       int              `json:"days_left" doc:"Days from today (UTC) to the deadline; negative once it has passed"`
	TargetMaturity float64          `json:"target_maturity"`
	MaxMaturity    float64          `json:"max_maturity" doc:"Top of the maturity scale"`
	Requirements   int              `json:"requirements" doc:"Requirements in the catalogue"`
	Items          []TenantMaturity `json:"items" doc:"The tenants' latest assessments; a tenant never assessed is absent"`
	Total          int              `json:"total"`
	Limit          int              `json:"limit"`
	Offset         int              `json:"offset"`
}

// RequirementList is a page of the catalogue.
type RequirementList struct {
	Items  []catalogue.Requirement `json:"items"`
	Total  int                     `json:"total"`
	Limit  int                     `json:"limit"`
	Offset int                     `json:"offset"`
}

// ResultItem is a requirement's status for a tenant at its latest
// assessment.
type ResultItem struct {
	TenantID      string   `json:"tenant_id"`
	Date          string   `json:"date"`
	RequirementID string   `json:"requirement_id"`
	Title         string   `json:"title"`
	Category      string   `json:"category"`
	Priority      string   `json:"priority" enum:"critical,high,medium,low"`
	Status        string   `json:"status" enum:"met,not_met,unknown,awaiting_evidence"`
	CheckStatus   string   `json:"check_status" enum:"met,not_met,unknown,none" doc:"The automatic check's outcome; none without a check"`
	Metric        string   `json:"metric" doc:"The check's metric; empty without a check"`
	Framework     string   `json:"framework"`
	Value         *float64 `json:"value" doc:"The metric's value in percent; null without a check or when it is unknown"`
	Target        *float64 `json:"target" doc:"The check's target (value >= target); null without a check"`
	Reason        string   `json:"reason" doc:"Why an unknown check has no value"`
	// EvidenceStatus is empty while the plugin has no evidence part.
	EvidenceStatus string   `json:"evidence_status" doc:"The tenant's evidence status for the requirement; empty without evidence"`
	Evidence       []string `json:"expected_evidence"`
}

// ResultList is a page of results.
type ResultList struct {
	Items  []ResultItem `json:"items"`
	Total  int          `json:"total"`
	Limit  int          `json:"limit"`
	Offset int          `json:"offset"`
}

// TrendPoint is a tenant's maturity on a day.
type TrendPoint struct {
	Date           string  `json:"date"`
	TenantID       string  `json:"tenant_id"`
	TenantName     string  `json:"tenant_name"`
	Maturity       float64 `json:"maturity"`
	TargetMaturity float64 `json:"target_maturity"`
	Met            int     `json:"met"`
	Gaps           int     `json:"gaps"`
	DaysLeft       int     `json:"days_left" doc:"Days to the deadline on the day"`
}

func intPtr(n int) *int { return &n }

func intParam(name string, lo, hi, def int, doc string) *huma.Param {
	l, u := float64(lo), float64(hi)
	return &huma.Param{Name: name, In: "query", Description: doc,
		Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: &l, Maximum: &u, Default: def}}
}

func tenantIDsParam() *huma.Param {
	return &huma.Param{Name: "tenant_ids", In: "query",
		Description: "Tenants to include (repeated or comma-separated); all the caller's tenants when absent. A tenant the caller may not see is a 403.",
		Schema:      &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}}}
}

func enumParam(name string, values []string, def, doc string) *huma.Param {
	enum := make([]any, len(values))
	for i, v := range values {
		enum[i] = v
	}
	s := &huma.Schema{Type: huma.TypeString, Enum: enum}
	if def != "" {
		s.Default = def
	}
	return &huma.Param{Name: name, In: "query", Description: doc, Schema: s}
}

// window are a list's page and order parameters.
func window(sorts []string, def string) []*huma.Param {
	zero := 0.0
	return []*huma.Param{
		intParam("limit", 1, 500, 50, "Page size"),
		{Name: "offset", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: &zero, Default: 0}},
		enumParam("sort_by", sorts, def, "Order of the list"),
		enumParam("sort_order", []string{"asc", "desc"}, "asc", ""),
	}
}

func priorityNames() []string {
	out := make([]string, len(catalogue.Priorities))
	for i, p := range catalogue.Priorities {
		out[i] = string(p)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
}

// Routes declares the read routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	get := http.MethodGet
	errs := map[string]*huma.Response{
		"403": {Description: "A tenant named in tenant_ids is not the caller's"},
		"422": {Description: "A parameter is out of its bounds or not one of its values; errors name it as query.<name>"},
	}
	op := func(id, summary, doc string, params []*huma.Param, resp *huma.Response) *huma.Operation {
		responses := map[string]*huma.Response{"200": resp}
		for k, v := range errs {
			responses[k] = v
		}
		return &huma.Operation{OperationID: "partner-" + id, Tags: []string{tag}, Summary: summary, Description: doc,
			Parameters: params, Responses: responses}
	}
	category := &huma.Param{Name: "category", In: "query", Description: "Only requirements of this category",
		Schema: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}}
	priority := enumParam("priority", priorityNames(), "", "Only requirements of this priority")
	maturityDoc := " Maturity is the priority-weighted share of the requirements met on 0 to 5 (critical weighs 4, high 3, medium 2, low 1); " +
		"a requirement is met when its automatic check reaches its target or, without a check, its evidence is accepted."
	return []sdk.Route{
		{Method: get, Path: "/api/v1/partner/programme", TenantScoped: true, Handler: h.programme, Operation: op("programme",
			"The partner programme and each tenant's maturity",
			"The partner, its deadline with the days left, the target maturity, and a page of the tenants' latest assessments with their gaps."+maturityDoc,
			append([]*huma.Param{tenantIDsParam()}, window(sortedKeys(SnapshotSorts), "maturity")...), sdk.JSONResponse("The programme", Programme{}))},
		{Method: get, Path: "/api/v1/partner/requirements", Handler: h.requirements, Operation: &huma.Operation{
			OperationID: "partner-requirements", Tags: []string{tag}, Summary: "The requirements catalogue, paginated",
			Description: "The partner's requirements with their priority, the evidence expected and the automatic check, if any; sorted by priority (then id) by default.",
			Parameters:  append([]*huma.Param{priority, category}, window([]string{"priority", "id", "category"}, "priority")...),
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Requirements", RequirementList{}),
				"422": errs["422"]}}},
		{Method: get, Path: "/api/v1/partner/results", TenantScoped: true, Handler: h.results, Operation: op("results",
			"Each tenant's requirements with their status, paginated",
			"The requirements as each tenant's latest assessment found them: status (met, not_met, unknown, awaiting_evidence), the check's value "+
				"and target, the reason an unknown check has no value. gaps_only keeps the requirements not met; the default order is by priority.",
			append([]*huma.Param{tenantIDsParam(), enumParam("status", Statuses, "", "Only requirements of this status"), priority, category,
				{Name: "gaps_only", In: "query", Description: "Only requirements not met", Schema: &huma.Schema{Type: huma.TypeBoolean, Default: false}}},
				window(sortedKeys(ResultSorts), "priority")...),
			sdk.JSONResponse("Results", ResultList{}))},
		{Method: get, Path: "/api/v1/partner/maturity-trend", TenantScoped: true, Handler: h.trend, Operation: op("maturity-trend",
			"Each tenant's daily maturity",
			"One point per tenant and day with an assessment over the last `days` days (today included), oldest first."+maturityDoc,
			[]*huma.Param{tenantIDsParam(), intParam("days", 1, 365, 30, "Days up to today")}, sdk.JSONResponse("Daily maturity", []TrendPoint{}))},
	}
}

// intQuery reads a parameter the host has checked and defaulted.
func intQuery(r *http.Request, name string) int {
	n, _ := strconv.Atoi(r.URL.Query().Get(name))
	return n
}

func windowOf(r *http.Request) Window {
	q := r.URL.Query()
	return Window{Limit: intQuery(r, "limit"), Offset: intQuery(r, "offset"), SortBy: q.Get("sort_by"), Desc: q.Get("sort_order") == "desc"}
}

func (h *Handlers) programme(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	win := windowOf(r)
	snaps, total, err := h.Store.Latest(r.Context(), tenants, win)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	items, err := h.maturities(r, snaps)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	p := h.Catalogue.Programme
	sdk.WriteJSON(w, http.StatusOK, Programme{Partner: p.Partner, Description: p.Description, Deadline: p.Deadline.Format(time.DateOnly),
		DaysLeft: DaysLeft(p.Deadline, h.now()), TargetMaturity: p.TargetMaturity, MaxMaturity: catalogue.MaxMaturity,
		Requirements: len(h.Catalogue.Requirements), Items: items, Total: total, Limit: win.Limit, Offset: win.Offset})
}

// maturities are the snapshots with their tenants' names, measured
// against the programme's target as it stands now.
func (h *Handlers) maturities(r *http.Request, snaps []Snapshot) ([]TenantMaturity, error) {
	ids := make([]string, len(snaps))
	for i, s := range snaps {
		ids[i] = s.TenantID
	}
	names, err := pluginenv.TenantNames(r.Context(), h.Host, ids)
	if err != nil {
		return nil, err
	}
	out := make([]TenantMaturity, len(snaps))
	for i, s := range snaps {
		out[i] = TenantMaturity{TenantID: s.TenantID, TenantName: names[s.TenantID], Date: s.Day, Maturity: s.Maturity,
			MeetsTarget: s.Maturity >= h.Catalogue.Programme.TargetMaturity, Requirements: s.Requirements, Met: s.Met, NotMet: s.NotMet,
			Unknown: s.Unknown, AwaitingEvidence: s.AwaitingEvidence, Gaps: s.Gaps, CriticalGaps: s.CriticalGaps, CheckedAt: s.CheckedAt.UTC()}
	}
	return out, nil
}

func (h *Handlers) requirements(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	win := windowOf(r)
	items := []catalogue.Requirement{}
	for _, req := range h.Catalogue.Requirements {
		if (q.Get("priority") == "" || string(req.Priority) == q.Get("priority")) && (q.Get("category") == "" || req.Category == q.Get("category")) {
			items = append(items, req)
		}
	}
	slices.SortStableFunc(items, func(a, b catalogue.Requirement) int {
		c := 0
		switch win.SortBy {
		case "id":
			c = strings.Compare(a.ID, b.ID)
		case "category":
			c = strings.Compare(a.Category, b.Category)
		default:
			c = cmp.Compare(a.Priority.Rank(), b.Priority.Rank())
		}
		if win.Desc {
			c = -c
		}
		return cmp.Or(c, strings.Compare(a.ID, b.ID))
	})
	total := len(items)
	items = items[min(win.Offset, total):min(win.Offset+win.Limit, total)]
	sdk.WriteJSON(w, http.StatusOK, RequirementList{Items: items, Total: total, Limit: win.Limit, Offset: win.Offset})
}

// resultFilter reads the results route's filters: the caller's tenants the
// request names, the status (gaps_only keeps the statuses but met), the
// priority and the category.
func (h *Handlers) resultFilter(r *http.Request) (ResultFilter, error) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		return ResultFilter{}, err
	}
	q := r.URL.Query()
	f := ResultFilter{Tenants: tenants, Priority: q.Get("priority"), Category: q.Get("category")}
	for _, req := range h.Catalogue.Requirements {
		f.Requirements = append(f.Requirements, req.ID)
	}
	if s := q.Get("status"); s != "" {
		f.Statuses = []string{s}
	}
	if gaps, _ := strconv.ParseBool(q.Get("gaps_only")); gaps {
		if len(f.Statuses) == 0 {
			f.Statuses = Statuses
		}
		f.Statuses = slices.DeleteFunc(slices.Clone(f.Statuses), func(s string) bool { return s == StatusMet })
		if len(f.Statuses) == 0 {
			// status=met with gaps_only asks for nothing.
			f.Requirements = nil
		}
	}
	return f, nil
}

func (h *Handlers) results(w http.ResponseWriter, r *http.Request) {
	f, err := h.resultFilter(r)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	win := windowOf(r)
	rows, total, err := h.Store.Results(r.Context(), f, win)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, ResultList{Items: h.Items(rows), Total: total, Limit: win.Limit, Offset: win.Offset})
}

// Items are result rows with their requirements' titles and expected
// evidence from the catalogue.
func (h *Handlers) Items(rows []ResultRow) []ResultItem {
	out := make([]ResultItem, len(rows))
	for i, row := range rows {
		req, _ := h.Catalogue.Requirement(row.RequirementID)
		out[i] = ResultItem{TenantID: row.TenantID, Date: row.Day, RequirementID: row.RequirementID, Title: req.Title, Category: row.Category,
			Priority: row.Priority, Status: row.Status, CheckStatus: row.CheckStatus, Metric: row.Metric, Framework: row.Framework,
			Value: row.Value, Target: row.Target, Reason: row.Reason, EvidenceStatus: row.EvidenceStatus, Evidence: req.Evidence}
	}
	return out
}

func (h *Handlers) trend(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	from := h.now().AddDate(0, 0, 1-intQuery(r, "days")).Format(time.DateOnly)
	snaps, err := h.Store.Trend(r.Context(), tenants, from)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	ids := make([]string, len(snaps))
	for i, s := range snaps {
		ids[i] = s.TenantID
	}
	names, err := pluginenv.TenantNames(r.Context(), h.Host, ids)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out := make([]TrendPoint, len(snaps))
	for i, s := range snaps {
		out[i] = TrendPoint{Date: s.Day, TenantID: s.TenantID, TenantName: names[s.TenantID], Maturity: s.Maturity, TargetMaturity: s.TargetMaturity,
			Met: s.Met, Gaps: s.Gaps, DaysLeft: s.DaysLeft}
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}
