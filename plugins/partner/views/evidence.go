package views

import (
	"cmp"
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/plugins/partner/evidence"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Paths of the evidence panel's form routes, each scoped to the tenant its
// query's tenant_id names and to the requirement of its path.
const (
	// EvidencePath starts a requirement's evidence (POST).
	EvidencePath    = "/partials/partner-evidence/{requirement_id}"
	evidenceEdit    = EvidencePath + "/edit"
	evidenceStatus  = EvidencePath + "/status"
	evidenceReview  = EvidencePath + "/review"
	evidenceFiles   = EvidencePath + "/files"
	evidenceFile    = evidenceFiles + "/{file_id}"
	apiEvidence     = "/api/v1/partner/evidence"
	maxEvidenceForm = 64 << 10
)

// evidenceFields are the panel's form fields, named as the API's members.
var evidenceFields = map[string]bool{"owner": true, "due_date": true, "notes": true, "decision": true, "reason": true,
	"validity_days": true, "file": true}

// statusMoves label the buttons of the lifecycle's moves by where they
// start and go.
var statusMoves = map[[2]string]string{
	{evidence.StatusNotStarted, evidence.StatusInProgress}: "Start work",
	{evidence.StatusInProgress, evidence.StatusSubmitted}:  "Submit for review",
	{evidence.StatusInProgress, evidence.StatusNotStarted}: "Reset to not started",
	{evidence.StatusSubmitted, evidence.StatusInProgress}:  "Withdraw from review",
	{evidence.StatusRejected, evidence.StatusInProgress}:   "Rework",
	{evidence.StatusExpired, evidence.StatusInProgress}:    "Renew",
}

var evidenceHealth = map[string]sdkui.Health{evidence.StatusNotStarted: sdkui.Unknown, evidence.StatusInProgress: sdkui.Unknown,
	evidence.StatusSubmitted: sdkui.Warning, evidence.StatusAccepted: sdkui.OK, evidence.StatusRejected: sdkui.Critical,
	evidence.StatusExpired: sdkui.Critical}

// Target is what a form route acts on: the tenant its query names, which
// the host has checked the caller may see, and the requirement of its
// path (404 unless the catalogue has it).
type Target struct {
	Tenant      sdk.TenantID `query:"tenant_id" required:"true" doc:"The tenant whose evidence the form changes, one the caller may see"`
	Requirement string       `path:"requirement_id" maxLength:"100" doc:"A requirement of the partner's catalogue"`
}

// formIn is a form route's input: its target and its form body, read as
// sent and parsed here.
type formIn struct {
	Target
	RawBody []byte
}

type fileIn struct {
	Target
	ContentType string `header:"Content-Type" doc:"multipart/form-data with its boundary"`
	RawBody     []byte
}

type deleteFileIn struct {
	Target
	// No uuid format: an id no file has is 404 once the tenant is
	// admitted, so a caller outside the tenant is refused whatever id it
	// names, as the compliance rule editor's routes are.
	FileID string `path:"file_id" maxLength:"64" doc:"The file's id"`
}

// panelHTML is a form route's answer: the requirement's evidence panel.
type panelHTML struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

// EvidenceRoutes are the form routes of the evidence panel on each
// requirement of the page. Like the compliance rule editor's, their
// requests carry the session's CSRF token as every htmx request of the
// host's pages does; each serves the evidence API's route in this process,
// as the caller scoped to the one tenant, so a form meets the API's
// validation, lifecycle and audit, and answers the panel re-rendered (a
// refusal too, with each error beside the field it names, since htmx swaps
// no error answer).
func (h *Handlers) EvidenceRoutes() []sdk.Route {
	h.api.Routes = h.Evidence.Routes
	panel := map[string]*huma.Response{"200": {Description: "The requirement's evidence panel, with each error of a refusal beside its field",
		Content: map[string]*huma.MediaType{"text/html": {Schema: &huma.Schema{Type: huma.TypeString}}}}}
	form := func(v any) *huma.RequestBody {
		return &huma.RequestBody{Description: "The form", Required: true, Content: map[string]*huma.MediaType{
			"application/x-www-form-urlencoded": {Schema: sdk.SchemaOf(v)}}}
	}
	op := func(id, summary, desc string, body *huma.RequestBody) sdk.Op {
		return sdk.Op{ID: "partner-evidence-form-" + id, Tags: []string{"partner-evidence"}, Summary: summary, Description: desc,
			Errors: []int{http.StatusNotFound}, Responses: panel, RequestBody: body}
	}
	review := op("review", "Accept or reject submitted evidence from the partner page (admin)", "As POST "+apiEvidence+"/{id}/review does.", form(reviewForm{}))
	review.Auth = sdk.AuthAdmin
	return []sdk.Route{
		sdk.Post(EvidencePath, op("start", "Start evidence from the partner page",
			"Creates the tenant's evidence for the requirement, in_progress, as POST "+apiEvidence+" does.", form(startForm{})), h.startEvidence),
		sdk.Post(evidenceEdit, op("edit", "Change evidence's owner, due date and notes from the partner page",
			"As PATCH "+apiEvidence+"/{id} does; an empty field clears it.", form(editForm{})), h.editEvidence),
		sdk.Post(evidenceStatus, op("status", "Move evidence along its lifecycle from the partner page",
			"As PATCH "+apiEvidence+"/{id} with a status does: submit it for review, withdraw or rework it.", form(statusForm{})), h.moveEvidence),
		sdk.Post(evidenceReview, review, h.reviewEvidence),
		sdk.Post(evidenceFiles, op("upload", "Upload a file of evidence from the partner page",
			"Passes the file to POST "+apiEvidence+"/{id}/files, under its types and size limit.", &huma.RequestBody{Description: "The file, one part",
				Required: true, Content: map[string]*huma.MediaType{"multipart/form-data": {Schema: sdk.SchemaOf(uploadForm{})}}}), h.uploadEvidence),
		sdk.Delete(evidenceFile, op("delete-file", "Delete a file of evidence from the partner page",
			"As DELETE "+apiEvidence+"/{id}/files/{file_id} does.", nil), h.deleteEvidenceFile),
	}
}

// The forms, for the OpenAPI document.
type startForm struct {
	Owner   string `json:"owner,omitempty" required:"false" maxLength:"255"`
	DueDate string `json:"due_date,omitempty" required:"false" format:"date"`
}

type editForm struct {
	Owner   string `json:"owner,omitempty" required:"false" maxLength:"255" doc:"Empty clears it"`
	DueDate string `json:"due_date,omitempty" required:"false" doc:"A date, YYYY-MM-DD; empty clears it"`
	Notes   string `json:"notes,omitempty" required:"false" maxLength:"4000" doc:"Empty clears them"`
}

type statusForm struct {
	Status string `json:"status" enum:"not_started,in_progress,submitted"`
}

type reviewForm struct {
	Decision     string `json:"decision" enum:"accepted,rejected"`
	Reason       string `json:"reason" maxLength:"2000"`
	ValidityDays string `json:"validity_days,omitempty" required:"false" doc:"Days the acceptance holds, 1 to 3650; empty keeps the evidence's expiry"`
}

type uploadForm struct {
	File string `json:"file" format:"binary"`
}

// panelState is what a panel shows beyond the evidence: a notice of what
// was done, and the form as sent with its errors.
type panelState struct {
	notice  string
	input   url.Values
	errors  map[string][]string
	general []string
}

// addProblem puts each of a refusal's errors beside the field it names
// (body.<field>), or among the general ones.
func (st *panelState) addProblem(p *sdk.Problem) {
	if st.errors == nil {
		st.errors = map[string][]string{}
	}
	if len(p.Errors) == 0 {
		st.general = append(st.general, cmp.Or(p.Detail, p.Title))
		return
	}
	for _, d := range p.Errors {
		if field, ok := strings.CutPrefix(d.Location, "body."); ok && evidenceFields[field] {
			st.errors[field] = append(st.errors[field], d.Message)
			continue
		}
		st.general = append(st.general, d.Location+": "+d.Message)
	}
}

// requirement is the target's requirement, or a 404 when the catalogue
// has none of that id.
func (h *Handlers) requirement(t Target) (string, string, error) {
	if _, ok := h.Catalogue.Requirement(t.Requirement); !ok {
		return "", "", sdk.NotFound("no requirement " + t.Requirement)
	}
	return string(t.Tenant), t.Requirement, nil
}

// record is the tenant's evidence for the requirement, or nil.
func (h *Handlers) record(ctx context.Context, tenant, req string) (*evidence.Evidence, error) {
	list, _, err := h.Evidence.Store.List(ctx, evidence.ListQuery{TenantIDs: []string{tenant}, RequirementIDs: []string{req}, Limit: 1})
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return &list[0], nil
}

// existing is the target's evidence, or an error: 404 without one.
func (h *Handlers) existing(ctx context.Context, t Target) (string, *evidence.Evidence, error) {
	tenant, req, err := h.requirement(t)
	if err != nil {
		return "", nil, err
	}
	e, err := h.record(ctx, tenant, req)
	if err == nil && e == nil {
		err = sdk.NotFound("the tenant has no evidence for " + req)
	}
	return tenant, e, err
}

// finish answers the panel after an API call: done's notice when the call
// succeeded with want, the form's errors beside their fields when it was
// refused.
func (h *Handlers) finish(ctx context.Context, tenant, req string, a *sdk.Answer, want int, done string, input url.Values) (*panelHTML, error) {
	st := panelState{input: input}
	switch {
	case a.Status == want:
		st = panelState{notice: done}
	case a.Status < http.StatusInternalServerError && a.Status != http.StatusNotFound && a.Status != http.StatusForbidden:
		st.addProblem(a.Problem())
	default:
		return nil, a.Problem()
	}
	e, err := h.record(ctx, tenant, req)
	if err != nil {
		return nil, err
	}
	html, err := h.panel(ctx, tenant, req, e, nil, st, true)
	if err != nil {
		return nil, err
	}
	return &panelHTML{ContentType: "text/html; charset=utf-8", Body: []byte(html)}, nil
}

// textOrNull is a form field as a JSON member: null when empty.
func textOrNull(v url.Values, name string) any {
	if s := strings.TrimSpace(v.Get(name)); s != "" {
		return s
	}
	return nil
}

func (h *Handlers) startEvidence(ctx context.Context, in *formIn) (*panelHTML, error) {
	tenant, req, err := h.requirement(in.Target)
	if err != nil {
		return nil, err
	}
	f, err := sdkui.ParseForm(in.RawBody, maxEvidenceForm)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"tenant_id": tenant, "requirement_id": req, "status": evidence.StatusInProgress}
	for _, name := range []string{"owner", "due_date"} {
		if v := textOrNull(f, name); v != nil {
			body[name] = v
		}
	}
	a, err := h.api.Call(ctx, tenant, http.MethodPost, apiEvidence, body)
	if err != nil {
		return nil, err
	}
	return h.finish(ctx, tenant, req, a, http.StatusCreated, "Evidence started.", f)
}

func (h *Handlers) editEvidence(ctx context.Context, in *formIn) (*panelHTML, error) {
	tenant, e, err := h.existing(ctx, in.Target)
	if err != nil {
		return nil, err
	}
	f, err := sdkui.ParseForm(in.RawBody, maxEvidenceForm)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"owner": textOrNull(f, "owner"), "due_date": textOrNull(f, "due_date"), "notes": textOrNull(f, "notes")}
	a, err := h.api.Call(ctx, tenant, http.MethodPatch, apiEvidence+"/"+e.ID, body)
	if err != nil {
		return nil, err
	}
	return h.finish(ctx, tenant, e.RequirementID, a, http.StatusOK, "Evidence saved.", f)
}

func (h *Handlers) moveEvidence(ctx context.Context, in *formIn) (*panelHTML, error) {
	tenant, e, err := h.existing(ctx, in.Target)
	if err != nil {
		return nil, err
	}
	f, err := sdkui.ParseForm(in.RawBody, maxEvidenceForm)
	if err != nil {
		return nil, err
	}
	to := f.Get("status")
	a, err := h.api.Call(ctx, tenant, http.MethodPatch, apiEvidence+"/"+e.ID, map[string]any{"status": to})
	if err != nil {
		return nil, err
	}
	return h.finish(ctx, tenant, e.RequirementID, a, http.StatusOK, "Evidence is "+strings.ReplaceAll(to, "_", " ")+".", nil)
}

func (h *Handlers) reviewEvidence(ctx context.Context, in *formIn) (*panelHTML, error) {
	tenant, e, err := h.existing(ctx, in.Target)
	if err != nil {
		return nil, err
	}
	f, err := sdkui.ParseForm(in.RawBody, maxEvidenceForm)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"decision": f.Get("decision"), "reason": f.Get("reason")}
	if s := strings.TrimSpace(f.Get("validity_days")); s != "" {
		// A number travels as one; anything else as the text it is, which
		// the API names as not a whole number of days.
		if n, err := strconv.Atoi(s); err == nil {
			body["validity_days"] = n
		} else {
			body["validity_days"] = s
		}
	}
	a, err := h.api.Call(ctx, tenant, http.MethodPost, apiEvidence+"/"+e.ID+"/review", body)
	if err != nil {
		return nil, err
	}
	return h.finish(ctx, tenant, e.RequirementID, a, http.StatusOK, "Review recorded.", f)
}

// uploadEvidence passes the request's multipart body to the API's upload,
// so the file meets the API's type checks and size limit.
func (h *Handlers) uploadEvidence(ctx context.Context, in *fileIn) (*panelHTML, error) {
	tenant, e, err := h.existing(ctx, in.Target)
	if err != nil {
		return nil, err
	}
	a, err := h.api.CallRaw(ctx, tenant, http.MethodPost, apiEvidence+"/"+e.ID+"/files", in.ContentType, in.RawBody)
	if err != nil {
		return nil, err
	}
	return h.finish(ctx, tenant, e.RequirementID, a, http.StatusCreated, "File uploaded.", nil)
}

func (h *Handlers) deleteEvidenceFile(ctx context.Context, in *deleteFileIn) (*panelHTML, error) {
	tenant, e, err := h.existing(ctx, in.Target)
	if err != nil {
		return nil, err
	}
	a, err := h.api.Call(ctx, tenant, http.MethodDelete, apiEvidence+"/"+e.ID+"/files/"+in.FileID, nil)
	if err != nil {
		return nil, err
	}
	return h.finish(ctx, tenant, e.RequirementID, a, http.StatusNoContent, "File deleted.", nil)
}

// field is one field of a panel's form.
type field struct {
	ID, Name, Label, Kind, Value, Hint string
	// Accept lists a file field's extensions.
	Accept    string
	MaxLength int
	Options   []string
	Errors    []string
}

// Described is the ids of the field's hint and errors.
func (f field) Described() string { return sdkui.DescribedBy(f.ID, f.Hint != "", len(f.Errors) > 0) }

// move is a button of a lifecycle move.
type move struct{ Status, Label string }

// panel is a requirement's evidence as a <details> in the tenant's
// requirement table: open when it answers a form.
func (h *Handlers) panel(ctx context.Context, tenant, req string, e *evidence.Evidence, files []evidence.File, st panelState, open bool) (template.HTML, error) {
	if e != nil && files == nil {
		var err error
		if files, err = h.Evidence.Store.Files(ctx, e.ID); err != nil {
			return "", err
		}
	}
	q := "?tenant_id=" + url.QueryEscape(tenant)
	at := func(pattern string) string {
		return strings.Replace(pattern, "{requirement_id}", url.PathEscape(req), 1) + q
	}
	id := "ev-" + tenant + "-" + req
	value := func(name, stored string) string {
		if st.input != nil {
			return st.input.Get(name)
		}
		return stored
	}
	mk := func(name, label, kind, stored, hint string, maxLen int, options ...string) field {
		return field{ID: id + "-" + name, Name: name, Label: label, Kind: kind, Value: value(name, stored), Hint: hint, MaxLength: maxLen,
			Options: options, Errors: st.errors[name]}
	}
	data := struct {
		Open                            bool
		Summary                         template.HTML
		Notice                          string
		General                         []string
		Start, Edit, Status, Upload     string
		Review                          string
		Record                          *evidence.Evidence
		Updated, Expires                template.HTML
		Fields, ReviewFields            []field
		Moves                           []move
		Files                           template.HTML
		FileField                       field
		Frozen, CanReview, Refused, Has bool
	}{Open: open || st.notice != "" || len(st.general)+len(st.errors) > 0, Notice: st.notice, General: st.general,
		Start: at(EvidencePath), Edit: at(evidenceEdit), Status: at(evidenceStatus), Upload: at(evidenceFiles), Review: at(evidenceReview),
		Record: e, Refused: len(st.general)+len(st.errors) > 0}
	data.FileField = mk("file", "File", "file", "", "At most "+sizeLabel(cmp.Or(h.Evidence.MaxFileBytes, evidence.DefaultMaxFileBytes), true)+
		"; "+strings.Join(evidence.Extensions(), ", ")+"; its content must match its type.", 0)
	data.FileField.Accept = strings.Join(evidence.Extensions(), ",")
	if e == nil {
		data.Summary = sdkui.Badge("not started", evidenceHealth[evidence.StatusNotStarted])
		data.Fields = []field{mk("owner", "Owner", "text", "", "", 255), mk("due_date", "Due date", "date", "", "", 0)}
		return render("evidence-panel", data), nil
	}
	data.Has = true
	data.Summary = sdkui.Join(sdkui.Badge(strings.ReplaceAll(e.Status, "_", " "), evidenceHealth[e.Status]),
		template.HTML(" "+fileCount(len(files))))
	data.Updated = sdkui.Time(e.UpdatedAt)
	if e.ExpiresAt != nil {
		data.Expires = sdkui.Time(*e.ExpiresAt)
	}
	data.Fields = []field{mk("owner", "Owner", "text", deref(e.Owner), "", 255), mk("due_date", "Due date", "date", deref(e.DueDate), "", 0),
		mk("notes", "Notes", "textarea", deref(e.Notes), "", 4000)}
	for _, to := range evidence.Moves(e.Status) {
		data.Moves = append(data.Moves, move{to, statusMoves[[2]string{e.Status, to}]})
	}
	data.Frozen = e.Status == evidence.StatusSubmitted || e.Status == evidence.StatusAccepted
	if len(files) > 0 {
		rows := make([][]any, len(files))
		for i, f := range files {
			rows[i] = []any{
				render("evidence-file", struct{ Name, Download string }{f.FileName, apiEvidence + "/" + url.PathEscape(e.ID) + "/files/" + url.PathEscape(f.ID)}),
				sizeLabel(f.SizeBytes, false),
				render("evidence-sha", f.SHA256),
				render("evidence-file-delete", struct {
					Name, Delete string
					Frozen       bool
				}{f.FileName, strings.Replace(at(evidenceFile), "{file_id}", url.PathEscape(f.ID), 1), data.Frozen}),
			}
		}
		data.Files = sdkui.Table([]string{"File", "Size", "SHA-256", "Actions"}, rows, "Files of the evidence, oldest first")
	}
	data.CanReview = e.Status == evidence.StatusSubmitted && sdk.PrincipalFrom(ctx).IsAdmin
	data.ReviewFields = []field{mk("decision", "Decision", "select", evidence.DecisionAccepted, "", 0, evidence.DecisionAccepted, evidence.DecisionRejected),
		mk("reason", "Reason", "textarea", "", "Kept with the evidence and in the audit log.", 2000),
		mk("validity_days", "Valid for (days, optional)", "number", "", "Only for an acceptance: the evidence expires this many days from now.", 0)}
	return render("evidence-panel", data), nil
}

// fileCount is "1 file", "3 files".
func fileCount(n int) string {
	if n == 1 {
		return "1 file"
	}
	return strconv.Itoa(n) + " files"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// sizeLabel is a size in bytes, KiB or MiB; whole rounds down to whole
// units.
func sizeLabel(n int64, whole bool) string {
	switch {
	case n >= 1<<20 && (!whole || n%(1<<20) == 0):
		return sdkui.FormatNumber(float64(n*10/(1<<20))/10) + " MiB"
	case n >= 1<<10 && (!whole || n%(1<<10) == 0):
		return sdkui.FormatNumber(float64(n*10/(1<<10))/10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// tenantEvidence is the panels of the tenant's requirements, by
// requirement id, read in two queries.
func (h *Handlers) tenantEvidence(ctx context.Context, tenant string, reqs []string) (map[string]template.HTML, error) {
	list, _, err := h.Evidence.Store.List(ctx, evidence.ListQuery{TenantIDs: []string{tenant}, RequirementIDs: reqs, Limit: len(reqs)})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(list))
	for i := range list {
		ids[i] = list[i].ID
	}
	files, err := h.Evidence.Store.FilesOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	byEvidence := map[string][]evidence.File{}
	for _, f := range files {
		byEvidence[f.EvidenceID] = append(byEvidence[f.EvidenceID], f)
	}
	records := map[string]*evidence.Evidence{}
	for i := range list {
		records[list[i].RequirementID] = &list[i]
	}
	out := make(map[string]template.HTML, len(reqs))
	for _, req := range reqs {
		e := records[req]
		fs := []evidence.File{}
		if e != nil {
			fs = append(fs, byEvidence[e.ID]...)
		}
		if out[req], err = h.panel(ctx, tenant, req, e, fs, panelState{}, false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func init() {
	template.Must(markup.New("evidence").Parse(`
{{- define "evidence-panel" -}}
<details class="partner-evidence"{{if .Open}} open{{end}}><summary>{{.Summary}}</summary>
<div class="stack">
{{- if .Notice}}<p role="status">{{.Notice}}</p>{{end}}
{{- if .Refused}}<div class="alert" role="alert"><p>Not done{{if .General}}:{{else}}; the fields marked below say why.{{end}}</p>
{{- if .General}}<ul>{{range .General}}<li>{{.}}</li>{{end}}</ul>{{end}}</div>{{end}}
{{- if not .Has}}
<form class="stack" method="post" action="{{.Start}}" hx-post="{{.Start}}" hx-target="closest details" hx-swap="outerHTML" hx-disabled-elt="find button">
{{- range .Fields}}{{template "evidence-field" .}}{{end}}
<div><button class="btn btn-primary" type="submit">Start evidence</button></div>
</form>
{{- else}}
<dl>
<dt>Status</dt><dd>{{.Record.Status}}</dd>
<dt>Owner</dt><dd>{{with .Record.Owner}}{{.}}{{else}}–{{end}}</dd>
<dt>Due date</dt><dd>{{with .Record.DueDate}}{{.}}{{else}}–{{end}}</dd>
{{- with .Record.Notes}}<dt>Notes</dt><dd>{{.}}</dd>{{end}}
{{- with .Record.ReviewReason}}<dt>Review</dt><dd>{{.}}</dd>{{end}}
{{- if .Expires}}<dt>Expires</dt><dd>{{.Expires}}</dd>{{end}}
<dt>Updated</dt><dd>{{.Updated}}</dd>
</dl>
{{- if .Files}}{{.Files}}{{else}}<p class="muted">No files yet.</p>{{end}}
{{- if .Moves}}<div>{{range .Moves}}<form method="post" action="{{$.Status}}" hx-post="{{$.Status}}" hx-target="closest details" hx-swap="outerHTML" hx-disabled-elt="find button"><input type="hidden" name="status" value="{{.Status}}"><button class="btn btn-small" type="submit">{{.Label}}</button></form>{{end}}</div>{{end}}
{{- if .Frozen}}<p class="muted">The evidence is {{.Record.Status}}: its details and files stay as they are until it is moved back to in progress.</p>
{{- else}}
<form class="stack" method="post" action="{{.Edit}}" hx-post="{{.Edit}}" hx-target="closest details" hx-swap="outerHTML" hx-disabled-elt="find button">
{{- range .Fields}}{{template "evidence-field" .}}{{end}}
<div><button class="btn" type="submit">Save</button></div>
</form>
<form class="stack" method="post" action="{{.Upload}}" enctype="multipart/form-data" hx-post="{{.Upload}}" hx-encoding="multipart/form-data" hx-target="closest details" hx-swap="outerHTML" hx-disabled-elt="find button">
{{- template "evidence-field" .FileField}}
<div><button class="btn" type="submit">Upload</button></div>
</form>
{{- end}}
{{- if .CanReview}}
<form class="stack" method="post" action="{{.Review}}" hx-post="{{.Review}}" hx-target="closest details" hx-swap="outerHTML" hx-disabled-elt="find button">
<h4>Review</h4>
{{- range .ReviewFields}}{{template "evidence-field" .}}{{end}}
<div><button class="btn btn-primary" type="submit">Record review</button></div>
</form>
{{- end}}
{{- end}}
</div>
</details>
{{- end}}

{{- define "evidence-file"}}<a href="{{.Download}}" download>{{.Name}}</a>{{end}}
{{- define "evidence-sha"}}<code title="{{.}}">{{slice . 0 12}}</code>{{end}}
{{- define "evidence-file-delete"}}{{if .Frozen}}–{{else}}<button class="btn btn-small" type="button" hx-delete="{{.Delete}}" hx-target="closest details" hx-swap="outerHTML" hx-confirm="Delete the file {{.Name}}?" hx-disabled-elt="this">Delete<span class="visually-hidden"> {{.Name}}</span></button>{{end}}{{end}}

{{- define "evidence-field" -}}
<div class="field"><label for="{{.ID}}">{{.Label}}</label>
{{- if eq .Kind "select"}}<select id="{{.ID}}" name="{{.Name}}"{{if .Described}} aria-describedby="{{.Described}}"{{end}}{{if .Errors}} aria-invalid="true"{{end}}>
{{- $v := .Value}}{{range .Options}}<option value="{{.}}"{{if eq . $v}} selected{{end}}>{{.}}</option>{{end -}}
</select>
{{- else if eq .Kind "textarea"}}<textarea id="{{.ID}}" name="{{.Name}}" rows="3" cols="50"{{if .MaxLength}} maxlength="{{.MaxLength}}"{{end}}{{if .Described}} aria-describedby="{{.Described}}"{{end}}{{if .Errors}} aria-invalid="true"{{end}}>{{.Value}}</textarea>
{{- else if eq .Kind "file"}}<input id="{{.ID}}" name="{{.Name}}" type="file" required accept="{{.Accept}}"{{if .Described}} aria-describedby="{{.Described}}"{{end}}{{if .Errors}} aria-invalid="true"{{end}}>
{{- else}}<input id="{{.ID}}" name="{{.Name}}" type="{{.Kind}}" value="{{.Value}}"{{if .MaxLength}} maxlength="{{.MaxLength}}"{{end}}{{if .Described}} aria-describedby="{{.Described}}"{{end}}{{if .Errors}} aria-invalid="true"{{end}}>
{{- end}}
{{- if .Hint}}<p class="muted" id="{{.ID}}-hint">{{.Hint}}</p>{{end}}
{{- if .Errors}}<p class="alert" id="{{.ID}}-error">{{range $i, $e := .Errors}}{{if $i}} {{end}}{{$e}}{{end}}</p>{{end -}}
</div>
{{- end}}
`))
}
