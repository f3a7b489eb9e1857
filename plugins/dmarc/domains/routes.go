package domains

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/dmarc/posture"
	"github.com/stewardhq/steward/sdk"
)

// Handlers serves the posture reads and the admins' domain writes.
type Handlers struct {
	Store *Store
	// Host names the tenants and keeps the audit log.
	Host *sdk.Host
	// Selectors are the DKIM selectors every domain is checked for.
	Selectors []string
	// Now is the clock the history and events windows end at; nil is
	// time.Now.
	Now func() time.Time
}

func (h *Handlers) now() time.Time {
	if h.Now != nil {
		return h.Now().UTC()
	}
	return time.Now().UTC()
}

const (
	tag        = "dmarc"
	domainsAPI = "/api/v1/dmarc/domains"
)

// Grades are the grades a check gives, best first.
var Grades = []string{"A", "B", "C", "D", "F"}

// Severities are the severities of findings and events, worst first.
var Severities = []string{posture.SeverityCritical, posture.SeverityHigh, posture.SeverityMedium, posture.SeverityLow, posture.SeverityInfo}

// FindingItem is a problem a check found.
type FindingItem struct {
	Code     string `json:"code"`
	Severity string `json:"severity" enum:"critical,high,medium,low,info"`
	Message  string `json:"message"`
}

// DomainItem is a watched domain with its latest posture.
type DomainItem struct {
	ID         string `json:"id" doc:"The domain's id in Steward"`
	TenantID   string `json:"tenant_id"`
	TenantName string `json:"tenant_name"`
	Domain     string `json:"domain" doc:"Lower-case, internationalized names in their A-label (xn--) form"`
	Source     string `json:"source" enum:"graph,admin" doc:"graph: a verified domain of the tenant's directory; admin: added by an admin"`
	IsDefault  bool   `json:"is_default" doc:"The directory's default domain"`
	// Selectors are the domain's own DKIM selectors.
	Selectors   []string      `json:"dkim_selectors" doc:"The domain's own DKIM selectors, checked besides the configured ones"`
	CheckedAt   *time.Time    `json:"checked_at" doc:"The latest check; null before one"`
	Score       *int          `json:"score" doc:"0-100; null before a check; a lower bound when dns_error is set"`
	Grade       *string       `json:"grade" doc:"A (best) to F; null before a check"`
	DMARCPolicy *string       `json:"dmarc_policy" doc:"none, quarantine or reject, as last known; empty without a DMARC record; null while DNS never answered for it"`
	SPFLookups  *int          `json:"spf_lookups" doc:"DNS lookups SPF evaluation takes (RFC 7208 allows 10), as last known"`
	DKIMPresent *int          `json:"dkim_present" doc:"Selectors with a usable DKIM key, as last known"`
	DNSError    string        `json:"dns_error" doc:"The lookups of the latest check DNS failed to answer (a DNS failure, not a missing record); empty when it answered all"`
	Findings    []FindingItem `json:"findings" doc:"The problems of the check at checked_at"`
}

// DomainList is a page of domains.
type DomainList struct {
	Items  []DomainItem `json:"items"`
	Total  int          `json:"total"`
	Limit  int          `json:"limit"`
	Offset int          `json:"offset"`
}

// DomainDetail is a domain with the whole of its latest check.
type DomainDetail struct {
	DomainItem
	CheckedSelectors []string        `json:"checked_selectors" doc:"The DKIM selectors the next check asks for: the configured ones, then the domain's own"`
	Posture          *posture.Result `json:"posture" doc:"DMARC, SPF, DKIM and MX as read and judged at checked_at, a part DNS failed for as last known; null before a check"`
}

// HistoryPoint is one check of a domain.
type HistoryPoint struct {
	CheckedAt   time.Time `json:"checked_at"`
	Score       *int      `json:"score" doc:"A lower bound when dns_error is set"`
	Grade       *string   `json:"grade"`
	DMARCPolicy *string   `json:"dmarc_policy"`
	SPFLookups  *int      `json:"spf_lookups"`
	DKIMPresent *int      `json:"dkim_present"`
	DNSError    string    `json:"dns_error"`
}

// History is a domain's checks over a window.
type History struct {
	DomainID string         `json:"domain_id"`
	Domain   string         `json:"domain"`
	From     time.Time      `json:"from"`
	Points   []HistoryPoint `json:"points" doc:"Oldest first"`
}

// EventItem is a weakening a check found.
type EventItem struct {
	ID         int64     `json:"id"`
	TenantID   string    `json:"tenant_id"`
	DomainID   string    `json:"domain_id" doc:"The domain's id; it may be deleted since"`
	Domain     string    `json:"domain"`
	Code       string    `json:"code"`
	Severity   string    `json:"severity" enum:"critical,high,medium,low,info"`
	Message    string    `json:"message"`
	OccurredAt time.Time `json:"occurred_at"`
}

// EventList is a page of events.
type EventList struct {
	Items  []EventItem `json:"items"`
	Total  int         `json:"total"`
	Limit  int         `json:"limit"`
	Offset int         `json:"offset"`
}

// Figures are posture figures over a set of domains.
type Figures struct {
	Domains       int64            `json:"domains"`
	Checked       int64            `json:"checked" doc:"Domains checked at least once; the figures below are of these"`
	AverageScore  *float64         `json:"average_score" doc:"Two decimals; null without checked domains"`
	ByGrade       map[string]int64 `json:"by_grade" doc:"Checked domains by grade, every grade listed"`
	Reject        int64            `json:"p_reject" doc:"Domains whose DMARC policy is reject"`
	Quarantine    int64            `json:"p_quarantine"`
	NoEnforcement int64            `json:"no_enforcement" doc:"Checked domains without a DMARC policy that enforces (none, or no record)"`
	WithDKIM      int64            `json:"with_dkim" doc:"Domains with at least one usable DKIM key"`
	DKIMCoverage  *float64         `json:"dkim_coverage_percentage" doc:"with_dkim of checked in percent, two decimals; null without checked domains"`
	DNSErrors     int64            `json:"dns_errors" doc:"Domains whose latest check had lookups DNS failed to answer"`
}

// TenantFiguresItem is one tenant's figures.
type TenantFiguresItem struct {
	TenantID   string `json:"tenant_id"`
	TenantName string `json:"tenant_name"`
	Figures
}

// Summary is the posture across the tenants.
type Summary struct {
	Figures
	Tenants []TenantFiguresItem `json:"tenants" doc:"Each tenant with domains, by id"`
}

func intPtr(n int) *int { return &n }

func float(v float64) *float64 { return &v }

// percent is part of whole in percent to two decimals; nil when whole is
// zero.
func percent(part, whole int64) *float64 {
	if whole == 0 {
		return nil
	}
	return float(math.Round(float64(part)*10000/float64(whole)) / 100)
}

func intParam(name string, lo, hi float64, def any, doc string) *huma.Param {
	s := &huma.Schema{Type: huma.TypeInteger, Minimum: float(lo), Maximum: float(hi)}
	if def != nil {
		s.Default = def
	}
	return &huma.Param{Name: name, In: "query", Description: doc, Schema: s}
}

func tenantIDsParam() *huma.Param {
	return &huma.Param{Name: "tenant_ids", In: "query",
		Description: "Tenants to include (repeated or comma-separated); all the caller's tenants when absent. A tenant the caller may not see is a 403.",
		Schema:      &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}}}
}

func enumParam(name string, values []string, def string, doc string) *huma.Param {
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

func pageParams() []*huma.Param {
	return []*huma.Param{intParam("limit", 1, 500, 50, "Page size"), intParam("offset", 0, math.MaxInt32, 0, "Items to skip")}
}

var domainIDParam = &huma.Param{Name: "domain_id", In: "path", Required: true, Description: "The domain's id",
	Schema: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}}

func body(desc string, props map[string]*huma.Schema, required ...string) *huma.RequestBody {
	return &huma.RequestBody{Description: desc, Required: true, Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{
		Type: huma.TypeObject, Properties: props, Required: required, AdditionalProperties: false}}}}
}

func selectorsSchema() *huma.Schema {
	return &huma.Schema{Type: huma.TypeArray, MaxItems: intPtr(MaxSelectors), Description: "DKIM selectors, e.g. s1 or google",
		Items: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(maxSelectorLen)}}
}

// Routes declares the routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	op := func(id, summary, doc string, params []*huma.Param, responses map[string]*huma.Response) *huma.Operation {
		return &huma.Operation{OperationID: "dmarc-" + id, Tags: []string{tag}, Summary: summary, Description: doc, Parameters: params, Responses: responses}
	}
	notFound := &huma.Response{Description: "No such domain, or one of a tenant the caller may not see"}
	invalid := &huma.Response{Description: "The body is invalid; errors name each bad field as body.<field>"}
	listParams := append([]*huma.Param{tenantIDsParam()}, pageParams()...)
	listParams = append(listParams,
		enumParam("sort_by", []string{"score", "domain", "checked_at"}, "score", "Order; domains not checked yet come last"),
		enumParam("sort_order", []string{"asc", "desc"}, "asc", ""),
		enumParam("grade", Grades, "", "Only domains of this grade"),
		intParam("min_score", 0, 100, nil, "Only domains scoring at least this"),
		intParam("max_score", 0, 100, nil, "Only domains scoring at most this; not below min_score"),
		&huma.Param{Name: "problem", In: "query", Description: "Only domains whose latest check found a problem of this code, e.g. dmarc_policy_none",
			Schema: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64), Pattern: "^[a-z0-9_.-]+$"}},
		enumParam("source", []string{SourceGraph, SourceAdmin}, "", "Only the directory's domains, or only those admins added"))
	return []sdk.Route{
		{Method: http.MethodGet, Path: domainsAPI, TenantScoped: true, Handler: h.list, Operation: op("domains",
			"Domains with their mail-authentication posture, paginated",
			"Each watched domain with its latest check: score, grade, DMARC policy, SPF lookups, DKIM keys present and findings. "+
				"A lookup DNS failed to answer is named in dns_error and never read as a missing record: its part keeps what was last known.",
			listParams, map[string]*huma.Response{"200": sdk.JSONResponse("Domains", DomainList{})})},
		{Method: http.MethodGet, Path: domainsAPI + "/{domain_id}", Handler: h.detail, Operation: op("domain",
			"One domain's posture with its findings and records", "",
			[]*huma.Param{domainIDParam}, map[string]*huma.Response{"200": sdk.JSONResponse("The domain", DomainDetail{}), "404": notFound})},
		{Method: http.MethodGet, Path: domainsAPI + "/{domain_id}/history", Handler: h.history, Operation: op("domain-history",
			"One domain's posture over time", "Every check of the last `days` days, oldest first, each with the lookups DNS failed to answer.",
			[]*huma.Param{domainIDParam, intParam("days", 1, 730, 90, "Days up to now")},
			map[string]*huma.Response{"200": sdk.JSONResponse("The checks", History{}), "404": notFound})},
		{Method: http.MethodGet, Path: "/api/v1/dmarc/events", TenantScoped: true, Handler: h.events, Operation: op("events",
			"Posture weakenings, newest first, paginated",
			"What a check found weaker than the check before: a policy relaxed, a DKIM key removed, SPF over its lookup limit and the like. "+
				"Each raised a sync alert when found.",
			append(append([]*huma.Param{tenantIDsParam()}, pageParams()...),
				&huma.Param{Name: "domain_id", In: "query", Description: "Only this domain's", Schema: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}},
				enumParam("severity", Severities, "", "Only events of this severity"),
				intParam("days", 1, 3650, 90, "Days up to now")),
			map[string]*huma.Response{"200": sdk.JSONResponse("Events", EventList{})})},
		{Method: http.MethodGet, Path: "/api/v1/dmarc/summary", TenantScoped: true, Handler: h.summary, Operation: op("summary",
			"Mail-authentication posture across the tenants",
			"Domains, checked domains by grade, the average score, domains at p=reject and DKIM coverage, over all the tenants asked for and per tenant.",
			[]*huma.Param{tenantIDsParam()}, map[string]*huma.Response{"200": sdk.JSONResponse("Summary", Summary{})})},
		{Method: http.MethodPost, Path: domainsAPI, Auth: sdk.AuthAdmin, Handler: h.add, Operation: &huma.Operation{
			OperationID: "dmarc-domain-add", Tags: []string{tag}, Summary: "Watch a domain the directory does not list",
			Description: "The domain is checked from the next posture sync on. A Unicode name is stored in its A-label (xn--) form.",
			RequestBody: body("The domain", map[string]*huma.Schema{
				"tenant_id":      {Type: huma.TypeString, MaxLength: intPtr(64), Description: "The tenant the domain belongs to"},
				"domain":         {Type: huma.TypeString, MaxLength: intPtr(maxDomainInput), Description: "e.g. mail.example.com"},
				"dkim_selectors": selectorsSchema(),
			}, "tenant_id", "domain"),
			Responses: map[string]*huma.Response{"201": sdk.JSONResponse("The domain", DomainItem{}),
				"409": {Description: "The domain is watched already, for this tenant or another"}, "422": invalid}}},
		{Method: http.MethodDelete, Path: domainsAPI + "/{domain_id}", Auth: sdk.AuthAdmin, Handler: h.delete, Operation: &huma.Operation{
			OperationID: "dmarc-domain-delete", Tags: []string{tag}, Summary: "Stop watching a domain an admin added",
			Description: "Its history goes with it; its events stay. A verified domain of the directory cannot be deleted: it follows the directory.",
			Parameters:  []*huma.Param{domainIDParam},
			Responses: map[string]*huma.Response{"204": {Description: "Deleted"}, "404": notFound,
				"409": {Description: "The domain is a verified domain of the tenant's directory"}}}},
		{Method: http.MethodPut, Path: domainsAPI + "/{domain_id}/selectors", Auth: sdk.AuthAdmin, Handler: h.setSelectors, Operation: &huma.Operation{
			OperationID: "dmarc-domain-selectors", Tags: []string{tag}, Summary: "Set a domain's own DKIM selectors",
			Description: "They replace the domain's own selectors and are checked besides the configured ones from the next posture sync on.",
			Parameters:  []*huma.Param{domainIDParam},
			RequestBody: body("The selectors", map[string]*huma.Schema{"dkim_selectors": selectorsSchema()}, "dkim_selectors"),
			Responses:   map[string]*huma.Response{"200": sdk.JSONResponse("The domain", DomainItem{}), "404": notFound, "422": invalid}}},
	}
}

// intQuery reads an integer parameter the host has checked; ok is false
// when it is absent.
func intQuery(r *http.Request, name string) (int, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// names maps tenant ids to their names.
func (h *Handlers) names(ctx context.Context, ids []string) (map[string]string, error) {
	return pluginenv.TenantNames(ctx, h.Host, ids)
}

// item is a domain as the API shows it.
func item(d Domain, name string, findings []Finding) DomainItem {
	out := DomainItem{ID: d.ID, TenantID: d.TenantID, TenantName: name, Domain: d.Domain, Source: d.Source, IsDefault: d.IsDefault,
		Selectors: d.SelectorList(), CheckedAt: timePtr(d.CheckedAt), Score: d.Score, Grade: d.Grade, DMARCPolicy: d.DMARCPolicy,
		SPFLookups: d.SPFLookups, DKIMPresent: d.DKIMPresent, DNSError: d.DNSError,
		Findings: make([]FindingItem, len(findings))}
	for i, f := range findings {
		out.Findings[i] = FindingItem{Code: f.Code, Severity: f.Severity, Message: f.Message}
	}
	return out
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// filter reads a list's filter from a request the host has checked.
func filter(r *http.Request) (Filter, error) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		return Filter{}, err
	}
	q := r.URL.Query()
	f := Filter{TenantIDs: tenants, Grade: q.Get("grade"), Problem: q.Get("problem"), Source: q.Get("source"),
		SortBy: q.Get("sort_by"), Desc: q.Get("sort_order") == "desc"}
	f.Limit, _ = intQuery(r, "limit")
	f.Offset, _ = intQuery(r, "offset")
	if n, ok := intQuery(r, "min_score"); ok {
		f.MinScore = &n
	}
	if n, ok := intQuery(r, "max_score"); ok {
		f.MaxScore = &n
	}
	if f.MinScore != nil && f.MaxScore != nil && *f.MinScore > *f.MaxScore {
		return Filter{}, sdk.Invalid("query.max_score", "must not be below min_score (%d)", *f.MinScore)
	}
	return f, nil
}

func (h *Handlers) list(w http.ResponseWriter, r *http.Request) {
	f, err := filter(r)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out, err := h.domainPage(r.Context(), f)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

// domainPage is a page of domains with their findings and tenants' names.
func (h *Handlers) domainPage(ctx context.Context, f Filter) (DomainList, error) {
	rows, total, err := h.Store.List(ctx, f)
	if err != nil {
		return DomainList{}, err
	}
	ids, tenants := make([]string, len(rows)), make([]string, len(rows))
	for i, d := range rows {
		ids[i], tenants[i] = d.ID, d.TenantID
	}
	findings, err := h.Store.FindingsOf(ctx, ids)
	if err != nil {
		return DomainList{}, err
	}
	names, err := h.names(ctx, tenants)
	if err != nil {
		return DomainList{}, err
	}
	out := DomainList{Items: make([]DomainItem, len(rows)), Total: total, Limit: f.Limit, Offset: f.Offset}
	for i, d := range rows {
		out.Items[i] = item(d, names[d.TenantID], findings[d.ID])
	}
	return out, nil
}

// find reads the domain the path names among the caller's tenants, or
// answers 404.
func (h *Handlers) find(w http.ResponseWriter, r *http.Request) *Domain {
	d, err := h.Store.Get(r.Context(), r.PathValue("domain_id"), sdk.PrincipalFrom(r.Context()).TenantIDs)
	if err != nil {
		sdk.WriteError(w, err)
		return nil
	}
	if d == nil {
		sdk.WriteError(w, sdk.NotFound("no such domain"))
	}
	return d
}

// itemOf is one domain as the API shows it, with its findings and its
// tenant's name.
func (h *Handlers) itemOf(ctx context.Context, d *Domain) (DomainItem, error) {
	findings, err := h.Store.FindingsOf(ctx, []string{d.ID})
	if err != nil {
		return DomainItem{}, err
	}
	names, err := h.names(ctx, []string{d.TenantID})
	if err != nil {
		return DomainItem{}, err
	}
	return item(*d, names[d.TenantID], findings[d.ID]), nil
}

func (h *Handlers) detail(w http.ResponseWriter, r *http.Request) {
	d := h.find(w, r)
	if d == nil {
		return
	}
	it, err := h.itemOf(r.Context(), d)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out := DomainDetail{DomainItem: it, CheckedSelectors: checkedSelectors(h.Selectors, *d)}
	if d.Result != nil {
		var res posture.Result
		if err := json.Unmarshal([]byte(*d.Result), &res); err != nil {
			sdk.WriteError(w, err)
			return
		}
		out.Posture = &res
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) history(w http.ResponseWriter, r *http.Request) {
	d := h.find(w, r)
	if d == nil {
		return
	}
	days, _ := intQuery(r, "days")
	from := h.now().AddDate(0, 0, -days)
	rows, err := h.Store.History(r.Context(), d.ID, from)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out := History{DomainID: d.ID, Domain: d.Domain, From: from, Points: make([]HistoryPoint, len(rows))}
	for i, p := range rows {
		out.Points[i] = HistoryPoint{CheckedAt: p.CheckedAt.UTC(), Score: p.Score, Grade: p.Grade, DMARCPolicy: p.DMARCPolicy,
			SPFLookups: p.SPFLookups, DKIMPresent: p.DKIMPresent, DNSError: p.DNSError}
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) events(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	q := r.URL.Query()
	f := EventFilter{TenantIDs: tenants, DomainID: q.Get("domain_id"), Severity: q.Get("severity")}
	f.Limit, _ = intQuery(r, "limit")
	f.Offset, _ = intQuery(r, "offset")
	days, _ := intQuery(r, "days")
	f.Since = h.now().AddDate(0, 0, -days)
	rows, total, err := h.Store.Events(r.Context(), f)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out := EventList{Items: make([]EventItem, len(rows)), Total: total, Limit: f.Limit, Offset: f.Offset}
	for i, e := range rows {
		out.Items[i] = EventItem{ID: e.ID, TenantID: e.TenantID, DomainID: e.DomainID, Domain: e.Domain, Code: e.Code, Severity: e.Severity,
			Message: e.Message, OccurredAt: e.OccurredAt.UTC()}
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

// figuresOver adds up tenants' figures.
func figuresOver(rows []TenantFigures) Figures {
	out := Figures{ByGrade: map[string]int64{}}
	for _, g := range Grades {
		out.ByGrade[g] = 0
	}
	var scores int64
	for _, t := range rows {
		out.Domains += t.Domains
		out.Checked += t.Checked
		scores += t.ScoreSum
		out.Reject += t.Reject
		out.Quarantine += t.Quarantine
		out.NoEnforcement += t.NoPolicy
		out.WithDKIM += t.WithDKIM
		out.DNSErrors += t.DNSErrors
		for g, n := range t.Grades {
			out.ByGrade[g] += n
		}
	}
	if out.Checked > 0 {
		out.AverageScore = float(math.Round(float64(scores)*100/float64(out.Checked)) / 100)
	}
	out.DKIMCoverage = percent(out.WithDKIM, out.Checked)
	return out
}

// summaryOf is the posture across the tenants' domains.
func (h *Handlers) summaryOf(ctx context.Context, tenants []string) (Summary, error) {
	rows, err := h.Store.Figures(ctx, tenants)
	if err != nil {
		return Summary{}, err
	}
	ids := make([]string, len(rows))
	for i, t := range rows {
		ids[i] = t.TenantID
	}
	names, err := h.names(ctx, ids)
	if err != nil {
		return Summary{}, err
	}
	out := Summary{Figures: figuresOver(rows), Tenants: make([]TenantFiguresItem, len(rows))}
	for i, t := range rows {
		out.Tenants[i] = TenantFiguresItem{TenantID: t.TenantID, TenantName: names[t.TenantID], Figures: figuresOver(rows[i : i+1])}
	}
	return out, nil
}

func (h *Handlers) summary(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out, err := h.summaryOf(r.Context(), tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

// checkedSelectors are the selectors a check of d asks for: the
// configured ones, then the domain's own.
func checkedSelectors(configured []string, d Domain) []string {
	out := slices.Clone(configured)
	for _, s := range d.SelectorList() {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func (h *Handlers) audit(ctx context.Context, action string, d *Domain, details map[string]any) {
	_ = h.Host.Audit(ctx, sdk.AuditEntry{Action: action, Status: "success", TenantID: d.TenantID, ResourceType: "dmarc_domain",
		ResourceID: d.ID, Details: details})
}

func (h *Handlers) add(w http.ResponseWriter, r *http.Request) {
	f, p, err := readObject(r, "tenant_id", "domain", "dkim_selectors")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	tenantID := p.str(f, "tenant_id")
	if tenantID != "" && !sdk.PrincipalFrom(r.Context()).CanSee(tenantID) {
		p.Add("body.tenant_id", "is not a tenant")
	}
	name := p.str(f, "domain")
	var domain string
	if name != "" {
		if domain, err = NormalizeDomain(name); err != nil {
			p.Add("body.domain", "%v", err)
		}
	}
	selectors := []string{}
	if raw, ok := f["dkim_selectors"]; ok {
		selectors = normalizeSelectors("body.dkim_selectors", raw, p)
	}
	if err := p.Err(); err != nil {
		sdk.WriteError(w, err)
		return
	}
	d := &Domain{TenantID: tenantID, Domain: domain, Selectors: joinSelectors(selectors), CreatedBy: sdk.PrincipalFrom(r.Context()).ID, CreatedAt: h.now()}
	if err := h.Store.Add(r.Context(), d); err != nil {
		if errors.Is(err, ErrDuplicate) {
			err = sdk.Conflict(domain + ": " + err.Error())
		}
		sdk.WriteError(w, err)
		return
	}
	h.audit(r.Context(), "dmarc_domain.create.success", d, map[string]any{"domain": d.Domain, "dkim_selectors": selectors})
	it, err := h.itemOf(r.Context(), d)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusCreated, it)
}

func (h *Handlers) delete(w http.ResponseWriter, r *http.Request) {
	d := h.find(w, r)
	if d == nil {
		return
	}
	deleted, err := h.Store.Delete(r.Context(), d)
	switch {
	case errors.Is(err, ErrFromGraph):
		sdk.WriteError(w, sdk.Conflict(d.Domain+": "+err.Error()+"; it is watched while the directory lists it"))
		return
	case err != nil:
		sdk.WriteError(w, err)
		return
	case !deleted:
		sdk.WriteError(w, sdk.NotFound("no such domain"))
		return
	}
	h.audit(r.Context(), "dmarc_domain.delete.success", d, map[string]any{"domain": d.Domain})
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handlers) setSelectors(w http.ResponseWriter, r *http.Request) {
	d := h.find(w, r)
	if d == nil {
		return
	}
	f, p, err := readObject(r, "dkim_selectors")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	var selectors []string
	if raw, ok := f["dkim_selectors"]; ok {
		selectors = normalizeSelectors("body.dkim_selectors", raw, p)
	} else {
		p.Add("body.dkim_selectors", "is required")
	}
	if err := p.Err(); err != nil {
		sdk.WriteError(w, err)
		return
	}
	found, err := h.Store.SetSelectors(r.Context(), d.ID, selectors)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if !found {
		sdk.WriteError(w, sdk.NotFound("no such domain"))
		return
	}
	d.Selectors = joinSelectors(selectors)
	h.audit(r.Context(), "dmarc_domain.selectors.success", d, map[string]any{"domain": d.Domain, "dkim_selectors": selectors})
	it, err := h.itemOf(r.Context(), d)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	sdk.WriteJSON(w, http.StatusOK, it)
}
