package views_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/rules"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/plugins/compliance/views"
	"github.com/stewardhq/steward/plugins/resources/inventory"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// The editor's world: Alpha (t1) has three disks, one with an owner tag;
// Beta (t2) has one disk without. Each standard user sees one tenant;
// the admin sees all three.
var (
	ownerOfAlpha = sdk.Principal{ID: "u1", Kind: "user", TenantIDs: []string{"t1"}}
	ownerOfBeta  = sdk.Principal{ID: "u2", Kind: "user", TenantIDs: []string{"t2"}}
)

const (
	diskType = "microsoft.compute/disks"
	// ownerSchema wants an owner tag.
	ownerSchema = `{"type": "object", "required": ["tags"], "properties": {"tags": {"type": "object", "required": ["owner"]}}}`
)

func diskRecord(tenant, name string, tags map[string]string) json.RawMessage {
	tagJSON, _ := json.Marshal(tags)
	arm := "/subscriptions/s-" + tenant + "/resourceGroups/rg/providers/Microsoft.Compute/disks/" + name
	raw, err := json.Marshal(inventory.Record{TenantID: tenant, SubscriptionID: "s-" + tenant, ID: inventory.UID(arm), ResourceID: arm, Name: name,
		Type: diskType, Location: "westeurope", ResourceGroup: "rg", Tags: tagJSON, Properties: json.RawMessage(`{}`)})
	if err != nil {
		panic(err)
	}
	return raw
}

type editorWorld struct {
	h     *plugintest.Harness
	rules *rules.Store
}

// newEditorWorld serves the compliance page with the rule editor as its
// section, the editor's routes and the rules' API on a database of the
// dialect, on a clock that stands still.
func newEditorWorld(t *testing.T, dialect string) *editorWorld {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(ctx, db, states.Migrations(), "compliance_migrations"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(ctx, db, rules.Migrations(), "compliance_rule_migrations"); err != nil {
		t.Fatal(err)
	}
	rs := rules.NewStore(db)
	eval := &rules.Evaluator{Store: rs, Now: clock}
	api := &rules.Handlers{}
	editor := &views.RuleEditor{Rules: api}
	v := &views.Handlers{States: &states.Store{DB: db}, Now: clock, Sections: []views.Section{editor.Section()}}
	fragments, pages, nav := v.Views()
	p := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		v.Host = env.Host
		eval.Sources = &rules.Sources{Datasets: env.Host}
		*api = rules.Handlers{Store: rs, Evaluator: eval, Host: env.Host, Logger: env.Logger}
		return &sdk.Plugin{Routes: append(api.Routes(), editor.Routes()...), Fragments: fragments, Pages: pages, Nav: nav}, nil
	}
	sets := map[string][]json.RawMessage{rules.ResourcesDataset: {
		diskRecord("t1", "disk-owned", map[string]string{"owner": "ops"}),
		diskRecord("t1", "disk-lab", map[string]string{"env": "lab"}),
		diskRecord("t1", "disk-bare", map[string]string{}),
		diskRecord("t2", "disk-beta", map[string]string{}),
	}}
	return &editorWorld{h: plugintest.New(t, sdk.Definition{Name: "compliance"}, p, plugintest.Options{Tenants: tenants, Datasets: sets}), rules: rs}
}

// do answers the request's status and body.
func (w *editorWorld) do(t *testing.T, who sdk.Principal, method, path string, form url.Values) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp := w.h.Do(req, who)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// ok is the answer's HTML, which must be 200.
func (w *editorWorld) ok(t *testing.T, who sdk.Principal, method, path string, form url.Values) string {
	t.Helper()
	status, body := w.do(t, who, method, path, form)
	if status != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, status, body)
	}
	return body
}

// ownerRule is a valid form: Alpha's disks must have an owner tag.
func ownerRule(name string, change ...func(url.Values)) url.Values {
	f := url.Values{"rule_name": {name}, "rule_description": {"Who to call"}, "category": {rules.CategoryResourceProperty},
		"resource_type": {"Microsoft.Compute/disks"}, "severity": {"High"}, "effect": {rules.EffectAudit}, "schema": {ownerSchema}}
	for _, c := range change {
		c(f)
	}
	return f
}

const createAt = views.RulesPath + "?tenant_id="

// stored are the tenant's rules.
func (w *editorWorld) stored(t *testing.T, tenant string) []rules.Rule {
	t.Helper()
	list, _, err := w.rules.List(context.Background(), rules.ListQuery{TenantIDs: []string{tenant}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// create creates a rule through the editor's form and returns it.
func (w *editorWorld) create(t *testing.T, who sdk.Principal, tenant string, form url.Values) (rules.Rule, string) {
	t.Helper()
	html := w.ok(t, who, http.MethodPost, createAt+tenant, form)
	list := w.stored(t, tenant)
	if len(list) == 0 {
		t.Fatalf("no rule created: %s", html)
	}
	return list[len(list)-1], html
}

var dryRunRE = regexp.MustCompile(`hx-post="(/partials/compliance-rules/(\d+)/dry-run\?tenant_id=t\d)"`)

func TestRuleEditor(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			t.Run("list and create", func(t *testing.T) { testEditorList(t, newEditorWorld(t, dialect)) })
			t.Run("invalid", func(t *testing.T) { testEditorInvalid(t, newEditorWorld(t, dialect)) })
			t.Run("dry run", func(t *testing.T) { testEditorDryRun(t, newEditorWorld(t, dialect)) })
			t.Run("delete", func(t *testing.T) { testEditorDelete(t, newEditorWorld(t, dialect)) })
			t.Run("tenants", func(t *testing.T) { testEditorTenants(t, newEditorWorld(t, dialect)) })
			t.Run("escaping", func(t *testing.T) { testEditorEscaping(t, newEditorWorld(t, dialect)) })
		})
	}
}

// testEditorList: a created rule is listed at once, with its category,
// resource type, severity, effect and state, with its buttons; the page
// lists the caller's tenant's rules, and the form is empty again.
func testEditorList(t *testing.T, w *editorWorld) {
	page := w.ok(t, ownerOfAlpha, http.MethodGet, views.PagePath, nil)
	contains(t, "the page before", page, "Custom rules", "No custom rules yet.", `hx-post="/partials/compliance-rules?tenant_id=t1"`,
		`<label for="rule-name">`, `<label for="rule-schema">`, `placeholder="{`)

	rule, html := w.create(t, ownerOfAlpha, "t1", ownerRule("Disks have an owner"))
	if rule.Name != "Disks have an owner" || rule.TenantID != "t1" || rule.CreatedBy != ownerOfAlpha.ID || rule.Severity != "High" ||
		rule.ResourceType == nil || *rule.ResourceType != diskType || !rule.IsActive {
		t.Errorf("created %+v", rule)
	}
	contains(t, "the editor after create", html, `id="compliance-rules"`, "Rule “Disks have an owner” created.")
	contains(t, "the editor after create", text(html), "Disks have an ownerWho to call", "resource_property · microsoft.compute/disks", "High", "audit", "Yes")
	lacks(t, "the form after create", html, `value="Disks have an owner"`, "aria-invalid")
	if m := dryRunRE.FindAllStringSubmatch(html, -1); len(m) != 1 {
		t.Errorf("dry-run buttons %v", m)
	}
	contains(t, "the editor", html, `hx-delete="/partials/compliance-rules/`, `hx-confirm="Delete the rule Disks have an owner?"`)
	if entries := w.h.AuditEntries(); !slices.ContainsFunc(entries, func(e plugintest.AuditEntry) bool {
		return e.Action == "compliance_rule.create.success" && e.TenantID == "t1" && e.Principal.ID == ownerOfAlpha.ID
	}) {
		t.Errorf("no audit entry of the creation: %+v", entries)
	}

	w.create(t, ownerOfAlpha, "t1", ownerRule("MFA", func(f url.Values) {
		f.Set("category", rules.CategoryMFACoverage)
		f.Del("resource_type")
		f.Set("effect", rules.EffectDisabled)
		f.Set("schema", `{"properties": {"mfa_coverage_percentage": {"minimum": 90}}}`)
	}))
	page = text(w.ok(t, ownerOfAlpha, http.MethodGet, views.PagePath, nil))
	contains(t, "the page", page, "Disks have an owner", "MFAWho to call", "mfa_coverage", "disabled")
	if i, j := strings.Index(page, "Disks have an owner"), strings.Index(page, "MFAWho"); i < 0 || j < i {
		t.Errorf("rules not oldest first: %d, %d", i, j)
	}

	// Past a hundred rules the newest are listed, the one just created
	// among them.
	for n := range 100 {
		at := clock().Add(time.Duration(n) * time.Second)
		err := w.rules.Create(context.Background(), &rules.Rule{TenantID: "t1", Name: fmt.Sprintf("Bulk rule %03d", n), Category: rules.CategoryMFACoverage,
			Severity: "Low", Effect: rules.EffectAudit, Schema: `{}`, IsActive: true, CreatedBy: "u1", CreatedAt: at, UpdatedAt: at})
		if err != nil {
			t.Fatal(err)
		}
	}
	_, html = w.create(t, ownerOfAlpha, "t1", ownerRule("The newest rule"))
	contains(t, "the editor of 103 rules", text(html), "Bulk rule 001", "Bulk rule 099", "The newest rule", "The newest 100 of 103 rules are shown")
	lacks(t, "the editor of 103 rules", html, "Disks have an owner", "Bulk rule 000")
}

// testEditorInvalid: each field the API refuses is named beside that
// field, tied to it by aria-describedby, the input kept, nothing stored;
// never a 500.
func testEditorInvalid(t *testing.T, w *editorWorld) {
	long := strings.Repeat("x", 4001)
	for _, c := range []struct {
		name, field, id, want string
		change                func(url.Values)
	}{
		{"no name", "rule_name", "rule-name", "is required", func(f url.Values) { f.Del("rule_name") }},
		{"markup for a name", "rule_name", "rule-name", "must not be empty once markup is removed", func(f url.Values) { f.Set("rule_name", "<b></b>") }},
		{"a name with a line break", "rule_name", "rule-name", "control characters", func(f url.Values) { f.Set("rule_name", "two\nlines") }},
		{"a long description", "rule_description", "rule-description", "4000", func(f url.Values) { f.Set("rule_description", long) }},
		{"an unknown category", "category", "rule-category", "expected value to be one of", func(f url.Values) { f.Set("category", "vibes") }},
		{"no resource type", "resource_type", "rule-resource-type", "is required for a resource_property rule", func(f url.Values) { f.Del("resource_type") }},
		{"a bad resource type", "resource_type", "rule-resource-type", "must be a resource type", func(f url.Values) { f.Set("resource_type", "disks") }},
		{"a resource type for MFA", "resource_type", "rule-resource-type", "is only for resource_property rules",
			func(f url.Values) { f.Set("category", rules.CategoryMFACoverage) }},
		{"an unknown severity", "severity", "rule-severity", "expected value to be one of", func(f url.Values) { f.Set("severity", "Huge") }},
		{"an unknown effect", "effect", "rule-effect", "expected value to be one of", func(f url.Values) { f.Set("effect", "deny") }},
		{"no schema", "schema", "rule-schema", "is required", func(f url.Values) { f.Del("schema") }},
		{"a schema that is not JSON", "schema", "rule-schema", "must be JSON", func(f url.Values) { f.Set("schema", `{"type": "object"`) }},
		{"a schema that is not an object", "schema", "rule-schema", "expected object", func(f url.Values) { f.Set("schema", `[1]`) }},
		{"a remote reference", "schema", "rule-schema", "remote reference", func(f url.Values) {
			f.Set("schema", `{"properties": {"tags": {"$ref": "https://example.com/s.json"}}}`)
		}},
		{"an invalid schema", "schema", "rule-schema", "not a valid draft 2020-12 schema", func(f url.Values) { f.Set("schema", `{"type": 7}`) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			form := ownerRule("Disks have an owner", c.change)
			status, html := w.do(t, ownerOfAlpha, http.MethodPost, createAt+"t1", form)
			if status != http.StatusOK {
				t.Fatalf("%d %s", status, html)
			}
			m := regexp.MustCompile(`<p class="alert" id="` + c.id + `-error">([^<]*)</p>`).FindStringSubmatch(html)
			if m == nil || !strings.Contains(m[1], c.want) {
				t.Errorf("no error %q beside %s: %v\n%s", c.want, c.field, m, html)
			}
			field := regexp.MustCompile(`<(input|select|textarea) id="` + c.id + `"[^>]*>`).FindString(html)
			if !strings.Contains(field, `aria-invalid="true"`) || !regexp.MustCompile(`aria-describedby="[^"]*`+c.id+`-error`).MatchString(field) {
				t.Errorf("the field is not tied to its error: %s", field)
			}
			if c.field != "rule_description" && !strings.Contains(html, "Who to call</textarea>") {
				t.Errorf("the description was not kept")
			}
			if c.field != "schema" && !strings.Contains(html, "&#34;owner&#34;]}}}</textarea>") {
				t.Errorf("the schema was not kept")
			}
			if c.field != "severity" && !strings.Contains(html, `<option value="High" selected>`) {
				t.Errorf("the severity was not kept")
			}
			contains(t, "a refused rule's editor", html, `<div class="alert" role="alert"><p>The rule was not created; the fields marked below say why.</p></div>`)
			lacks(t, "a refused rule's editor", html, "created.")
			if n := len(w.stored(t, "t1")); n != 0 {
				t.Errorf("%d rules stored", n)
			}
		})
	}
	// A schema that is not JSON does not hide the other fields' errors.
	html := w.ok(t, ownerOfAlpha, http.MethodPost, createAt+"t1", ownerRule("Disks", func(f url.Values) {
		f.Set("schema", `{"type": "object"`)
		f.Set("severity", "Huge")
	}))
	contains(t, "two errors", html, `<p class="alert" id="rule-schema-error">must be JSON: unexpected end of JSON input</p>`,
		`<p class="alert" id="rule-severity-error">expected value to be one of &#34;Low, Medium, High, Critical&#34;</p>`)
	lacks(t, "two errors", html, "is required")
}

// testEditorDryRun: a dry run answers the violations' count and the
// first ones, each with its subject, instance path and message, and
// stores nothing. Its limit is the host's (TestEditorDryRunIsCostly).
func testEditorDryRun(t *testing.T, w *editorWorld) {
	rule, html := w.create(t, ownerOfAlpha, "t1", ownerRule("Disks have an owner"))
	m := dryRunRE.FindStringSubmatch(html)
	if m == nil {
		t.Fatalf("no dry-run button: %s", html)
	}
	res := w.ok(t, ownerOfAlpha, http.MethodPost, m[1], nil)
	contains(t, "the dry run", text(res), "Dry run: 2 violations in 2 of 3 records", "nothing stored",
		"disk-lab /subscriptions/s-t1/resourceGroups/rg/providers/Microsoft.Compute/disks/disk-lab at /tags: missing properties: &#39;owner&#39;",
		"disk-bare")
	lacks(t, "the dry run", res, "disk-owned", "disk-beta")
	if got, err := w.rules.Get(context.Background(), rule.ID, []string{"t1"}); err != nil || got.EvaluatedAt != nil {
		t.Errorf("the dry run stored its result: %+v, %v", got, err)
	}
	// The result goes into a live region, where the page's script also
	// shows the host's 429 when the caller's costly budget is spent.
	if !strings.Contains(html, `<div id="compliance-rule-`+m[2]+`-dry-run" aria-live="polite"></div>`) {
		t.Errorf("the dry run's result is not a live region: %s", html)
	}
}

// TestEditorDryRunIsCostly: the editor's dry run calls the API's handler
// in this process, past the host, so its own route must draw on the
// host's costly budget as the API's does, or the button would be an
// unlimited way around it.
func TestEditorDryRunIsCostly(t *testing.T) {
	api := &rules.Handlers{}
	for _, r := range append(api.Routes(), (&views.RuleEditor{Rules: api}).Routes()...) {
		want := sdk.RateDefault
		if strings.HasSuffix(r.Path, "/evaluate") || strings.HasSuffix(r.Path, "/dry-run") {
			want = sdk.RateCostly
		}
		if r.RateClass != want {
			t.Errorf("%s %s has rate class %v, want %v", r.Method, r.Path, r.RateClass, want)
		}
	}
}

// testEditorDelete: Delete removes the rule from the list (soft: the row
// stays), audited; deleting it again is 404.
func testEditorDelete(t *testing.T, w *editorWorld) {
	rule, html := w.create(t, ownerOfAlpha, "t1", ownerRule("Disks have an owner"))
	del := regexp.MustCompile(`hx-delete="([^"]+)"`).FindStringSubmatch(html)
	if del == nil {
		t.Fatalf("no delete button: %s", html)
	}
	path := strings.ReplaceAll(del[1], "&amp;", "&")
	after := w.ok(t, ownerOfAlpha, http.MethodDelete, path, nil)
	contains(t, "the editor after delete", after, "Rule deleted.", "No custom rules yet.")
	lacks(t, "the editor after delete", after, "Disks have an owner")
	if got, err := w.rules.Get(context.Background(), rule.ID, []string{"t1"}); err != nil || got != nil {
		t.Errorf("after delete: %+v, %v", got, err)
	}
	if entries := w.h.AuditEntries(); !slices.ContainsFunc(entries, func(e plugintest.AuditEntry) bool { return e.Action == "compliance_rule.delete.success" }) {
		t.Errorf("no audit entry of the deletion: %+v", entries)
	}
	if status, body := w.do(t, ownerOfAlpha, http.MethodDelete, path, nil); status != http.StatusNotFound {
		t.Errorf("deleting again: %d %s", status, body)
	}
	if status, body := w.do(t, ownerOfAlpha, http.MethodPost, strings.Replace(path, "?", "/dry-run?", 1), nil); status != http.StatusNotFound {
		t.Errorf("dry run of the deleted rule: %d %s", status, body)
	}
}

// testEditorTenants: Beta's user sees none of Alpha's rules and can
// neither create in Alpha, nor dry-run or delete Alpha's rule, naming
// either tenant; the admin picks a tenant first, and a rule is reached
// only under the tenant that has it.
func testEditorTenants(t *testing.T, w *editorWorld) {
	rule, html := w.create(t, ownerOfAlpha, "t1", ownerRule("Alpha's secret rule"))
	m := dryRunRE.FindStringSubmatch(html)
	if m == nil {
		t.Fatalf("no dry-run button: %s", html)
	}
	id := m[2]

	beta := w.ok(t, ownerOfBeta, http.MethodGet, views.PagePath, nil)
	contains(t, "Beta's page", beta, "No custom rules yet.", `hx-post="/partials/compliance-rules?tenant_id=t2"`)
	lacks(t, "Beta's page", beta, "Alpha&#39;s secret rule", "tenant_id=t1")
	if status, _ := w.do(t, ownerOfBeta, http.MethodGet, views.PagePath+"?tenant_id=t1", nil); status != http.StatusForbidden {
		t.Errorf("Beta's user on Alpha's page: %d", status)
	}
	for _, c := range []struct {
		method, path string
		form         url.Values
		want         int
	}{
		{http.MethodPost, createAt + "t1", ownerRule("Planted"), http.StatusForbidden},
		{http.MethodPost, views.RulesPath + "/" + id + "/dry-run?tenant_id=t1", nil, http.StatusForbidden},
		{http.MethodPost, views.RulesPath + "/" + id + "/dry-run?tenant_id=t2", nil, http.StatusNotFound},
		{http.MethodDelete, views.RulesPath + "/" + id + "?tenant_id=t1", nil, http.StatusForbidden},
		{http.MethodDelete, views.RulesPath + "/" + id + "?tenant_id=t2", nil, http.StatusNotFound},
	} {
		status, body := w.do(t, ownerOfBeta, c.method, c.path, c.form)
		if status != c.want {
			t.Errorf("Beta's user: %s %s: %d, want %d", c.method, c.path, status, c.want)
		}
		lacks(t, "Beta's answer", body, "Alpha&#39;s secret rule", "Alpha's secret rule", "disk-")
	}
	// Whatever the id, a tenant the caller may not see is refused; in its
	// own tenant an id no rule has is 404, and a body that is no form a
	// refused rule.
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{http.MethodDelete, views.RulesPath + "/0?tenant_id=t1", http.StatusForbidden},
		{http.MethodPost, views.RulesPath + "/0/dry-run?tenant_id=t1", http.StatusForbidden},
		{http.MethodDelete, views.RulesPath + "/0?tenant_id=t2", http.StatusNotFound},
		{http.MethodPost, views.RulesPath + "/0/dry-run?tenant_id=t2", http.StatusNotFound},
	} {
		if status, body := w.do(t, ownerOfBeta, c.method, c.path, nil); status != c.want {
			t.Errorf("Beta's user: %s %s: %d %s, want %d", c.method, c.path, status, body, c.want)
		}
	}
	req := httptest.NewRequest(http.MethodPost, createAt+"t2", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	resp := w.h.Do(req, ownerOfBeta)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a JSON body: %d", resp.StatusCode)
	}
	if got, err := w.rules.Get(context.Background(), rule.ID, []string{"t1"}); err != nil || got == nil {
		t.Errorf("Alpha's rule after Beta's attempts: %+v, %v", got, err)
	}
	if n := len(w.stored(t, "t1")); n != 1 {
		t.Errorf("Alpha has %d rules", n)
	}

	contains(t, "the admin's page without a tenant", w.ok(t, admin, http.MethodGet, views.PagePath, nil), "pick a tenant with the tenant picker")
	contains(t, "the admin's page of Alpha", w.ok(t, admin, http.MethodGet, views.PagePath+"?tenant_id=t1", nil), "Alpha&#39;s secret rule")
	lacks(t, "the admin's page of Beta", w.ok(t, admin, http.MethodGet, views.PagePath+"?tenant_id=t2", nil), "Alpha&#39;s secret rule")
	// Under Beta, the admin reaches no rule of Alpha's, though it may see both.
	if status, _ := w.do(t, admin, http.MethodPost, views.RulesPath+"/"+id+"/dry-run?tenant_id=t2", nil); status != http.StatusNotFound {
		t.Errorf("the admin's dry run of Alpha's rule under Beta: %d", status)
	}
	planted, _ := w.create(t, admin, "t2", ownerRule("Beta's rule"))
	if planted.TenantID != "t2" || planted.CreatedBy != admin.ID {
		t.Errorf("the admin's rule in Beta: %+v", planted)
	}
}

// testEditorEscaping: markup in a name never comes back raw, neither from
// a stored rule nor from a refused form that keeps it.
func testEditorEscaping(t *testing.T, w *editorWorld) {
	const script = `<script>alert("rule")</script>`
	rule, html := w.create(t, ownerOfAlpha, "t1", ownerRule(script+"Disks", func(f url.Values) { f.Set("rule_description", script) }))
	if rule.Name != "Disks" || rule.Description != nil {
		t.Errorf("stored %q, %v", rule.Name, rule.Description)
	}
	lacks(t, "the editor", html, "<script")
	status, refused := w.do(t, ownerOfAlpha, http.MethodPost, createAt+"t1", ownerRule(script+`"><img src=x>`, func(f url.Values) {
		f.Set("schema", `{"type": "nope"}`)
		f.Set("resource_type", script)
	}))
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, refused)
	}
	lacks(t, "the refused form", refused, "<script", "<img")
	contains(t, "the refused form", refused, `value="&lt;script&gt;alert(&#34;rule&#34;)&lt;/script&gt;&#34;&gt;&lt;img src=x&gt;"`)
	res := w.ok(t, ownerOfAlpha, http.MethodPost, dryRunRE.FindStringSubmatch(html)[1], nil)
	lacks(t, "the dry run", res, "<script")
}
