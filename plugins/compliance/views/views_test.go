package views_test

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/frameworks"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/plugins/compliance/views"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// The world of these tests: today is 2026-11-10. Alpha (t1) synced 20
// days ago with one of its ten resources non-compliant (90 %), and today
// with four (60 %): r1 and r2 under a High storage policy mapped to NIST
// CSF PR.DS-01 by its group name, r4 under a Medium key vault policy that
// its words "soft delete" map to PR.DS-11, r5 under a Low policy whose
// name is markup; a tagging policy finds all ten compliant. Beta (t2) has
// one resource, non-compliant under a policy only its users may see, which
// its group name maps to PR.AA-01. Gamma (t3) never synced.
var (
	today   = time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)
	clock   = func() time.Time { return today.Add(15 * time.Hour) }
	markup  = `<script>alert("policy")</script>`
	tenants = []sdk.Tenant{
		{ID: "t1", Name: "Alpha", IsActive: true},
		{ID: "t2", Name: "Beta", IsActive: true},
		{ID: "t3", Name: "Gamma", IsActive: true},
	}
	admin = sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: []string{"t1", "t2", "t3"}}
	userA = sdk.Principal{ID: "ua", Kind: "user", TenantIDs: []string{"t1", "t3"}}
)

const betaPolicy = "Beta Secret Policy"

type policy struct {
	id, name, category, severity string
	groups                       []string
}

func def(n int) string {
	return fmt.Sprintf("/providers/Microsoft.Authorization/policyDefinitions/00000000-0000-4000-8000-%012d", n)
}

var (
	storagePolicy = policy{def(1), "Storage accounts should disable public network access", "Storage", states.SeverityHigh, []string{"NIST_CSF_v2.0_PR.DS_01"}}
	vaultPolicy   = policy{def(2), "Key vaults should have soft delete enabled", "Key Vault", states.SeverityMedium, nil}
	markupPolicy  = policy{def(3), markup, "General", states.SeverityLow, nil}
	tagPolicy     = policy{def(4), "Require a tag on resources", "Tags", states.SeverityLow, nil}
	secretPolicy  = policy{def(5), betaPolicy, "Network", states.SeverityHigh, []string{"NIST_CSF_v2.0_PR.AA_01"}}
)

func resource(sub string, n int) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/sa%d", sub, n)
}

type finding struct {
	p     policy
	res   int
	state string
}

// sync replaces the subscription's states with the findings and takes the
// tenant's snapshot at the time.
func sync(t *testing.T, st *states.Store, tenant, sub string, at time.Time, findings []finding) {
	t.Helper()
	ctx := context.Background()
	_, err := st.Replace(ctx, states.Target{TenantID: tenant, SubscriptionID: sub, SyncedAt: at}, func(emit func(states.State) error) error {
		for _, f := range findings {
			if err := emit(states.State{ResourceID: resource(sub, f.res), ResourceType: "Microsoft.Storage/storageAccounts",
				PolicyAssignmentID: "/subscriptions/" + sub + "/providers/Microsoft.Authorization/policyAssignments/a1",
				PolicyDefinitionID: f.p.id, PolicyDefinitionName: f.p.id[strings.LastIndex(f.p.id, "/")+1:], PolicyName: f.p.name,
				Category: f.p.category, GroupNames: f.p.groups, ComplianceState: f.state, Severity: f.p.severity, EvaluatedAt: at.Add(-time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Finish(ctx, tenant, []string{sub}, at); err != nil {
		t.Fatal(err)
	}
}

// alpha is Alpha's states: every resource compliant under the tagging
// policy, and the non-compliant ones given.
func alpha(nonCompliant ...finding) []finding {
	out := make([]finding, 0, 10+len(nonCompliant))
	for n := 1; n <= 10; n++ {
		out = append(out, finding{tagPolicy, n, states.StateCompliant})
	}
	return append(out, nonCompliant...)
}

type world struct {
	h *plugintest.Harness
}

// newWorld syncs the states into a store on a database of the dialect and
// serves the views through the plugin protocol, with a further section
// that names the tenants it is given.
func newWorld(t *testing.T, dialect string) *world {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, states.Migrations(), "compliance_migrations"); err != nil {
		t.Fatal(err)
	}
	st := &states.Store{DB: db}
	sync(t, st, "t1", "s1", today.AddDate(0, 0, -20).Add(9*time.Hour), alpha(finding{storagePolicy, 1, states.StateNonCompliant}))
	sync(t, st, "t1", "s1", today.Add(9*time.Hour), alpha(
		finding{storagePolicy, 1, states.StateNonCompliant}, finding{storagePolicy, 2, states.StateNonCompliant}, finding{storagePolicy, 3, states.StateCompliant},
		finding{vaultPolicy, 4, states.StateNonCompliant}, finding{markupPolicy, 5, states.StateNonCompliant}))
	sync(t, st, "t2", "s2", today.Add(8*time.Hour), []finding{{secretPolicy, 1, states.StateNonCompliant}})

	set, err := frameworks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := mapping.New(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	v := &views.Handlers{States: st, Coverage: &coverage.Service{Mapper: mapper, Store: st}, Now: clock, Sections: []views.Section{{Title: "Further section",
		Render: func(_ *http.Request, ids []string) (template.HTML, error) {
			return template.HTML("<p>tenants " + template.HTMLEscapeString(strings.Join(ids, ",")) + "</p>"), nil
		}}}}
	fragments, pages, nav := v.Views()
	p := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		v.Host = env.Host
		return &sdk.Plugin{Fragments: fragments, Pages: pages, Nav: nav}, nil
	}
	return &world{h: plugintest.New(t, sdk.Definition{Name: "compliance"}, p, plugintest.Options{Tenants: tenants})}
}

// get answers the view's status and HTML.
func (w *world) get(t *testing.T, path string, who sdk.Principal) (int, string) {
	t.Helper()
	resp := w.h.Do(httptest.NewRequest(http.MethodGet, path, nil), who)
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// html is the view's HTML, which must answer 200.
func (w *world) html(t *testing.T, path string, who sdk.Principal) string {
	t.Helper()
	status, body := w.get(t, path, who)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	return body
}

func contains(t *testing.T, what, html string, want ...string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(html, s) {
			t.Errorf("%s lacks %q", what, s)
		}
	}
}

func lacks(t *testing.T, what, html string, unwanted ...string) {
	t.Helper()
	for _, s := range unwanted {
		if strings.Contains(html, s) {
			t.Errorf("%s shows %q", what, s)
		}
	}
}

var tags = regexp.MustCompile(`<[^>]*>`)

// text is the HTML's text, tags removed, entities as written.
func text(html string) string { return tags.ReplaceAllString(html, "") }

func TestViews(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			w := newWorld(t, dialect)
			t.Run("gauge", func(t *testing.T) { testGauge(t, w) })
			t.Run("page", func(t *testing.T) { testPage(t, w) })
			t.Run("frameworks", func(t *testing.T) { testFrameworks(t, w) })
			t.Run("refused tenant", func(t *testing.T) { testRefused(t, w) })
			t.Run("policy", func(t *testing.T) { testPolicy(t, w) })
			t.Run("report", func(t *testing.T) { testReport(t, w) })
		})
	}
}

// testGauge: Alpha's user sees Alpha's figures of today — 6 of 10
// resources compliant, 3 of 4 policies non-compliant, one finding of each
// severity — and nothing of Beta; a tenant never synced gets the empty
// state; the admin's gauge sums Alpha's and Beta's.
func testGauge(t *testing.T, w *world) {
	gauge := w.html(t, views.GaugePath, userA)
	contains(t, "Alpha's gauge", gauge, `aria-label="Compliant resources, 6 of 10: 60%"`, `href="/compliance"`, `datetime="2026-11-10T09:00:00Z"`)
	contains(t, "Alpha's gauge", text(gauge), "Non-compliant resources4", "of 10 with a policy state", "Non-compliant policies3", "of 4 policies",
		"High-severity findings1", "1 medium, 1 low", "Last complete sync:")
	lacks(t, "Alpha's gauge", gauge, "Beta")

	scoped := w.html(t, views.GaugePath+"?tenant_id=t1", userA)
	contains(t, "the gauge scoped to Alpha", scoped, `href="/compliance?tenant_id=t1"`, "6 of 10: 60%")

	contains(t, "the admin's gauge", w.html(t, views.GaugePath, admin), "Compliant resources, 6 of 11: 54.6%")

	gamma := w.html(t, views.GaugePath+"?tenant_id=t3", userA)
	contains(t, "Gamma's gauge", gamma, "No compliance data yet. It arrives with the next compliance sync.")
	lacks(t, "Gamma's gauge", gamma, "Non-compliant", "gauge")
}

// testPage: the overall compliance with each tenant's, the trend of 30
// days from 90 % to 60 %, the non-compliant policies by non-compliant
// resources with their severity and a name that is markup escaped, the
// link to the whole list, and the further section given the tenants.
func testPage(t *testing.T, w *world) {
	page := w.html(t, views.PagePath, userA)
	txt := text(page)
	contains(t, "Alpha's page", page, `aria-label="Compliant resources, 6 of 10: 60%"`)
	contains(t, "Alpha's page", txt, "Compliant resources6of 10 with a policy state", "Non-compliant resources4", "Non-compliant policies3Criticalof 4 policies",
		// Each tenant's latest snapshot, Gamma never synced.
		"Alpha60 %4 of 103 of 42026-11-10", "GammaNot synced",
		// The trend: 90 % from Alpha's first sync on, 60 % today.
		"Compliance, last 30 days", "Compliant resources in percent", "90 % on 2026-10-21, 60 % on 2026-11-10.",
		// The list: the storage policy's two resources first, then the two
		// of one by id; non-compliant and compliant resources, tenants.
		"Storage accounts should disable public network accessStorageHigh2112026-11-10",
		"Key vaults should have soft delete enabledKey VaultMedium1012026-11-10",
		"3 of 3 non-compliant policies", "Further sectiontenants t1,t3")
	if i, j := strings.Index(txt, "Storage accounts should"), strings.Index(txt, "Key vaults should"); i < 0 || j < i {
		t.Errorf("the storage policy (2 resources) is not listed before the key vault's (1)")
	}
	contains(t, "Alpha's page", page, `href="/api/v1/compliance/non-compliant?limit=500&amp;sort_by=non_compliant_count"`,
		"&lt;script&gt;alert(&#34;policy&#34;)&lt;/script&gt;")
	lacks(t, "Alpha's page", page, "<script", "Beta")
	// The trend's days before Alpha's first sync have no point.
	contains(t, "Alpha's page", page, `<th scope="row">2026-10-20</th><td class="num"></td>`, `<th scope="row">2026-10-21</th><td class="num">90</td>`)

	one := w.html(t, views.PagePath+"?tenant_id=t1", userA)
	contains(t, "Alpha's page scoped to it", one, "tenant_ids=t1")
	contains(t, "Alpha's page scoped to it", text(one), "Further sectiontenants t1", "Storage accounts should disable public network accessStorageHigh212026-11-10")
	lacks(t, "Alpha's page scoped to it", one, "Gamma", `>Tenants</th>`)

	gamma := text(w.html(t, views.PagePath+"?tenant_id=t3", userA))
	contains(t, "Gamma's page", gamma, "No compliance data yet.", "tenants t3")
	lacks(t, "Gamma's page", gamma, "Alpha", "Storage accounts")

	// Beta synced today only: one figure.
	beta := text(w.html(t, views.PagePath+"?tenant_id=t2", admin))
	contains(t, "Beta's page", beta, "Compliance, last 30 days", "Compliant resources in percent", "0 % on 2026-11-10. Each day")
	lacks(t, "Beta's page", beta, "on 2026-10")

	all := text(w.html(t, views.PagePath, admin))
	contains(t, "the admin's page", all, betaPolicy+"NetworkHigh101", "Beta0 %1 of 11 of 1", "4 of 4 non-compliant policies")
}

// testRefused: a tenant the caller may not see is refused by the SDK
// before any view's handler runs, and none of it is shown.
func testRefused(t *testing.T, w *world) {
	for _, path := range []string{views.GaugePath, views.PagePath, views.FrameworksPath} {
		status, body := w.get(t, path+"?tenant_id=t2", userA)
		if status != http.StatusForbidden {
			t.Errorf("%s of Beta for Alpha's user: %d", path, status)
		}
		lacks(t, path+" refused", body, "Beta", betaPolicy, "%")
	}
}

// testFrameworks: the page shows the first framework's coverage, what
// coverage counts beside it, and a picker; the framework section of NIST CSF, reloaded by the picker,
// shows Alpha's two policies on their controls, each with why it maps,
// and nothing of Beta's, whose policy the admin sees on its control; a
// framework that does not exist is said so, one longer than any id is a
// 422.
func testFrameworks(t *testing.T, w *world) {
	page := w.html(t, views.PagePath, userA)
	contains(t, "Alpha's page", page, `id="compliance-frameworks"`, `<option value="cis_azure" selected>`, `<option value="nist_csf">`,
		`hx-get="/partials/compliance-frameworks"`, `hx-target="#compliance-frameworks"`, mapping.Disclaimer)
	lacks(t, "Alpha's page", page, `name="tenant_id"`)
	// Beside the coverage figures, what they count, lest they read as a
	// pass rate: a mapped policy, passing or not.
	meaning := "<p><strong>Coverage is not compliance.</strong> A control counts as covered when at least one policy that Azure Policy evaluates in the tenants&#39; subscriptions maps to it"
	contains(t, "Alpha's page", page, meaning+", by its initiative group or by keywords in its name, whether that policy passes or fails.",
		`</p><ul class="bars" aria-label="Controls of each framework`)
	direct := w.html(t, views.PagePath+"?framework=nist_csf", userA)
	contains(t, "Alpha's page of NIST CSF", direct, `<option value="nist_csf" selected>`, "Data at rest")

	nist := w.html(t, views.FrameworksPath+"?framework=nist_csf", userA)
	txt := text(nist)
	contains(t, "Alpha's NIST CSF", txt, "NIST Cybersecurity Framework 2.0", "Coverage is not compliance.",
		"of its controls are covered: a policy of the tenants maps to each, passing or not.",
		"Data Security (PR.DS): 2 of 4 controls covered, 50 %",
		// PR.DS-01 by the storage policy's group name, PR.DS-11 by the
		// key vault policy's words.
		// The counts are of resources: sa3 passes, sa1 and sa2 fail.
		"PR.DS-01 Data at rest Partial policies mapped 1, resources passing 1 (exempt 0), failing 2, 33.3 % passing",
		"Storage accounts should disable public network accessNon-compliant2Group name NIST_CSF_v2.0_PR.DS_01tier 1, high confidence",
		"PR.DS-11 Backups Non-compliant policies mapped 1, resources passing 0 (exempt 0), failing 1, 0 % passing",
		"Key vaults should have soft delete enabledNon-compliant1Keywords soft, deletetier 2, medium confidence",
		"PR.DS-02 Data in transit Not covered", "No policy of the tenants maps to this control.",
		"PR.AA-01")
	// A policy failing resources links its page of them.
	contains(t, "Alpha's NIST CSF", nist, `href="/api/v1/compliance/frameworks/nist_csf?explain=true&amp;include_policies=true"`,
		`<a href="/compliance/policy?policy_id=%2Fproviders%2FMicrosoft.Authorization%2FpolicyDefinitions%2F`,
		`aria-label="Controls of each category that the tenants&#39; policies cover"`)
	lacks(t, "Alpha's NIST CSF", nist, "Beta", "NIST_CSF_v2.0_PR.AA_01")
	contains(t, "the admin's NIST CSF", text(w.html(t, views.FrameworksPath+"?framework=nist_csf", admin)),
		betaPolicy+"Non-compliant1Group name NIST_CSF_v2.0_PR.AA_01tier 1, high confidence")

	scoped := w.html(t, views.FrameworksPath+"?framework=soc2&tenant_id=t1", userA)
	contains(t, "Alpha's SOC 2 scoped to it", scoped, `<option value="soc2" selected>`, `<input type="hidden" name="tenant_id" value="t1">`,
		`href="/api/v1/compliance/frameworks/soc2?explain=true&amp;include_policies=true&amp;tenant_ids=t1"`)

	for _, path := range []string{views.FrameworksPath + "?framework=%3Cb%3Enope", views.PagePath + "?framework=%3Cb%3Enope"} {
		unknown := w.html(t, path, userA)
		contains(t, path, unknown, "There is no framework &#34;&lt;b&gt;nope&#34;. Pick one of the frameworks above.", `<option value="soc2">`)
		lacks(t, path, unknown, "<b>nope", " selected>")
	}
	// A framework id no framework could have is refused by the view's
	// binding, naming the parameter.
	for _, path := range []string{views.FrameworksPath, views.PagePath} {
		if status, body := w.get(t, path+"?framework="+strings.Repeat("f", 65), userA); status != http.StatusUnprocessableEntity || !strings.Contains(body, "query.framework") {
			t.Errorf("%s with a 65-character framework: %d %s", path, status, body)
		}
	}
}

// testPolicy: each non-compliant policy of the page links its page, on
// the picked tenant; the page lists the policy's non-compliant resources
// of the caller's tenants with their tenant, each linking its resource
// page, and links the list on the API. A policy non-compliant only in a
// tenant the caller may not see is a 404 as an unknown one is, and a
// tenant picked that the caller may not see a 403.
func testPolicy(t *testing.T, w *world) {
	link := views.PolicyPath + "?policy_id=" + url.QueryEscape(storagePolicy.id)
	contains(t, "Alpha's page", w.html(t, views.PagePath, userA), `<a href="`+strings.ReplaceAll(link, "&", "&amp;")+`">Storage accounts should`,
		`<a href="/compliance/policy?policy_id=`+url.QueryEscape(markupPolicy.id)+`">&lt;script&gt;`)
	contains(t, "Alpha's page scoped to it", w.html(t, views.PagePath+"?tenant_id=t1", userA), `<a href="`+link+`&amp;tenant_id=t1">Storage accounts should`)

	page := w.html(t, link, userA)
	contains(t, "the storage policy's page", page, "<h2>Storage accounts should disable public network access</h2>",
		`<a href="/resources/item?resource_id=`+url.QueryEscape(resource("s1", 1))+`">sa1</a>`,
		`<a href="/resources/item?resource_id=`+url.QueryEscape(resource("s1", 2))+`">sa2</a>`,
		`href="/api/v1/compliance/non-compliant/resources?limit=500&amp;policy_id=`+url.QueryEscape(storagePolicy.id)+`"`,
		"2 of 2 non-compliant resources", "<td>Alpha</td>", "health-critical")
	lacks(t, "the storage policy's page", page, ">sa3<", "Beta", "Previous page", "Next page")
	contains(t, "the markup policy's page", w.html(t, views.PolicyPath+"?policy_id="+url.QueryEscape(markupPolicy.id), userA), "<h2>&lt;script&gt;")

	contains(t, "Beta's policy for the admin", w.html(t, views.PolicyPath+"?policy_id="+url.QueryEscape(secretPolicy.id), admin), betaPolicy, "<td>Beta</td>")
	for _, path := range []string{views.PolicyPath + "?policy_id=" + url.QueryEscape(secretPolicy.id), views.PolicyPath + "?policy_id=" + url.QueryEscape(tagPolicy.id)} {
		status, body := w.get(t, path, userA)
		if status != http.StatusNotFound {
			t.Errorf("%s for Alpha's user: %d %s, want 404", path, status, body)
		}
		lacks(t, path, body, betaPolicy, "Beta")
	}
	if status, body := w.get(t, link+"&tenant_id=t2", userA); status != http.StatusForbidden || strings.Contains(body, "Beta") {
		t.Errorf("the storage policy in Beta for Alpha's user: %d %s, want 403", status, body)
	}
	for _, query := range []string{"?policy_id=x", "?policy_id=%2Fp&offset=-1"} {
		if status, body := w.get(t, views.PolicyPath+query, userA); status != http.StatusUnprocessableEntity {
			t.Errorf("%s%s: %d %s, want 422", views.PolicyPath, query, status, body)
		}
	}
	// Without a policy the page says where to find one.
	if status, body := w.get(t, views.PolicyPath, userA); status != http.StatusOK || !strings.Contains(body, "open it from a policy") {
		t.Errorf("%s without a policy: %d %s, want 200 saying where to find one", views.PolicyPath, status, body)
	}
}

// TestPolicyPages: past fifty resources the policy page links the next
// page, which links back.
func TestPolicyPages(t *testing.T) {
	db := storetest.Open(t, storetest.Dialects()[0])
	if _, err := store.Migrate(context.Background(), db, states.Migrations(), "compliance_migrations"); err != nil {
		t.Fatal(err)
	}
	st := &states.Store{DB: db}
	var many []finding
	for n := 1; n <= 55; n++ {
		many = append(many, finding{storagePolicy, n, states.StateNonCompliant})
	}
	sync(t, st, "t1", "s1", today.Add(9*time.Hour), many)
	v := &views.Handlers{States: st, Now: clock}
	fragments, pages, nav := v.Views()
	w := &world{h: plugintest.New(t, sdk.Definition{Name: "compliance"}, func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		v.Host = env.Host
		return &sdk.Plugin{Fragments: fragments, Pages: pages, Nav: nav}, nil
	}, plugintest.Options{Tenants: tenants})}
	link := views.PolicyPath + "?policy_id=" + url.QueryEscape(storagePolicy.id)
	first := w.html(t, link+"&tenant_id=t1", userA)
	contains(t, "the first page", first, "50 of 55 non-compliant resources", `href="/compliance/policy?offset=50&amp;policy_id=`+url.QueryEscape(storagePolicy.id)+`&amp;tenant_id=t1">Next page`)
	lacks(t, "the first page", first, "Previous page")
	last := w.html(t, link+"&offset=50", userA)
	contains(t, "the last page", last, "51 to 55 of 55 non-compliant resources", `href="`+link+`">Previous page`)
	lacks(t, "the last page", last, "Next page")
}
