package domains

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/dmarc/posture"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/jsonbody"
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

// FindingItem is a problem a check found.
type FindingItem struct {
	Code     string `json:"code"`
	Severity string `json:"severity" enum:"critical,high,medium,low,info"`
	Message  string `json:"message"`
	Fix      string `json:"fix" doc:"What to change to resolve it; empty where the message says"`
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
	Posture          *posture.Result `json:"posture" doc:"DMARC, SPF, DKIM, MX, MTA-STS (with its policy file), TLS-RPT, BIMI and DNSSEC as read and judged at checked_at, a part DNS failed for as last known; null before a check"`
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

func float(v float64) *float64 { return &v }

// percent is part of whole in percent to two decimals; nil when whole is
// zero.
func percent(part, whole int64) *float64 {
	if whole == 0 {
		return nil
	}
	return float(math.Round(float64(part)*10000/float64(whole)) / 100)
}

// Page is a list's page. The bounds in the tags are the API's: keep
// them in step with the store's.
type Page struct {
	Limit  int `query:"limit" minimum:"1" maximum:"500" default:"50" doc:"Page size"`
	Offset int `query:"offset" minimum:"0" maximum:"2147483647" default:"0" doc:"Items to skip"`
}

type listIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	Page
	SortBy    string            `query:"sort_by" enum:"score,domain,checked_at" default:"score" doc:"Order; domains not checked yet come last"`
	SortOrder string            `query:"sort_order" enum:"asc,desc" default:"asc"`
	Grade     string            `query:"grade" enum:"A,B,C,D,F" doc:"Only domains of this grade"`
	MinScore  sdk.Optional[int] `query:"min_score" minimum:"0" maximum:"100" doc:"Only domains scoring at least this"`
	MaxScore  sdk.Optional[int] `query:"max_score" minimum:"0" maximum:"100" doc:"Only domains scoring at most this; not below min_score"`
	Problem   string            `query:"problem" maxLength:"64" pattern:"^[a-z0-9_.-]+$" doc:"Only domains whose latest check found a problem of this code, e.g. dmarc_policy_none"`
	Source    string            `query:"source" enum:"graph,admin" doc:"Only the directory's domains, or only those admins added"`
}

// DomainPath names a domain by its id in the path; a domain of a tenant
// the caller may not see is 404.
type DomainPath struct {
	DomainID string `path:"domain_id" maxLength:"64" doc:"The domain's id"`
}

type historyIn struct {
	DomainPath
	Days int `query:"days" minimum:"1" maximum:"730" default:"90" doc:"Days up to now"`
}

type eventsIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	Page
	DomainID string `query:"domain_id" maxLength:"64" doc:"Only this domain's"`
	Severity string `query:"severity" enum:"critical,high,medium,low,info" doc:"Only events of this severity"`
	Days     int    `query:"days" minimum:"1" maximum:"3650" default:"90" doc:"Days up to now"`
}

type summaryIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
}

// The bodies' bounds are MaxSelectors, maxSelectorLen and maxDomainInput.
type addIn struct {
	Body struct {
		TenantID  sdk.TenantID `json:"tenant_id" doc:"The tenant the domain belongs to"`
		Domain    string       `json:"domain" maxLength:"253" doc:"e.g. mail.example.com"`
		Selectors []string     `json:"dkim_selectors,omitempty" maxItems:"10" maxLength:"63" doc:"DKIM selectors, e.g. s1 or google"`
	}
}

type selectorsIn struct {
	DomainPath
	Body struct {
		Selectors []string `json:"dkim_selectors" maxItems:"10" maxLength:"63" doc:"DKIM selectors, e.g. s1 or google"`
	}
}

// Routes declares the routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	op := func(id, summary, doc string, errs ...int) sdk.Op {
		return sdk.Op{ID: "dmarc-" + id, Tags: []string{tag}, Summary: summary, Description: doc, Errors: errs}
	}
	admin := func(o sdk.Op, status int) sdk.Op { o.Auth, o.Status = sdk.AuthAdmin, status; return o }
	return []sdk.Route{
		sdk.Get(domainsAPI, op("domains", "Domains with their mail-authentication posture, paginated",
			"Each watched domain with its latest check: score, grade, DMARC policy, SPF lookups, DKIM keys present and findings. "+
				"A lookup DNS failed to answer is named in dns_error and never read as a missing record: its part keeps what was last known."), h.list),
		sdk.Get(domainsAPI+"/{domain_id}", op("domain", "One domain's posture with its findings and records", "", http.StatusNotFound), h.detail),
		sdk.Get(domainsAPI+"/{domain_id}/history", op("domain-history", "One domain's posture over time",
			"Every check of the last `days` days, oldest first, each with the lookups DNS failed to answer.", http.StatusNotFound), h.history),
		sdk.Get("/api/v1/dmarc/events", op("events", "Posture weakenings, newest first, paginated",
			"What a check found weaker than the check before: a policy relaxed, a DKIM key removed, SPF over its lookup limit and the like. "+
				"Each raised a sync alert when found."), h.events),
		sdk.Get("/api/v1/dmarc/summary", op("summary", "Mail-authentication posture across the tenants",
			"Domains, checked domains by grade, the average score, domains at p=reject and DKIM coverage, over all the tenants asked for and per tenant."), h.summary),
		sdk.Post(domainsAPI, admin(op("domain-add", "Watch a domain the directory does not list",
			"The domain is checked from the next posture sync on. A Unicode name is stored in its A-label (xn--) form. "+
				"A domain watched already, for this tenant or another, is 409.", http.StatusConflict), http.StatusCreated), h.add),
		sdk.Delete(domainsAPI+"/{domain_id}", admin(op("domain-delete", "Stop watching a domain an admin added",
			"Its history goes with it; its events stay. A verified domain of the directory cannot be deleted (409): it follows the directory.",
			http.StatusNotFound, http.StatusConflict), 0), h.delete),
		sdk.Put(domainsAPI+"/{domain_id}/selectors", admin(op("domain-selectors", "Set a domain's own DKIM selectors",
			"They replace the domain's own selectors and are checked besides the configured ones from the next posture sync on.",
			http.StatusNotFound), 0), h.setSelectors),
	}
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
		out.Findings[i] = FindingItem{Code: f.Code, Severity: f.Severity, Message: f.Message, Fix: f.Fix}
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

func (h *Handlers) list(ctx context.Context, in *listIn) (*DomainList, error) {
	f := Filter{TenantIDs: in.Tenants, Grade: in.Grade, Problem: in.Problem, Source: in.Source, SortBy: in.SortBy, Desc: in.SortOrder == "desc",
		MinScore: in.MinScore.Ptr(), MaxScore: in.MaxScore.Ptr(), Limit: in.Limit, Offset: in.Offset}
	if f.MinScore != nil && f.MaxScore != nil && *f.MinScore > *f.MaxScore {
		return nil, sdk.Invalid("query.max_score", "must not be below min_score (%d)", *f.MinScore)
	}
	out, err := h.domainPage(ctx, f)
	return &out, err
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
func (h *Handlers) find(ctx context.Context, in DomainPath) (*Domain, error) {
	d, err := h.Store.Get(ctx, in.DomainID, sdk.PrincipalFrom(ctx).TenantIDs)
	if err == nil && d == nil {
		err = sdk.NotFound("no such domain")
	}
	return d, err
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

func (h *Handlers) detail(ctx context.Context, in *DomainPath) (*DomainDetail, error) {
	d, err := h.find(ctx, *in)
	if err != nil {
		return nil, err
	}
	it, err := h.itemOf(ctx, d)
	if err != nil {
		return nil, err
	}
	out := &DomainDetail{DomainItem: it, CheckedSelectors: checkedSelectors(h.Selectors, *d)}
	if d.Result != nil {
		var res posture.Result
		if err := json.Unmarshal([]byte(*d.Result), &res); err != nil {
			return nil, err
		}
		out.Posture = &res
	}
	return out, nil
}

func (h *Handlers) history(ctx context.Context, in *historyIn) (*History, error) {
	d, err := h.find(ctx, in.DomainPath)
	if err != nil {
		return nil, err
	}
	from := h.now().AddDate(0, 0, -in.Days)
	rows, err := h.Store.History(ctx, d.ID, from)
	if err != nil {
		return nil, err
	}
	out := &History{DomainID: d.ID, Domain: d.Domain, From: from, Points: make([]HistoryPoint, len(rows))}
	for i, p := range rows {
		out.Points[i] = HistoryPoint{CheckedAt: p.CheckedAt.UTC(), Score: p.Score, Grade: p.Grade, DMARCPolicy: p.DMARCPolicy,
			SPFLookups: p.SPFLookups, DKIMPresent: p.DKIMPresent, DNSError: p.DNSError}
	}
	return out, nil
}

func (h *Handlers) events(ctx context.Context, in *eventsIn) (*EventList, error) {
	f := EventFilter{TenantIDs: in.Tenants, DomainID: in.DomainID, Severity: in.Severity, Since: h.now().AddDate(0, 0, -in.Days),
		Limit: in.Limit, Offset: in.Offset}
	rows, total, err := h.Store.Events(ctx, f)
	if err != nil {
		return nil, err
	}
	out := &EventList{Items: make([]EventItem, len(rows)), Total: total, Limit: f.Limit, Offset: f.Offset}
	for i, e := range rows {
		out.Items[i] = EventItem{ID: e.ID, TenantID: e.TenantID, DomainID: e.DomainID, Domain: e.Domain, Code: e.Code, Severity: e.Severity,
			Message: e.Message, OccurredAt: e.OccurredAt.UTC()}
	}
	return out, nil
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

func (h *Handlers) summary(ctx context.Context, in *summaryIn) (*Summary, error) {
	out, err := h.summaryOf(ctx, in.Tenants)
	return &out, err
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

func (h *Handlers) add(ctx context.Context, in *addIn) (*DomainItem, error) {
	var p jsonbody.Problems
	if in.Body.TenantID == "" {
		p.Add("body.tenant_id", "is required")
	}
	domain, err := NormalizeDomain(in.Body.Domain)
	if err != nil {
		p.Add("body.domain", "%v", err)
	}
	selectors := normalizeSelectors("body.dkim_selectors", in.Body.Selectors, &p)
	if err := p.Err(); err != nil {
		return nil, err
	}
	d := &Domain{TenantID: string(in.Body.TenantID), Domain: domain, Selectors: joinSelectors(selectors), CreatedBy: sdk.PrincipalFrom(ctx).ID, CreatedAt: h.now()}
	if err := h.Store.Add(ctx, d); err != nil {
		if errors.Is(err, ErrDuplicate) {
			err = sdk.Conflict(domain + ": " + err.Error())
		}
		return nil, err
	}
	h.audit(ctx, "dmarc_domain.create.success", d, map[string]any{"domain": d.Domain, "dkim_selectors": selectors})
	it, err := h.itemOf(ctx, d)
	return &it, err
}

func (h *Handlers) delete(ctx context.Context, in *DomainPath) (*sdk.Empty, error) {
	d, err := h.find(ctx, *in)
	if err != nil {
		return nil, err
	}
	deleted, err := h.Store.Delete(ctx, d)
	switch {
	case errors.Is(err, ErrFromGraph):
		return nil, sdk.Conflict(d.Domain + ": " + err.Error() + "; it is watched while the directory lists it")
	case err != nil:
		return nil, err
	case !deleted:
		return nil, sdk.NotFound("no such domain")
	}
	h.audit(ctx, "dmarc_domain.delete.success", d, map[string]any{"domain": d.Domain})
	return &sdk.Empty{}, nil
}

func (h *Handlers) setSelectors(ctx context.Context, in *selectorsIn) (*DomainItem, error) {
	d, err := h.find(ctx, in.DomainPath)
	if err != nil {
		return nil, err
	}
	var p jsonbody.Problems
	selectors := normalizeSelectors("body.dkim_selectors", in.Body.Selectors, &p)
	if err := p.Err(); err != nil {
		return nil, err
	}
	found, err := h.Store.SetSelectors(ctx, d.ID, selectors)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, sdk.NotFound("no such domain")
	}
	d.Selectors = joinSelectors(selectors)
	h.audit(ctx, "dmarc_domain.selectors.success", d, map[string]any{"domain": d.Domain, "dkim_selectors": selectors})
	it, err := h.itemOf(ctx, d)
	return &it, err
}
