package views

import (
	"cmp"
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/plugins/cost/budgets"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Paths of the budget editor's form routes, each scoped to the tenant its
// query's tenant_id names.
const (
	// BudgetsPath answers the editor (GET, with edit naming a budget to
	// change) and creates a budget from its form (POST).
	BudgetsPath = "/partials/cost-budgets"
	// budgetPath changes (PATCH) or deletes (DELETE) a budget.
	budgetPath = BudgetsPath + "/{budget_id}"
	apiBudgets = "/api/v1/budgets"
)

// Bounds of the form.
const (
	// thresholdRows is how many threshold rows the form has: as many as a
	// budget may have.
	thresholdRows = 5
	// maxForm bounds the body of the page's forms, the budget form's and an
	// anomaly's acknowledgement.
	maxForm = 64 << 10
)

// BudgetEditor serves the cost page's budget section for one tenant: its
// budgets with Edit and Delete buttons, and a form that creates one or
// changes the one being edited. Its form and buttons send htmx requests
// (which carry the session's CSRF token, as every htmx request of the
// host's pages does) to the editor's routes, which serve the budget API's
// routes in this process, as the caller scoped to the one tenant: a form
// meets the API's validation, and its change the API's audit, exactly as
// a call of the API would. Each answers the section as HTML, a refused
// form too (200, each error beside the field it names, the input kept),
// since htmx swaps no error answer.
type BudgetEditor struct {
	API   *budgets.Handlers
	Views *Handlers

	api sdk.LocalAPI
}

type budgetFormIn struct {
	FormTenant
	RawBody []byte `contentType:"application/x-www-form-urlencoded"`
}

type budgetChangeIn struct {
	FormTenant
	// No uuid format: an id no budget of the tenant has is 404 once the
	// tenant is admitted, so a caller outside it learns nothing.
	ID      string `path:"budget_id" maxLength:"64"`
	RawBody []byte `contentType:"application/x-www-form-urlencoded"`
}

type budgetDeleteIn struct {
	FormTenant
	ID string `path:"budget_id" maxLength:"64"`
}

type budgetSectionIn struct {
	FormTenant
	Edit string `query:"edit" maxLength:"64" doc:"A budget of the tenant whose values fill the form, to change it"`
}

// budgetForm documents the editor's form; formBudget reads it.
type budgetForm struct {
	Name           string `json:"name"`
	Amount         string `json:"amount" doc:"A number, at most two decimals"`
	Currency       string `json:"currency,omitempty" required:"false"`
	TimeGrain      string `json:"time_grain" enum:"Monthly,Quarterly,Annually"`
	StartDate      string `json:"start_date" format:"date"`
	EndDate        string `json:"end_date,omitempty" required:"false" format:"date" doc:"Empty for no end"`
	SubscriptionID string `json:"subscription_id,omitempty" required:"false" doc:"On create only; empty for a budget of the whole tenant"`
	Percentage     string `json:"thresholds[i].percentage,omitempty" required:"false" doc:"i from 0 to 4; a row whose members are all empty is left out"`
	ThresholdType  string `json:"thresholds[i].threshold_type,omitempty" required:"false" enum:"Actual,Forecasted"`
	ContactEmails  string `json:"thresholds[i].contact_emails,omitempty" required:"false" doc:"Addresses separated by commas or spaces"`
	Enabled        string `json:"notifications.enabled,omitempty" required:"false" enum:"true,false"`
	ContactRoles   string `json:"notifications.contact_roles,omitempty" required:"false" enum:"Owner,Contributor,Reader" doc:"Repeated, one per role"`
	ContactGroups  string `json:"notifications.contact_groups,omitempty" required:"false" doc:"Action group resource ids, one per line"`
}

// Routes are the editor's routes.
func (e *BudgetEditor) Routes() []sdk.Route {
	e.api.Routes = e.API.Routes
	tags := []string{"budgets"}
	section := htmlResponse("The budget section")
	notFound := &huma.Response{Description: "The tenant has no such budget"}
	return []sdk.Route{
		sdk.Get(BudgetsPath, sdk.Op{ID: "budgets-editor", Tags: tags, Summary: "The cost page's budget section of a tenant",
			Description: "The tenant's budgets with Edit and Delete buttons, and the form that creates one, or, with edit, changes that budget.",
			Responses:   map[string]*huma.Response{"200": section, "404": notFound}}, e.section),
		sdk.Post(BudgetsPath, sdk.Op{ID: "budgets-editor-create", Tags: tags, Summary: "Create a budget from the cost page's form",
			Description: "Creates the budget as POST /api/v1/budgets does, in the tenant named, and answers the budget section as HTML: with the " +
				"new budget listed or, when it is refused, with each error beside the field it names and the form as it was sent.",
			RequestBody: formBody(budgetForm{}), Responses: map[string]*huma.Response{"200": section}}, e.create),
		sdk.Patch(budgetPath, sdk.Op{ID: "budgets-editor-update", Tags: tags, Summary: "Change a budget from the cost page's form",
			Description: "Changes the budget as PATCH /api/v1/budgets/{budget_id} does and answers the budget section as HTML, a refusal as create's.",
			RequestBody: formBody(budgetForm{}), Responses: map[string]*huma.Response{"200": section, "404": notFound}}, e.update),
		sdk.Delete(budgetPath, sdk.Op{ID: "budgets-editor-delete", Tags: tags, Summary: "Delete a budget from the cost page",
			Description: "Deletes the budget as DELETE /api/v1/budgets/{budget_id} does and answers the budget section as HTML.",
			Status:      http.StatusOK, Responses: map[string]*huma.Response{"200": section, "404": notFound}}, e.delete),
	}
}

// budgetState is what the section shows beyond the budgets: a notice of
// what was done, the budget being edited, and the form as it was sent
// with its errors.
type budgetState struct {
	notice  string
	editing *budgets.Budget
	input   url.Values
	errors  map[string][]string
	// general are the errors of no field of the form.
	general []string
}

// owned is the tenant's budget of the id, or a 404.
func (e *BudgetEditor) owned(ctx context.Context, tenant, id string) (*budgets.Budget, error) {
	b, err := e.API.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if b == nil || b.TenantID != tenant {
		return nil, sdk.NotFound("no budget " + id)
	}
	return b, nil
}

func (e *BudgetEditor) section(ctx context.Context, in *budgetSectionIn) (*fragment, error) {
	st := budgetState{}
	if in.Edit != "" {
		b, err := e.owned(ctx, string(in.Tenant), in.Edit)
		if err != nil {
			return nil, err
		}
		st.editing, st.input = b, valuesOf(b)
	}
	return e.write(ctx, string(in.Tenant), st)
}

func (e *BudgetEditor) create(ctx context.Context, in *budgetFormIn) (*fragment, error) {
	tenant := string(in.Tenant)
	form, err := sdkui.ParseForm(in.RawBody, maxForm)
	if err != nil {
		return nil, err
	}
	body, rows := formBudget(form, true)
	body["tenant_id"] = tenant
	a, err := e.api.Call(ctx, tenant, http.MethodPost, apiBudgets, body)
	if err != nil {
		return nil, err
	}
	st := budgetState{input: form, errors: map[string][]string{}}
	switch {
	case a.Status == http.StatusCreated:
		st = budgetState{notice: "Budget “" + strings.TrimSpace(form.Get("name")) + "” created."}
	case a.Status < http.StatusInternalServerError:
		st.addProblem(a.Problem(), rows)
	default:
		return nil, a.Problem()
	}
	return e.write(ctx, tenant, st)
}

func (e *BudgetEditor) update(ctx context.Context, in *budgetChangeIn) (*fragment, error) {
	tenant := string(in.Tenant)
	b, err := e.owned(ctx, tenant, in.ID)
	if err != nil {
		return nil, err
	}
	form, err := sdkui.ParseForm(in.RawBody, maxForm)
	if err != nil {
		return nil, err
	}
	body, rows := formBudget(form, false)
	a, err := e.api.Call(ctx, tenant, http.MethodPatch, apiBudgets+"/"+url.PathEscape(b.ID), body)
	if err != nil {
		return nil, err
	}
	st := budgetState{editing: b, input: form, errors: map[string][]string{}}
	switch {
	case a.Status == http.StatusOK:
		st = budgetState{notice: "Budget “" + strings.TrimSpace(form.Get("name")) + "” saved."}
	case a.Status < http.StatusInternalServerError:
		st.addProblem(a.Problem(), rows)
	default:
		return nil, a.Problem()
	}
	return e.write(ctx, tenant, st)
}

func (e *BudgetEditor) delete(ctx context.Context, in *budgetDeleteIn) (*fragment, error) {
	tenant := string(in.Tenant)
	b, err := e.owned(ctx, tenant, in.ID)
	if err != nil {
		return nil, err
	}
	a, err := e.api.Call(ctx, tenant, http.MethodDelete, apiBudgets+"/"+url.PathEscape(b.ID), nil)
	if err != nil {
		return nil, err
	}
	st := budgetState{notice: "Budget “" + b.Name + "” deleted."}
	if a.Status != http.StatusNoContent {
		p := a.Problem()
		st = budgetState{notice: "Budget “" + b.Name + "” was not deleted: " + cmp.Or(p.Detail, p.Title)}
	}
	return e.write(ctx, tenant, st)
}

// jsonNumberRE is a JSON number, which the form's amount and percentages
// travel as; anything else travels as the string it is, for the API to
// refuse in its words.
var jsonNumberRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

func number(s string) any {
	if jsonNumberRE.MatchString(s) {
		return json.RawMessage(s)
	}
	return s
}

// formBudget is the API's body of the form, and for each of its thresholds
// the form's row it came from. Empty optional fields are left out on
// create; on a change, an empty end date clears it.
func formBudget(form url.Values, create bool) (map[string]any, []int) {
	get := func(k string) string { return strings.TrimSpace(form.Get(k)) }
	body := map[string]any{}
	for _, k := range []string{"name", "time_grain", "start_date", "currency"} {
		if v := get(k); v != "" {
			body[k] = v
		}
	}
	if v := get("amount"); v != "" {
		body["amount"] = number(v)
	}
	switch v := get("end_date"); {
	case v != "":
		body["end_date"] = v
	case !create:
		body["end_date"] = nil
	}
	if v := get("subscription_id"); v != "" && create {
		body["subscription_id"] = v
	}
	var thresholds []map[string]any
	var rows []int
	for i := range thresholdRows {
		pct, kind, emails := get(thresholdField(i, "percentage")), get(thresholdField(i, "threshold_type")), strings.Fields(strings.ReplaceAll(get(thresholdField(i, "contact_emails")), ",", " "))
		if pct == "" && len(emails) == 0 {
			continue
		}
		t := map[string]any{"contact_emails": emails}
		if pct != "" {
			t["percentage"] = number(pct)
		}
		if kind != "" {
			t["threshold_type"] = kind
		}
		thresholds, rows = append(thresholds, t), append(rows, i)
	}
	body["thresholds"] = thresholds
	if thresholds == nil {
		body["thresholds"] = []any{}
	}
	roles := form["notifications.contact_roles"]
	if roles == nil {
		roles = []string{}
	}
	body["notifications"] = map[string]any{"enabled": get("notifications.enabled") != "false", "contact_roles": roles,
		"contact_groups": strings.Fields(get("notifications.contact_groups"))}
	return body, rows
}

func thresholdField(row int, member string) string {
	return "thresholds[" + strconv.Itoa(row) + "]." + member
}

// valuesOf is the form of a budget, to change it.
func valuesOf(b *budgets.Budget) url.Values {
	v := url.Values{"name": {b.Name}, "amount": {b.Amount.String()}, "currency": {b.Currency}, "time_grain": {b.TimeGrain},
		"start_date": {b.StartDay.String()}, "subscription_id": {b.SubscriptionID}, "notifications.enabled": {"true"}}
	if b.EndDay != nil {
		v.Set("end_date", b.EndDay.String())
	}
	for i, t := range b.Thresholds {
		v.Set(thresholdField(i, "percentage"), strconv.Itoa(t.Percentage))
		v.Set(thresholdField(i, "threshold_type"), t.ThresholdType)
		v.Set(thresholdField(i, "contact_emails"), strings.Join(t.ContactEmails, ", "))
	}
	if n := b.Notifications; n != nil {
		v.Set("notifications.enabled", strconv.FormatBool(n.Enabled))
		v["notifications.contact_roles"] = n.ContactRoles
		v.Set("notifications.contact_groups", strings.Join(n.ContactGroups, "\n"))
	}
	return v
}

// thresholdIndexRE is a threshold's index in an error's location.
var thresholdIndexRE = regexp.MustCompile(`^thresholds\[(\d+)\]`)

// itemIndexRE is an item's index at the end of an error's location, such
// as the third address of contact_emails[2].
var itemIndexRE = regexp.MustCompile(`\[(\d+)\]$`)

// addProblem puts each of a refusal's errors beside the form field it
// names (body.<member>, a threshold's by the form's row it came from), or
// among the general ones.
func (st *budgetState) addProblem(p *sdk.Problem, rows []int) {
	if len(p.Errors) == 0 {
		st.general = append(st.general, cmp.Or(p.Detail, p.Title))
		return
	}
	for _, d := range p.Errors {
		loc, ok := strings.CutPrefix(d.Location, "body.")
		msg := sdkui.FieldMessage(d)
		if m := thresholdIndexRE.FindStringSubmatch(loc); m != nil {
			if i, err := strconv.Atoi(m[1]); err == nil && i < len(rows) {
				loc = "thresholds[" + strconv.Itoa(rows[i]) + "]" + loc[len(m[0]):]
			}
		}
		if m := itemIndexRE.FindStringSubmatch(loc); m != nil && budgetFields[strings.TrimSuffix(loc, m[0])] {
			i, _ := strconv.Atoi(m[1])
			loc, msg = strings.TrimSuffix(loc, m[0]), "item "+strconv.Itoa(i+1)+": "+msg
		}
		if ok && budgetFields[loc] {
			st.errors[loc] = append(st.errors[loc], msg)
			continue
		}
		st.general = append(st.general, "Field "+strings.TrimPrefix(d.Location, "body.")+": "+msg)
	}
}

// budgetFields are the form's fields by name.
var budgetFields = func() map[string]bool {
	out := map[string]bool{"name": true, "amount": true, "currency": true, "time_grain": true, "start_date": true, "end_date": true,
		"subscription_id": true, "thresholds": true, "notifications": true, "notifications.enabled": true,
		"notifications.contact_roles": true, "notifications.contact_groups": true}
	for i := range thresholdRows {
		for _, m := range []string{"percentage", "threshold_type", "contact_emails"} {
			out[thresholdField(i, m)] = true
		}
	}
	return out
}()

// write answers the section.
func (e *BudgetEditor) write(ctx context.Context, tenant string, st budgetState) (*fragment, error) {
	html, err := e.render(ctx, tenant, st)
	if err != nil {
		return nil, err
	}
	return htmlOf(html), nil
}

// formField is one field of the form.
type formField struct {
	ID, Name, Label, Kind string
	Value, Hint           string
	Required              bool
	Options               []formChoice
	Errors                []string
}

// formChoice is an option of a select or a checkbox.
type formChoice struct {
	Value, Label string
	Selected     bool
}

// Described is the ids of the field's hint and errors.
func (f formField) Described() string {
	return sdkui.DescribedBy(f.ID, f.Hint != "", len(f.Errors) > 0)
}

func choices(values []string, selected ...string) []formChoice {
	out := make([]formChoice, len(values))
	for i, v := range values {
		out[i] = formChoice{Value: v, Label: v, Selected: slices.Contains(selected, v)}
	}
	return out
}

// thresholdRow is a row of the thresholds' fields.
type thresholdRow struct {
	Label                    string
	Percentage, Type, Emails formField
}

// fields are the form's fields with the input and errors of st: the
// budget's, then its thresholds', then its notifications'.
func (st budgetState) fields() ([]formField, []thresholdRow, []formField) {
	in := func(name, fallback string) string {
		if st.input == nil {
			return fallback
		}
		return st.input.Get(name)
	}
	field := func(f formField) formField {
		f.Errors = st.errors[f.Name]
		return f
	}
	main := []formField{
		field(formField{ID: "budget-name", Name: "name", Label: "Name", Kind: "text", Value: in("name", ""), Required: true,
			Hint: "Unique in the tenant and scope; at most 100 characters."}),
		field(formField{ID: "budget-amount", Name: "amount", Label: "Amount per period", Kind: "decimal", Value: in("amount", ""), Required: true,
			Hint: "More than 0, at most two decimals."}),
		field(formField{ID: "budget-currency", Name: "currency", Label: "Currency", Kind: "text", Value: in("currency", "USD"),
			Hint: "An ISO 4217 code of three capital letters; only costs in this currency count."}),
		field(formField{ID: "budget-time-grain", Name: "time_grain", Label: "Period", Kind: "select",
			Options: choices([]string{budgets.Monthly, budgets.Quarterly, budgets.Annually}, in("time_grain", budgets.Monthly))}),
		field(formField{ID: "budget-start-date", Name: "start_date", Label: "Start date", Kind: "date", Value: in("start_date", ""), Required: true,
			Hint: "The first day of a month."}),
		field(formField{ID: "budget-end-date", Name: "end_date", Label: "End date (optional)", Kind: "date", Value: in("end_date", "")}),
	}
	sub := formField{ID: "budget-subscription", Name: "subscription_id", Label: "Subscription (optional)", Kind: "text", Value: in("subscription_id", ""),
		Hint: "A subscription of the tenant; empty for a budget of the whole tenant."}
	if st.editing != nil {
		sub.Kind, sub.Hint = "readonly", "The scope of a budget cannot change; empty is the whole tenant."
	}
	main = append(main, field(sub))
	rows := make([]thresholdRow, thresholdRows)
	for i := range rows {
		id := "budget-threshold-" + strconv.Itoa(i)
		kind := in(thresholdField(i, "threshold_type"), budgets.Actual)
		// A new budget's first threshold is the usual 80 %.
		pct := ""
		if i == 0 {
			pct = "80"
		}
		rows[i] = thresholdRow{Label: "Threshold " + strconv.Itoa(i+1),
			Percentage: field(formField{ID: id + "-percentage", Name: thresholdField(i, "percentage"), Label: "Percent of the amount", Kind: "decimal",
				Value: in(thresholdField(i, "percentage"), pct)}),
			Type: field(formField{ID: id + "-type", Name: thresholdField(i, "threshold_type"), Label: "Compared with", Kind: "select",
				Options: []formChoice{{budgets.Actual, "Actual spend", kind == budgets.Actual}, {budgets.Forecasted, "Forecast", kind == budgets.Forecasted}}}),
			Emails: field(formField{ID: id + "-emails", Name: thresholdField(i, "contact_emails"), Label: "E-mail addresses (optional)", Kind: "text",
				Value: in(thresholdField(i, "contact_emails"), "")}),
		}
	}
	enabled := in("notifications.enabled", "true")
	roles := []string{}
	if st.input != nil {
		roles = st.input["notifications.contact_roles"]
	}
	notify := []formField{
		field(formField{ID: "budget-notify-enabled", Name: "notifications.enabled", Label: "Provider e-mails", Kind: "select",
			Options: []formChoice{{"true", "Sent", enabled != "false"}, {"false", "Not sent", enabled == "false"}}}),
		field(formField{ID: "budget-notify-roles", Name: "notifications.contact_roles", Label: "Also tell these roles on the subscription", Kind: "checkboxes",
			Options: choices([]string{"Owner", "Contributor", "Reader"}, roles...)}),
		field(formField{ID: "budget-notify-groups", Name: "notifications.contact_groups", Label: "Also tell these action groups (optional)", Kind: "textarea",
			Value: in("notifications.contact_groups", ""), Hint: "Action group resource ids, one per line."}),
	}
	return main, rows, notify
}

// render is the section of the tenant's budgets.
func (e *BudgetEditor) render(ctx context.Context, tenant string, st budgetState) (template.HTML, error) {
	list, err := e.Views.budgetList(ctx, []string{tenant}, tenant)
	if err != nil {
		return "", err
	}
	main, rows, notify := st.fields()
	q := "?tenant_id=" + url.QueryEscape(tenant)
	data := struct {
		Notice, Heading, Action, Cancel, Submit string
		List                                    template.HTML
		Open, Patch, Refused                    bool
		General                                 []string
		Main, Notify                            []formField
		Rows                                    []thresholdRow
		ThresholdErrors                         []string
	}{Notice: st.notice, Heading: "New budget", Action: BudgetsPath + q, Submit: "Create budget", List: list,
		Open: st.input != nil, Refused: len(st.general)+len(st.errors) > 0, General: st.general, Main: main, Notify: notify, Rows: rows,
		ThresholdErrors: st.errors["thresholds"]}
	if b := st.editing; b != nil {
		data.Heading, data.Patch, data.Submit = "Change budget “"+b.Name+"”", true, "Save budget"
		data.Action = strings.Replace(budgetPath, "{budget_id}", url.PathEscape(b.ID), 1) + q
		data.Cancel = BudgetsPath + q
	}
	data.General = append(data.General, st.errors["notifications"]...)
	return render("budget-section", data), nil
}

// budgetActions are a budget's Edit and Delete buttons in the tenant's
// section; a budget pulled from the provider is the provider's to change.
func budgetActions(b *budgets.Budget, tenant string) template.HTML {
	q := "?tenant_id=" + url.QueryEscape(tenant)
	path := strings.Replace(budgetPath, "{budget_id}", url.PathEscape(b.ID), 1) + q
	edit := ""
	if b.Source == budgets.SourceSteward {
		edit = BudgetsPath + q + "&edit=" + url.QueryEscape(b.ID)
	}
	return render("budget-actions", struct{ Name, Edit, Delete string }{b.Name, edit, path})
}

func init() {
	template.Must(markup.New("budget-editor").Parse(`
{{- define "budget-section" -}}
<div class="stack" id="cost-budgets">
{{- if .Notice}}<p role="status">{{.Notice}}</p>{{end}}
{{- .List}}
<details class="stack"{{if or .Open .Cancel}} open{{end}}>
<summary>{{.Heading}}</summary>
<form class="stack" method="post" action="{{.Action}}" {{if .Patch}}hx-patch{{else}}hx-post{{end}}="{{.Action}}" hx-target="#cost-budgets" hx-swap="outerHTML" hx-disabled-elt="find button">
{{- if .Refused}}<div class="alert" role="alert"><p>The budget was not saved{{if .General}}:{{else}}; the fields marked below say why.{{end}}</p>
{{- if .General}}<ul>{{range .General}}<li>{{.}}</li>{{end}}</ul>{{end}}</div>{{end}}
{{- range .Main}}{{template "budget-field" .}}{{end}}
<fieldset class="stack"><legend>Thresholds</legend>
<p class="muted">One to five; each alerts when the spend (or its forecast) reaches that percent of the amount. A row without a percentage and addresses is left out.</p>
{{- if .ThresholdErrors}}<p class="alert">{{range $i, $e := .ThresholdErrors}}{{if $i}} {{end}}{{$e}}{{end}}</p>{{end}}
{{- range .Rows}}<div class="swatches" role="group" aria-label="{{.Label}}">{{template "budget-field" .Percentage}}{{template "budget-field" .Type}}{{template "budget-field" .Emails}}</div>{{end}}
</fieldset>
<fieldset class="stack"><legend>Notifications at the provider</legend>
{{- range .Notify}}{{template "budget-field" .}}{{end}}
</fieldset>
<div><button class="btn btn-primary" type="submit">{{.Submit}}</button>
{{- if .Cancel}} <button class="btn" type="button" hx-get="{{.Cancel}}" hx-target="#cost-budgets" hx-swap="outerHTML">Cancel</button>{{end}}</div>
</form>
</details>
</div>
{{- end}}

{{- define "budget-field" -}}
<div class="field">
{{- if eq .Kind "checkboxes"}}<fieldset><legend>{{.Label}}</legend>{{range $i, $o := .Options}}<label><input type="checkbox" id="{{$.ID}}-{{$i}}" name="{{$.Name}}" value="{{.Value}}"{{if .Selected}} checked{{end}}> {{.Label}}</label> {{end}}</fieldset>
{{- else}}<label for="{{.ID}}">{{.Label}}</label>
{{- if eq .Kind "select"}}<select id="{{.ID}}" name="{{.Name}}"{{if .Described}} aria-describedby="{{.Described}}"{{end}}{{if .Errors}} aria-invalid="true"{{end}}>
{{- range .Options}}<option value="{{.Value}}"{{if .Selected}} selected{{end}}>{{.Label}}</option>{{end -}}
</select>
{{- else if eq .Kind "textarea"}}<textarea id="{{.ID}}" name="{{.Name}}" rows="2" cols="60" spellcheck="false"{{if .Described}} aria-describedby="{{.Described}}"{{end}}{{if .Errors}} aria-invalid="true"{{end}}>{{.Value}}</textarea>
{{- else if eq .Kind "readonly"}}<input id="{{.ID}}" type="text" value="{{.Value}}" readonly{{if .Described}} aria-describedby="{{.Described}}"{{end}}>
{{- else}}<input id="{{.ID}}" name="{{.Name}}" type="{{if eq .Kind "date"}}date{{else}}text{{end}}" value="{{.Value}}"{{if eq .Kind "decimal"}} inputmode="decimal"{{end}}
{{- if .Required}} required{{end}}{{if .Described}} aria-describedby="{{.Described}}"{{end}}{{if .Errors}} aria-invalid="true"{{end}}>
{{- end}}{{end}}
{{- if .Hint}}<p class="muted" id="{{.ID}}-hint">{{.Hint}}</p>{{end}}
{{- if .Errors}}<p class="alert" id="{{.ID}}-error">{{range $i, $e := .Errors}}{{if $i}} {{end}}{{$e}}{{end}}</p>{{end -}}
</div>
{{- end}}

{{- define "budget-actions" -}}
{{- if .Edit}}<button class="btn btn-small" type="button" hx-get="{{.Edit}}" hx-target="#cost-budgets" hx-swap="outerHTML">Edit<span class="visually-hidden"> {{.Name}}</span></button> {{end -}}
<button class="btn btn-small" type="button" hx-delete="{{.Delete}}" hx-target="#cost-budgets" hx-swap="outerHTML" hx-confirm="Delete the budget {{.Name}} and its alerts?" hx-disabled-elt="this">Delete<span class="visually-hidden"> {{.Name}}</span></button>
{{- end}}
`))
}
