package domains_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/dmarc/domains"
	"github.com/stewardhq/steward/sdk"
)

var (
	admin      = sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: []string{contoso.ID, fabrikam.ID}}
	contosoer  = sdk.Principal{ID: "uc", Kind: "user", TenantIDs: []string{contoso.ID}}
	fabrikamer = sdk.Principal{ID: "uf", Kind: "user", TenantIDs: []string{fabrikam.ID}}
)

func (f *fixture) call(t *testing.T, method, target, body string, p sdk.Principal) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp := f.harness.Do(req, p)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (f *fixture) get(t *testing.T, target string, p sdk.Principal, v any) {
	t.Helper()
	code, body := f.call(t, http.MethodGet, target, "", p)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", target, err, body)
	}
}

func domainNames(l domains.DomainList) []string {
	out := []string{}
	for _, d := range l.Items {
		out = append(out, d.Domain)
	}
	return out
}

// TestReads: the domain list with its filters, sort and pages, each
// caller seeing only its tenants' domains; one domain's detail and
// history, 404 for another tenant's; the events and the summary.
func TestReads(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, postureWorld())
		f.mustRun(t)

		var l domains.DomainList
		f.get(t, "/api/v1/dmarc/domains", admin, &l)
		// Weakest first, by name within a score.
		got := domainNames(l)
		if l.Total != 4 || l.Limit != 50 || got[len(got)-2] != "weak.example" || got[len(got)-1] != "strong.example" {
			t.Fatalf("domains by score %v (%d, limit %d)", got, l.Total, l.Limit)
		}
		byName := map[string]domains.DomainItem{}
		for _, d := range l.Items {
			byName[d.Domain] = d
		}
		if byName["missing.example"].TenantName != "Fabrikam" || byName["broken.example"].DNSError == "" || byName["broken.example"].DMARCPolicy != nil ||
			byName["strong.example"].CheckedAt == nil {
			t.Errorf("items %+v", l.Items)
		}
		if f := byName["missing.example"].Findings; len(f) == 0 || f[0].Code != "dmarc_missing" {
			t.Errorf("missing.example's findings %+v", f)
		}
		f.get(t, "/api/v1/dmarc/domains?sort_by=score&sort_order=desc&limit=2&offset=0", admin, &l)
		if got := domainNames(l); !slices.Equal(got, []string{"strong.example", "weak.example"}) || l.Total != 4 || l.Offset != 0 {
			t.Errorf("first page by score descending %v (%d)", got, l.Total)
		}
		f.get(t, "/api/v1/dmarc/domains?sort_by=domain&limit=2&offset=1", admin, &l)
		if got := domainNames(l); !slices.Equal(got, []string{"missing.example", "strong.example"}) || l.Offset != 1 {
			t.Errorf("second page by name %v", got)
		}
		f.get(t, "/api/v1/dmarc/domains?sort_by=domain", contosoer, &l)
		if got := domainNames(l); !slices.Equal(got, []string{"strong.example", "weak.example"}) {
			t.Errorf("contoso's user sees %v", got)
		}
		strong := f.domain(t, "strong.example")
		f.get(t, "/api/v1/dmarc/domains?grade="+*strong.Grade+"&min_score="+strconv.Itoa(*strong.Score)+"&max_score="+strconv.Itoa(*strong.Score), admin, &l)
		if got := domainNames(l); !slices.Equal(got, []string{"strong.example"}) {
			t.Errorf("grade and score of strong.example keep %v", got)
		}
		code := f.domain(t, "missing.example")
		var missingFindings domains.DomainDetail
		f.get(t, "/api/v1/dmarc/domains/"+code.ID, admin, &missingFindings)
		problem := missingFindings.Findings[0].Code
		f.get(t, "/api/v1/dmarc/domains?problem="+problem, admin, &l)
		if got := domainNames(l); !slices.Contains(got, "missing.example") || slices.Contains(got, "strong.example") {
			t.Errorf("domains with %s: %v", problem, got)
		}
		f.get(t, "/api/v1/dmarc/domains?source=admin", admin, &l)
		if l.Total != 0 {
			t.Errorf("domains admins added: %v", domainNames(l))
		}

		// One domain: its detail and history to its tenant's users, 404 to
		// another tenant's.
		var detail domains.DomainDetail
		f.get(t, "/api/v1/dmarc/domains/"+strong.ID, contosoer, &detail)
		if detail.Posture == nil || detail.Posture.Domain != "strong.example" || !slices.Equal(detail.CheckedSelectors, []string{"selector1", "selector2"}) {
			t.Errorf("strong.example's detail %+v", detail)
		}
		for _, path := range []string{"/api/v1/dmarc/domains/" + strong.ID, "/api/v1/dmarc/domains/" + strong.ID + "/history", "/api/v1/dmarc/domains/no-such-id"} {
			if code, body := f.call(t, http.MethodGet, path, "", fabrikamer); code != http.StatusNotFound || strings.Contains(string(body), "strong.example") {
				t.Errorf("fabrikam's user GET %s: %d %s", path, code, body)
			}
		}
		var h domains.History
		f.get(t, "/api/v1/dmarc/domains/"+strong.ID+"/history?days=1", contosoer, &h)
		if len(h.Points) != 1 || h.Points[0].Score == nil || *h.Points[0].Score != *strong.Score || h.Domain != "strong.example" {
			t.Errorf("history %+v", h)
		}

		var events domains.EventList
		f.get(t, "/api/v1/dmarc/events", admin, &events)
		if events.Total != 0 || len(events.Items) != 0 || events.Limit != 50 {
			t.Errorf("events %+v", events)
		}

		var sum domains.Summary
		f.get(t, "/api/v1/dmarc/summary", admin, &sum)
		if sum.Domains != 4 || sum.Checked != 4 || sum.Reject != 1 || sum.WithDKIM != 1 || sum.DNSErrors != 1 || len(sum.Tenants) != 2 ||
			sum.DKIMCoverage == nil || *sum.DKIMCoverage != 25 || sum.ByGrade["F"] < 1 {
			t.Errorf("summary %+v", sum)
		}
		f.get(t, "/api/v1/dmarc/summary?tenant_ids="+contoso.ID, admin, &sum)
		if sum.Domains != 2 || sum.Checked != 2 || len(sum.Tenants) != 1 || sum.Tenants[0].TenantName != "Contoso" || *sum.DKIMCoverage != 50 {
			t.Errorf("contoso's summary %+v", sum)
		}
		if code, body := f.call(t, http.MethodGet, "/api/v1/dmarc/summary?tenant_ids="+fabrikam.ID, "", contosoer); code != http.StatusForbidden {
			t.Errorf("contoso's user naming fabrikam: %d %s", code, body)
		}
	})
}

// problemOf decodes a problem answer.
func problemOf(t *testing.T, body []byte) sdk.Problem {
	t.Helper()
	var p sdk.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	return p
}

// TestBounds: every bound of a parameter and of a body is a 422 naming
// it.
func TestBounds(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, postureWorld())
		f.mustRun(t)
		strong := f.domain(t, "strong.example")
		long := strings.Repeat("a", 65)
		for target, loc := range map[string]string{
			"/api/v1/dmarc/domains?limit=0":                            "query.limit",
			"/api/v1/dmarc/domains?limit=501":                          "query.limit",
			"/api/v1/dmarc/domains?offset=-1":                          "query.offset",
			"/api/v1/dmarc/domains?sort_by=grade":                      "query.sort_by",
			"/api/v1/dmarc/domains?sort_order=up":                      "query.sort_order",
			"/api/v1/dmarc/domains?grade=E":                            "query.grade",
			"/api/v1/dmarc/domains?min_score=-1":                       "query.min_score",
			"/api/v1/dmarc/domains?max_score=101":                      "query.max_score",
			"/api/v1/dmarc/domains?min_score=80&max_score=20":          "query.max_score",
			"/api/v1/dmarc/domains?problem=Bad+Code":                   "query.problem",
			"/api/v1/dmarc/domains?problem=" + long:                    "query.problem",
			"/api/v1/dmarc/domains?source=user":                        "query.source",
			"/api/v1/dmarc/domains?tenant_ids=" + long:                 "query.tenant_ids[0]",
			"/api/v1/dmarc/domains/" + strong.ID + "/history?days=0":   "query.days",
			"/api/v1/dmarc/domains/" + strong.ID + "/history?days=731": "query.days",
			"/api/v1/dmarc/domains/" + long:                            "path.domain_id",
			"/api/v1/dmarc/events?days=0":                              "query.days",
			"/api/v1/dmarc/events?days=3651":                           "query.days",
			"/api/v1/dmarc/events?severity=urgent":                     "query.severity",
			"/api/v1/dmarc/events?domain_id=" + long:                   "query.domain_id",
			"/api/v1/dmarc/events?limit=501":                           "query.limit",
			"/api/v1/dmarc/summary?tenant_ids=" + long:                 "query.tenant_ids[0]",
		} {
			code, body := f.call(t, http.MethodGet, target, "", admin)
			if code != http.StatusUnprocessableEntity || !hasLocation(problemOf(t, body), loc) {
				t.Errorf("GET %s: %d %s, want 422 at %s", target, code, body, loc)
			}
		}
		many := `["` + strings.Repeat(`s","`, domains.MaxSelectors) + `s"]`
		for body, loc := range map[string]string{
			`{"domain": "x.example"}`:                                                                              "body.tenant_id",
			`{"tenant_id": "` + contoso.ID + `"}`:                                                                  "body.domain",
			`{"tenant_id": "", "domain": "x.example"}`:                                                             "body.tenant_id",
			`{"tenant_id": "` + contoso.ID + `", "domain": 7}`:                                                     "body.domain",
			`{"tenant_id": "` + contoso.ID + `", "domain": "localhost"}`:                                           "body.domain",
			`{"tenant_id": "` + contoso.ID + `", "domain": "192.0.2.1"}`:                                           "body.domain",
			`{"tenant_id": "` + contoso.ID + `", "domain": "under_score.example"}`:                                 "body.domain",
			`{"tenant_id": "` + contoso.ID + `", "domain": "-x.example"}`:                                          "body.domain",
			`{"tenant_id": "` + contoso.ID + `", "domain": "` + strings.Repeat("a", 64) + `.example"}`:             "body.domain",
			`{"tenant_id": "` + contoso.ID + `", "domain": "` + strings.Repeat("abcdefghi.", 26) + `example"}`:     "body.domain",
			`{"tenant_id": "` + contoso.ID + `", "domain": "x.example", "dkim_selectors": ` + many + `}`:           "body.dkim_selectors",
			`{"tenant_id": "` + contoso.ID + `", "domain": "x.example", "dkim_selectors": ["` + long + `"]}`:       "body.dkim_selectors[0]",
			`{"tenant_id": "` + contoso.ID + `", "domain": "x.example", "dkim_selectors": ["ok", "bad selector"]}`: "body.dkim_selectors[1]",
			`{"tenant_id": "` + contoso.ID + `", "domain": "x.example", "dkim_selectors": "s1"}`:                   "body.dkim_selectors",
			`{"tenant_id": "` + contoso.ID + `", "domain": "x.example", "source": "graph"}`:                        "body.source",
			`[]`: "body",
			`{"tenant_id": "` + contoso.ID + `", "domain": "x.example", "pad": "x"}`: "body.pad",
		} {
			code, resp := f.call(t, http.MethodPost, "/api/v1/dmarc/domains", body, admin)
			if code != http.StatusUnprocessableEntity || !hasLocation(problemOf(t, resp), loc) {
				t.Errorf("POST %.120s: %d %s, want 422 at %s", body, code, resp, loc)
			}
		}
		// A tenant that is none of the caller's, an admin's included, is
		// refused before the handler.
		if code, resp := f.call(t, http.MethodPost, "/api/v1/dmarc/domains", `{"tenant_id": "t-nobody", "domain": "x.example"}`, admin); code != http.StatusForbidden ||
			problemOf(t, resp).Detail != "no access to the requested tenant" {
			t.Errorf("POST for no tenant: %d %s, want 403", code, resp)
		}
		for body, loc := range map[string]string{
			`{}`:                               "body.dkim_selectors",
			`{"dkim_selectors": ` + many + `}`: "body.dkim_selectors",
			`{"dkim_selectors": [""]}`:         "body.dkim_selectors[0]",
		} {
			code, resp := f.call(t, http.MethodPut, "/api/v1/dmarc/domains/"+strong.ID+"/selectors", body, admin)
			if code != http.StatusUnprocessableEntity || !hasLocation(problemOf(t, resp), loc) {
				t.Errorf("PUT selectors %s: %d %s, want 422 at %s", body, code, resp, loc)
			}
		}
		var n int
		if err := f.store.DB.NewSelect().Model((*domains.Domain)(nil)).ColumnExpr("COUNT(*)").Scan(t.Context(), &n); err != nil || n != 4 {
			t.Errorf("%d domains after refused writes (%v), want 4", n, err)
		}
	})
}

func hasLocation(p sdk.Problem, loc string) bool {
	for _, e := range p.Errors {
		if e.Location == loc {
			return true
		}
	}
	return false
}

// TestAdminWrites: an admin adds a domain (a Unicode name stored as its
// A-labels, selectors lower-cased), sets its selectors and deletes it; a
// second add of the same domain, in any case, is 409; a directory domain
// cannot be deleted; each write is audited; a standard user may do none.
func TestAdminWrites(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, postureWorld())
		f.mustRun(t)
		body := `{"tenant_id": "` + contoso.ID + `", "domain": "Bücher.Example.", "dkim_selectors": ["S1", "google", "s1"]}`
		if code, resp := f.call(t, http.MethodPost, "/api/v1/dmarc/domains", body, contosoer); code != http.StatusForbidden {
			t.Fatalf("a standard user's add: %d %s", code, resp)
		}
		code, resp := f.call(t, http.MethodPost, "/api/v1/dmarc/domains", body, admin)
		if code != http.StatusCreated {
			t.Fatalf("add: %d %s", code, resp)
		}
		var d domains.DomainItem
		if err := json.Unmarshal(resp, &d); err != nil {
			t.Fatal(err)
		}
		if d.Domain != "xn--bcher-kva.example" || d.Source != "admin" || d.TenantName != "Contoso" || !slices.Equal(d.Selectors, []string{"s1", "google"}) || d.Score != nil {
			t.Errorf("added %+v", d)
		}
		for _, again := range []string{"xn--bcher-kva.example", "BÜCHER.example"} {
			code, resp := f.call(t, http.MethodPost, "/api/v1/dmarc/domains", `{"tenant_id": "`+fabrikam.ID+`", "domain": "`+again+`"}`, admin)
			if code != http.StatusConflict {
				t.Errorf("adding %s again: %d %s", again, code, resp)
			}
		}
		if code, resp := f.call(t, http.MethodPost, "/api/v1/dmarc/domains", `{"tenant_id": "`+fabrikam.ID+`", "domain": "strong.example"}`, admin); code != http.StatusConflict {
			t.Errorf("adding a directory domain: %d %s", code, resp)
		}

		path := "/api/v1/dmarc/domains/" + d.ID
		if code, _ := f.call(t, http.MethodPut, path+"/selectors", `{"dkim_selectors": ["k1"]}`, contosoer); code != http.StatusForbidden {
			t.Errorf("a standard user's selectors: %d", code)
		}
		code, resp = f.call(t, http.MethodPut, path+"/selectors", `{"dkim_selectors": ["K1", "k2"]}`, admin)
		if code != http.StatusOK || !strings.Contains(string(resp), `"dkim_selectors":["k1","k2"]`) {
			t.Errorf("selectors: %d %s", code, resp)
		}
		var detail domains.DomainDetail
		f.get(t, path, admin, &detail)
		if !slices.Equal(detail.CheckedSelectors, []string{"selector1", "selector2", "k1", "k2"}) {
			t.Errorf("checked selectors %v", detail.CheckedSelectors)
		}
		if code, _ := f.call(t, http.MethodPut, "/api/v1/dmarc/domains/no-such-id/selectors", `{"dkim_selectors": []}`, admin); code != http.StatusNotFound {
			t.Errorf("selectors of no domain: %d", code)
		}

		// The next sync checks strong.example for k1 too, and tries the
		// added domain, which the simulated DNS does not serve.
		strong := f.domain(t, "strong.example")
		if code, resp := f.call(t, http.MethodPut, "/api/v1/dmarc/domains/"+strong.ID+"/selectors", `{"dkim_selectors": ["K1"]}`, admin); code != http.StatusOK {
			t.Fatalf("strong.example's selectors: %d %s", code, resp)
		}
		f.mustRun(t)
		if got := f.domain(t, "strong.example"); num(got.DKIMPresent) != 3 {
			t.Errorf("strong.example with k1: %d DKIM keys, want 3", num(got.DKIMPresent))
		}
		if got := f.domain(t, "xn--bcher-kva.example"); got.DMARCPolicy != nil || !strings.Contains(got.DNSError, "REFUSED") || !got.CheckedAt.Equal(simNow) {
			t.Errorf("the added domain after a sync: %+v", got)
		}

		if code, resp := f.call(t, http.MethodDelete, "/api/v1/dmarc/domains/"+strong.ID, "", admin); code != http.StatusConflict || !strings.Contains(string(resp), "directory") {
			t.Errorf("deleting a directory domain: %d %s", code, resp)
		}
		if code, _ := f.call(t, http.MethodDelete, path, "", contosoer); code != http.StatusForbidden {
			t.Errorf("a standard user's delete: %d", code)
		}
		if code, resp := f.call(t, http.MethodDelete, path, "", admin); code != http.StatusNoContent {
			t.Errorf("delete: %d %s", code, resp)
		}
		if code, _ := f.call(t, http.MethodDelete, path, "", admin); code != http.StatusNotFound {
			t.Errorf("deleting again: %d", code)
		}
		var actions []string
		for _, e := range f.harness.AuditEntries() {
			actions = append(actions, e.Action)
		}
		if want := []string{"dmarc_domain.create.success", "dmarc_domain.selectors.success", "dmarc_domain.selectors.success", "dmarc_domain.delete.success"}; !slices.Equal(actions, want) {
			t.Errorf("audit %v, want %v", actions, want)
		}
	})
}
