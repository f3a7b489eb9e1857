package views

import (
	"cmp"
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/plugins/compliance/rules"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Paths of the rule editor's form routes, each scoped to the tenant its
// query's tenant_id names.
const (
	// RulesPath creates a rule from the editor's form (POST) and answers
	// the editor re-rendered.
	RulesPath = "/partials/compliance-rules"
	// rulePath deletes a rule (DELETE) and answers the editor re-rendered.
	rulePath = RulesPath + "/{id}"
	// dryRunPath dry-runs a rule (POST) and answers its result.
	dryRunPath = RulesPath + "/{id}/dry-run"
)

// The rules' API routes the editor serves its forms through.
const (
	apiRules  = "/api/v1/compliance/rules"
	apiRule   = apiRules + "/{id}"
	apiDryRun = apiRules + "/{id}/evaluate"
)

// What the editor shows.
const (
	// rulesShown is how many rules the editor lists: the newest, oldest
	// first; the rest are the API's.
	rulesShown = 100
	// violationsShown is how many of a dry run's violations it lists.
	violationsShown = 10
	// maxFormBytes bounds a form: a schema of rules.MaxSchemaBytes with
	// its indentation, percent-encoded.
	maxFormBytes = 1 << 20
)

// schemaExample is the schema field's placeholder: a resource_property
// rule that wants an owner tag.
const schemaExample = `{
  "type": "object",
  "required": ["tags"],
  "properties": {
    "tags": {"type": "object", "required": ["owner"]}
  }
}`

// RuleEditor is the compliance page's section of custom rules: the
// rules of the tenant in scope, each with a Dry run and a Delete button,
// and a form that creates one. Its buttons and form post with htmx to the
// editor's own routes (Routes), whose requests carry the session's CSRF
// token like every htmx request of the host's pages; each answers HTML
// that htmx swaps in place, a refused rule too (200, with each error
// beside the field it names and the input kept), since htmx swaps no
// error answer.
//
// The routes serve the rules' API routes in this process, as the caller
// scoped to the one tenant, so a form meets the API's validation, markup
// removal and audit exactly as a call of the API would. That in-process
// call passes no host, so the dry-run route declares the costly rate class
// itself: the host then counts the button's dry runs and the API's against
// the caller's one costly budget. Over it the host answers 429 before the
// plugin sees the request; the page's script shows that answer in the
// result's live region, saying when to try again. The editor lists
// through the rules' store.
type RuleEditor struct {
	// Rules are the rules' API handlers.
	Rules *rules.Handlers

	api sdk.LocalAPI
}

// Section is the editor as a section of the compliance page.
func (e *RuleEditor) Section() Section {
	return Section{Title: "Custom rules", Render: e.render}
}

// EditorTenant is the tenant a form route acts on, which the host checks.
type EditorTenant struct {
	Tenant sdk.TenantID `query:"tenant_id" required:"true" doc:"The tenant whose rules the editor shows, one the caller may see"`
}

type createIn struct {
	EditorTenant
	// RawBody is the form, which huma does not bind.
	RawBody []byte `contentType:"application/x-www-form-urlencoded"`
}

type ruleIn struct {
	EditorTenant
	// No minimum: an id no rule has is 404 once the tenant is admitted,
	// so a caller outside the tenant is refused whatever id it names.
	ID int64 `path:"id"`
}

// fragment is an answer of HTML that htmx swaps in.
type fragment struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

func htmlOf(h template.HTML) *fragment {
	return &fragment{ContentType: "text/html; charset=utf-8", Body: []byte(h)}
}

// Routes are the editor's form routes.
func (e *RuleEditor) Routes() []sdk.Route {
	e.api.Routes = e.Rules.Routes
	tags := []string{"compliance"}
	notFound := &huma.Response{Description: "The tenant has no such rule"}
	return []sdk.Route{
		sdk.Post(RulesPath, sdk.Op{ID: "compliance-rules-editor-create", Tags: tags, Summary: "Create a custom rule from the compliance page's form",
			Description: "Creates the rule as POST /api/v1/compliance/rules does, in the tenant named, and answers the rule editor as HTML: " +
				"with the new rule listed, or, when the rule is refused, with each error beside the field it names and the form as it was sent.",
			RequestBody: &huma.RequestBody{Description: "The form", Required: true, Content: map[string]*huma.MediaType{
				"application/x-www-form-urlencoded": {Schema: sdk.SchemaOf(ruleForm{})}}},
			Responses: map[string]*huma.Response{"200": htmlResponse("The rule editor")}}, e.create),
		sdk.Delete(rulePath, sdk.Op{ID: "compliance-rules-editor-delete", Tags: tags, Summary: "Delete a custom rule from the compliance page",
			Description: "Deletes the rule as DELETE /api/v1/compliance/rules/{id} does (a soft delete) and answers the rule editor as HTML. " +
				"A rule the tenant does not have (or no longer has) is 404.",
			Status: http.StatusOK, Responses: map[string]*huma.Response{"200": htmlResponse("The rule editor"), "404": notFound}}, e.delete),
		sdk.Post(dryRunPath, sdk.Op{ID: "compliance-rules-editor-dry-run", Tags: tags, RateClass: sdk.RateCostly, Summary: "Dry-run a custom rule from the compliance page",
			Description: "Dry-runs the rule as POST /api/v1/compliance/rules/{id}/evaluate does, drawing on the same per-user budget of costly requests " +
				"(STEWARD_COSTLY_RATE_LIMIT_PER_MINUTE), and answers its result as HTML: how many violations, and the first " + strconv.Itoa(violationsShown) +
				" with their subject, instance path and message. Data that could not be read is said in the HTML; too many dry runs are the host's 429 with Retry-After.",
			Responses: map[string]*huma.Response{"200": htmlResponse("The dry run's result"), "404": notFound}}, e.dryRun),
	}
}

// ruleForm documents the editor's form; create reads it.
type ruleForm struct {
	RuleName        string `json:"rule_name" doc:"The rule's name"`
	RuleDescription string `json:"rule_description,omitempty" required:"false"`
	Category        string `json:"category" enum:"resource_property,compliance_score,mfa_coverage"`
	ResourceType    string `json:"resource_type,omitempty" required:"false" doc:"Required for resource_property, refused for the other categories"`
	Severity        string `json:"severity,omitempty" required:"false" enum:"Low,Medium,High,Critical"`
	Effect          string `json:"effect,omitempty" required:"false" enum:"audit,disabled"`
	Schema          string `json:"schema" doc:"The JSON Schema, as JSON text"`
}

func htmlResponse(desc string) *huma.Response {
	return &huma.Response{Description: desc, Content: map[string]*huma.MediaType{"text/html": {Schema: &huma.Schema{Type: huma.TypeString}}}}
}

// render is the section on the page: the editor of the one tenant in
// scope, or a word to pick one.
func (e *RuleEditor) render(r *http.Request, tenants []string) (template.HTML, error) {
	switch len(tenants) {
	case 0:
		return sdkui.Empty("You may see no tenant, so there are no custom rules to show."), nil
	case 1:
		return e.editor(r.Context(), tenants[0], editorState{})
	}
	return sdkui.Empty("Custom rules belong to one tenant: pick a tenant with the tenant picker to see, try and edit its rules."), nil
}

// apiPath is an API route's path for the rule.
func apiPath(pattern string, id int64) string {
	return strings.Replace(pattern, "{id}", strconv.FormatInt(id, 10), 1)
}

// owned is a 404 unless the tenant has the rule.
func (e *RuleEditor) owned(ctx context.Context, tenant string, id int64) error {
	rule, err := e.Rules.Store.Get(ctx, id, []string{tenant})
	if err == nil && rule == nil {
		err = sdk.NotFound("no rule " + strconv.FormatInt(id, 10))
	}
	return err
}

// editorState is what the editor shows beyond the rules: a notice of
// what was done, and the form as it was sent with its errors.
type editorState struct {
	notice string
	input  url.Values
	errors map[string][]string
	// general are the errors of no field of the form.
	general []string
}

// create creates a rule from the form through the API's route and
// answers the editor: the rule listed and the form empty, or the form as
// it was sent with the route's errors beside their fields.
func (e *RuleEditor) create(ctx context.Context, in *createIn) (*fragment, error) {
	tenant := string(in.Tenant)
	if len(in.RawBody) > maxFormBytes {
		return nil, sdk.Invalid("body", "must be a form of at most %d bytes", maxFormBytes)
	}
	form, err := url.ParseQuery(string(in.RawBody))
	if err != nil {
		return nil, sdk.Invalid("body", "must be a form: %v", err)
	}
	st := editorState{input: form, errors: map[string][]string{}}
	body := map[string]any{"tenant_id": tenant}
	for _, f := range []string{"rule_name", "rule_description", "category", "resource_type", "severity", "effect"} {
		if v := strings.TrimSpace(form.Get(f)); v != "" {
			body[f] = v
		}
	}
	// A schema that is not JSON cannot travel in the API's body: the rule
	// is checked without it, and the schema's error is the syntax error.
	var syntax error
	if s := strings.TrimSpace(form.Get("schema")); s != "" {
		var v json.RawMessage
		if syntax = json.Unmarshal([]byte(s), &v); syntax == nil {
			body["schema"] = v
		}
	}
	a, err := e.api.Call(ctx, tenant, http.MethodPost, apiRules, body)
	if err != nil {
		return nil, err
	}
	switch {
	case a.Status == http.StatusCreated:
		var v rules.View
		_ = a.Decode(&v)
		st = editorState{notice: "Rule “" + v.RuleName + "” created."}
	case a.Status < http.StatusInternalServerError:
		st.addProblem(a.Problem())
	default:
		return nil, a.Problem()
	}
	if syntax != nil {
		st.errors["schema"] = []string{"must be JSON: " + syntax.Error()}
	}
	return e.write(ctx, tenant, st)
}

// addProblem puts each of a refusal's errors beside the form field it
// names (body.<field>, or a JSON Pointer below body.schema), or among the
// general ones.
func (st *editorState) addProblem(p *sdk.Problem) {
	if len(p.Errors) == 0 {
		st.general = append(st.general, cmp.Or(p.Detail, p.Title))
		return
	}
	for _, d := range p.Errors {
		loc, ok := strings.CutPrefix(d.Location, "body.")
		msg := sdkui.FieldMessage(d)
		field, pointer, _ := strings.Cut(loc, "/")
		if pointer != "" {
			msg = "at /" + pointer + ": " + msg
		}
		if ok && editorFields[field] {
			st.errors[field] = append(st.errors[field], msg)
			continue
		}
		st.general = append(st.general, d.Location+": "+msg)
	}
}

// editorFields are the form's fields.
var editorFields = map[string]bool{"rule_name": true, "rule_description": true, "category": true, "resource_type": true,
	"severity": true, "effect": true, "schema": true}

// delete deletes the rule through the API's route and answers the editor.
func (e *RuleEditor) delete(ctx context.Context, in *ruleIn) (*fragment, error) {
	tenant := string(in.Tenant)
	if err := e.owned(ctx, tenant, in.ID); err != nil {
		return nil, err
	}
	a, err := e.api.Call(ctx, tenant, http.MethodDelete, apiPath(apiRule, in.ID), nil)
	if err != nil {
		return nil, err
	}
	if a.Status != http.StatusNoContent {
		return nil, a.Problem()
	}
	return e.write(ctx, tenant, editorState{notice: "Rule deleted."})
}

// write answers the editor.
func (e *RuleEditor) write(ctx context.Context, tenant string, st editorState) (*fragment, error) {
	html, err := e.editor(ctx, tenant, st)
	if err != nil {
		return nil, err
	}
	return htmlOf(html), nil
}

// dryRun dry-runs the rule through the API's route and answers the
// result, or why there is none. The host has already counted it against
// the caller's costly budget (the route's rate class).
func (e *RuleEditor) dryRun(ctx context.Context, in *ruleIn) (*fragment, error) {
	tenant := string(in.Tenant)
	if err := e.owned(ctx, tenant, in.ID); err != nil {
		return nil, err
	}
	a, err := e.api.Call(ctx, tenant, http.MethodPost, apiPath(apiDryRun, in.ID), nil)
	if err != nil {
		return nil, err
	}
	switch a.Status {
	case http.StatusOK:
	case http.StatusServiceUnavailable:
		return htmlOf(sdkui.ErrorState("The rule's data could not be read (it comes from another plugin's dataset). Try again later.")), nil
	default:
		return nil, a.Problem()
	}
	var res rules.DryRun
	if err := a.Decode(&res); err != nil {
		return nil, err
	}
	return htmlOf(dryRunResult(res)), nil
}

// dryRunResult is a dry run's figures and its first violations.
func dryRunResult(res rules.DryRun) template.HTML {
	type item struct{ Subject, Name, Path, Message string }
	items := make([]item, 0, min(len(res.Violations), violationsShown))
	for _, v := range res.Violations[:min(len(res.Violations), violationsShown)] {
		path := v.InstancePath
		if path == "" {
			path = "the record"
		}
		items = append(items, item{v.Subject, v.SubjectName, path, v.Message})
	}
	summary := count(int64(res.ViolationCount)) + " violations in " + count(int64(res.NonCompliantSubjects)) + " of " +
		count(int64(res.SubjectsEvaluated)) + " records"
	if res.ViolationCount == 1 {
		summary = "1 violation in 1 of " + count(int64(res.SubjectsEvaluated)) + " records"
	}
	more := ""
	if res.ViolationCount > len(items) {
		more = "The first " + strconv.Itoa(len(items)) + " are shown; POST " + apiPath(apiDryRun, res.RuleID) + " lists up to 1,000."
	}
	return render("dry-run", struct {
		Summary string
		At      template.HTML
		Items   []item
		More    string
	}{summary, sdkui.Time(res.EvaluatedAt), items, more})
}

// choice is an option of a select.
type choice struct {
	Value, Label string
	Selected     bool
}

// field is one field of the form.
type field struct {
	ID, Name, Label, Kind string
	Value, Hint           string
	Placeholder           string
	Required              bool
	MaxLength, Rows       int
	Options               []choice
	Errors                []string
}

// Described is the ids of the field's hint and errors.
func (f field) Described() string { return sdkui.DescribedBy(f.ID, f.Hint != "", len(f.Errors) > 0) }

func options(values []string, selected string, label func(string) string) []choice {
	out := make([]choice, len(values))
	for i, v := range values {
		out[i] = choice{Value: v, Label: label(v), Selected: v == selected}
	}
	return out
}

func same(s string) string { return s }

// categoryLabels name the categories in the form.
var categoryLabels = map[string]string{
	rules.CategoryResourceProperty: "Resource property (each resource of a type)",
	rules.CategoryComplianceScore:  "Compliance score (the tenant's latest snapshot)",
	rules.CategoryMFACoverage:      "MFA coverage (the tenant's identity figures)",
}

// effectLabels name the effects in the form.
var effectLabels = map[string]string{
	rules.EffectAudit:    "Audit: evaluated at each sync, violations count",
	rules.EffectDisabled: "Disabled: evaluated by a dry run only",
}

// fields are the form's fields with the input and errors of st.
func (st editorState) fields() []field {
	in := func(name, fallback string) string {
		if st.input == nil {
			return fallback
		}
		return st.input.Get(name)
	}
	category := in("category", rules.CategoryResourceProperty)
	return []field{
		{ID: "rule-name", Name: "rule_name", Label: "Name", Kind: "input", Value: in("rule_name", ""), Required: true, MaxLength: 255},
		{ID: "rule-description", Name: "rule_description", Label: "Description (optional)", Kind: "textarea", Value: in("rule_description", ""), Rows: 2},
		{ID: "rule-category", Name: "category", Label: "Category", Kind: "select", Hint: "Which records the rule validates.",
			Options: options(rules.Categories, category, func(c string) string { return categoryLabels[c] })},
		{ID: "rule-resource-type", Name: "resource_type", Label: "Resource type", Kind: "input", Value: in("resource_type", ""), MaxLength: 255,
			Placeholder: "Microsoft.Compute/disks", Hint: "Required for a resource property rule, an ARM type such as Microsoft.Compute/disks; leave it empty for the other categories."},
		{ID: "rule-severity", Name: "severity", Label: "Severity", Kind: "select", Options: options(rules.Severities, in("severity", rules.DefaultSeverity), same)},
		{ID: "rule-effect", Name: "effect", Label: "Effect", Kind: "select", Options: options(rules.Effects, in("effect", rules.EffectAudit), func(e string) string { return effectLabels[e] })},
		{ID: "rule-schema", Name: "schema", Label: "JSON Schema", Kind: "textarea", Value: in("schema", ""), Required: true, Rows: 10, Placeholder: schemaExample,
			Hint: "A JSON Schema (draft 2020-12) each record must satisfy: at most 64 KiB, 10 levels of nesting, only local $ref, " +
				"at most 10,000 schema objects with every $ref counted as the part it names. " +
				"A resource's record has its name, location, sku, tags and properties."},
	}
}

// editor is the editor of the tenant's rules.
func (e *RuleEditor) editor(ctx context.Context, tenant string, st editorState) (template.HTML, error) {
	list, total, err := e.Rules.Store.List(ctx, rules.ListQuery{TenantIDs: []string{tenant}, Limit: rulesShown})
	if err == nil && total > rulesShown {
		// The newest, so that a rule just created is among them.
		list, total, err = e.Rules.Store.List(ctx, rules.ListQuery{TenantIDs: []string{tenant}, Limit: rulesShown, Offset: total - rulesShown})
	}
	if err != nil {
		return "", err
	}
	fields := st.fields()
	for i := range fields {
		fields[i].Errors = st.errors[fields[i].Name]
	}
	q := "?tenant_id=" + url.QueryEscape(tenant)
	body := sdkui.Empty("No custom rules yet. Create one with the form below.")
	if total > 0 {
		rows := make([][]any, 0, len(list))
		for i := range list {
			rule := &list[i]
			id := strconv.FormatInt(rule.ID, 10)
			kind := rule.Category
			if rule.ResourceType != nil {
				kind += " · " + *rule.ResourceType
			}
			description := ""
			if rule.Description != nil {
				description = *rule.Description
			}
			active := "No"
			if rule.IsActive {
				active = "Yes"
			}
			rows = append(rows, []any{
				render("rule-cell", struct{ Name, Description, Result string }{rule.Name, description, "compliance-rule-" + id + "-dry-run"}),
				kind, sdkui.Badge(rule.Severity, severityHealth[rule.Severity]), rule.Effect, active, sdkui.Time(rule.UpdatedAt),
				render("rule-actions", struct{ Name, DryRun, Delete, Result string }{rule.Name,
					strings.Replace(dryRunPath, "{id}", id, 1) + q, strings.Replace(rulePath, "{id}", id, 1) + q, "compliance-rule-" + id + "-dry-run"}),
			})
		}
		body = sdkui.Table([]string{"Rule", "Category", "Severity", "Effect", "Active", "Updated", "Actions"}, rows, "Custom rules of the tenant, oldest first")
		if total > len(list) {
			body = stack(body, render("note", "The newest "+strconv.Itoa(len(list))+" of "+strconv.Itoa(total)+" rules are shown; GET "+apiRules+" lists them all."))
		}
	}
	return render("rules", struct {
		Notice  string
		Rules   template.HTML
		Action  string
		Refused bool
		General []string
		Fields  []field
	}{st.notice, body, RulesPath + q, len(st.general)+len(st.errors) > 0, st.general, fields}), nil
}

func init() {
	template.Must(markup.New("editor").Parse(`
{{- define "rules" -}}
<div class="stack" id="compliance-rules">
<p class="muted">Each rule is a JSON Schema that the tenant's records of its category must satisfy. A dry run validates the current data and stores nothing; ` +
		`each user may run only a few a minute.</p>
{{- if .Notice}}<p role="status">{{.Notice}}</p>{{end}}
{{- .Rules}}
<form class="stack" method="post" action="{{.Action}}" hx-post="{{.Action}}" hx-target="#compliance-rules" hx-swap="outerHTML" hx-disabled-elt="find button">
<h3>New rule</h3>
{{- if .Refused}}<div class="alert" role="alert"><p>The rule was not created{{if .General}}:{{else}}; the fields marked below say why.{{end}}</p>
{{- if .General}}<ul>{{range .General}}<li>{{.}}</li>{{end}}</ul>{{end}}</div>{{end}}
{{- range .Fields}}{{template "rule-field" .}}{{end}}
<div><button class="btn btn-primary" type="submit">Create rule</button></div>
</form>
</div>
{{- end}}

{{- define "rule-field" -}}
<div class="field"><label for="{{.ID}}">{{.Label}}</label>
{{- if eq .Kind "select"}}<select id="{{.ID}}" name="{{.Name}}"{{if .Described}} aria-describedby="{{.Described}}"{{end}}{{if .Errors}} aria-invalid="true"{{end}}>
{{- range .Options}}<option value="{{.Value}}"{{if .Selected}} selected{{end}}>{{.Label}}</option>{{end -}}
</select>
{{- else if eq .Kind "textarea"}}<textarea id="{{.ID}}" name="{{.Name}}" rows="{{.Rows}}" cols="60"{{if eq .Name "schema"}} class="mono" spellcheck="false"{{end}}
{{- if .Placeholder}} placeholder="{{.Placeholder}}"{{end}}{{if .Required}} required{{end}}{{if .Described}} aria-describedby="{{.Described}}"{{end}}{{if .Errors}} aria-invalid="true"{{end}}>{{.Value}}</textarea>
{{- else}}<input id="{{.ID}}" name="{{.Name}}" type="text" value="{{.Value}}"{{if .MaxLength}} maxlength="{{.MaxLength}}"{{end}}
{{- if .Placeholder}} placeholder="{{.Placeholder}}"{{end}}{{if .Required}} required{{end}}{{if .Described}} aria-describedby="{{.Described}}"{{end}}{{if .Errors}} aria-invalid="true"{{end}}>
{{- end}}
{{- if .Hint}}<p class="muted" id="{{.ID}}-hint">{{.Hint}}</p>{{end}}
{{- if .Errors}}<p class="alert" id="{{.ID}}-error">{{range $i, $e := .Errors}}{{if $i}} {{end}}{{$e}}{{end}}</p>{{end -}}
</div>
{{- end}}

{{- define "rule-cell" -}}
{{.Name}}{{if .Description}}<br><span class="muted">{{.Description}}</span>{{end}}<div id="{{.Result}}" aria-live="polite"></div>
{{- end}}

{{- define "rule-actions" -}}
<button class="btn btn-small" type="button" hx-post="{{.DryRun}}" hx-target="#{{.Result}}" hx-swap="innerHTML" hx-disabled-elt="this">Dry run<span class="visually-hidden"> {{.Name}}</span></button>
<button class="btn btn-small" type="button" hx-delete="{{.Delete}}" hx-target="#compliance-rules" hx-swap="outerHTML" hx-confirm="Delete the rule {{.Name}}?" hx-disabled-elt="this">Delete<span class="visually-hidden"> {{.Name}}</span></button>
{{- end}}

{{- define "dry-run" -}}
<div class="stack"><p><strong>Dry run: {{.Summary}}</strong> <span class="muted">at {{.At}}; nothing stored.</span></p>
{{- if .Items}}<ul>{{range .Items}}<li>{{.Name}} <span class="muted">{{.Subject}}</span> at <code>{{.Path}}</code>: {{.Message}}</li>{{end}}</ul>{{end}}
{{- if .More}}<p class="muted">{{.More}}</p>{{end -}}
</div>
{{- end}}
`))
}
