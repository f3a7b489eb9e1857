package reports

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/sdk"
)

// TenantOf names the tenant a domain belongs to; ok is false for a domain
// of no tenant.
type TenantOf func(ctx context.Context, domain string) (tenantID string, ok bool, err error)

// Auditor records sensitive operations; *sdk.Host is one.
type Auditor interface {
	Audit(ctx context.Context, e sdk.AuditEntry) error
}

// Handlers serves the report routes.
type Handlers struct {
	Store    *Store
	TenantOf TenantOf
	Audit    Auditor
	Logger   hclog.Logger
	// Limits bound an uploaded file; the zero value is DefaultLimits.
	Limits Limits
	// Now is the clock of received_at and the default date range; nil is
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
	tag         = "dmarc-reports"
	reportsPath = "/api/v1/dmarc/reports"
	// maxStatsDays bounds the statistics' date range.
	maxStatsDays = 366
	// defaultDays is the statistics' range when from is not given.
	defaultDays = 30
)

// Summary is a report as lists show it.
type Summary struct {
	ID          int64     `json:"id"`
	TenantID    string    `json:"tenant_id"`
	OrgName     string    `json:"org_name" doc:"The reporting organisation (the receiver), as its report names itself"`
	Email       string    `json:"email"`
	ReportID    string    `json:"report_id" doc:"The organisation's id of the report; with org_name it identifies the report within a tenant"`
	Domain      string    `json:"domain" doc:"The domain whose published policy the report is about"`
	DateBegin   time.Time `json:"date_begin"`
	DateEnd     time.Time `json:"date_end"`
	Policy      Policy    `json:"policy_published"`
	Source      string    `json:"source" enum:"upload,folder"`
	FileName    string    `json:"file_name" doc:"The uploaded or ingested file's name; empty for a raw upload"`
	SHA256      string    `json:"sha256" doc:"SHA-256 of the file as received, hex"`
	RecordCount int64     `json:"record_count"`
	Messages    int64     `json:"messages" doc:"Messages the report counts, over all its records"`
	Passed      int64     `json:"passed" doc:"Messages that passed DMARC: aligned DKIM or aligned SPF passed, as the receiver evaluated them"`
	Failed      int64     `json:"failed"`
	PassPercent *float64  `json:"pass_percent" doc:"passed of messages in percent, two decimals; null without messages"`
	ReceivedAt  time.Time `json:"received_at"`
}

// Policy is the policy the domain published, as the receiver saw it.
type Policy struct {
	ADKIM string `json:"adkim" enum:"r,s"`
	ASPF  string `json:"aspf" enum:"r,s"`
	P     string `json:"p" enum:"none,quarantine,reject"`
	SP    string `json:"sp" enum:"none,quarantine,reject"`
	Pct   int    `json:"pct" minimum:"0" maximum:"100"`
}

func summaryOf(r *StoredReport) Summary {
	rate := Rate{Messages: r.Messages, Passed: r.Passed}
	return Summary{ID: r.ID, TenantID: r.TenantID, OrgName: r.OrgName, Email: r.Email, ReportID: r.ReportID, Domain: r.Domain,
		DateBegin: r.Begin.UTC(), DateEnd: r.End.UTC(), Policy: Policy{ADKIM: r.ADKIM, ASPF: r.ASPF, P: r.P, SP: r.SP, Pct: r.Pct},
		Source: r.Source, FileName: r.FileName, SHA256: r.SHA256, RecordCount: r.Records, Messages: r.Messages, Passed: r.Passed,
		Failed: rate.Failed(), PassPercent: rate.PassPercent(), ReceivedAt: r.ReceivedAt.UTC()}
}

// RecordView is a report's record.
type RecordView struct {
	SourceIP     string     `json:"source_ip"`
	Count        int64      `json:"count"`
	Disposition  string     `json:"disposition" enum:"none,quarantine,reject" doc:"What the receiver did under the policy"`
	DKIM         string     `json:"dkim" enum:"pass,fail" doc:"Aligned DKIM as the receiver evaluated it"`
	SPF          string     `json:"spf" enum:"pass,fail" doc:"Aligned SPF as the receiver evaluated it"`
	Pass         bool       `json:"dmarc_pass" doc:"dkim or spf passed"`
	Alignment    string     `json:"alignment" enum:"dkim_and_spf,dkim_only,spf_only,none" doc:"Which aligned mechanisms passed"`
	HeaderFrom   string     `json:"header_from"`
	EnvelopeFrom string     `json:"envelope_from"`
	AuthDKIM     []DKIMAuth `json:"auth_results_dkim" doc:"Each DKIM signature's raw result, aligned or not"`
	AuthSPF      []SPFAuth  `json:"auth_results_spf" doc:"Each SPF check's raw result, aligned or not"`
}

// Detail is a report with its records.
type Detail struct {
	Summary
	Records []RecordView `json:"records" doc:"The report's records in the order it lists them"`
}

// List is a page of reports.
type List struct {
	Items  []Summary `json:"items"`
	Total  int       `json:"total"`
	Limit  int       `json:"limit"`
	Offset int       `json:"offset"`
}

// UploadResult answers an upload.
type UploadResult struct {
	Status string  `json:"status" enum:"stored,duplicate" doc:"stored: the report is new; duplicate: the tenant already has a report of that org_name and report_id, and nothing was written"`
	Report Summary `json:"report" doc:"The stored report; for a duplicate, the one stored before"`
}

// StatsItem is one group's figures.
type StatsItem struct {
	Key         string   `json:"key" doc:"The day (YYYY-MM-DD), source IP, header_from domain, alignment or disposition"`
	Messages    int64    `json:"messages"`
	Passed      int64    `json:"passed"`
	Failed      int64    `json:"failed"`
	PassPercent *float64 `json:"pass_percent" doc:"passed of messages in percent, two decimals; null without messages"`
}

// StatsView answers the statistics.
type StatsView struct {
	GroupBy     string      `json:"group_by" enum:"day,source_ip,header_from,alignment,disposition"`
	From        string      `json:"from" format:"date"`
	To          string      `json:"to" format:"date"`
	Messages    int64       `json:"messages" doc:"Over every group, not only those listed"`
	Passed      int64       `json:"passed"`
	Failed      int64       `json:"failed"`
	PassPercent *float64    `json:"pass_percent"`
	Groups      int         `json:"groups" doc:"How many groups there are, beyond the limit"`
	Items       []StatsItem `json:"items"`
}

func itemOf(r Rate) StatsItem {
	return StatsItem{Key: r.Key, Messages: r.Messages, Passed: r.Passed, Failed: r.Failed(), PassPercent: r.PassPercent()}
}

func float(v float64) *float64 { return &v }
func intPtr(n int) *int        { return &n }

func tenantIDsParam() *huma.Param {
	return &huma.Param{Name: "tenant_ids", In: "query",
		Description: "Tenants to include (repeated or comma-separated); all the caller's when absent. A tenant the caller may not see is a 403.",
		Schema:      &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}}}
}

func domainParam() *huma.Param {
	return &huma.Param{Name: "domain", In: "query", Description: "Only reports about this policy domain",
		Schema: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(253)}}
}

func dateParam(name, doc string) *huma.Param {
	return &huma.Param{Name: name, In: "query", Description: doc, Schema: &huma.Schema{Type: huma.TypeString, Format: "date"}}
}

func problem(doc string) *huma.Response { return &huma.Response{Description: doc} }

// Routes declares the report routes.
func (h *Handlers) Routes() []sdk.Route {
	get := http.MethodGet
	media := func(desc string) *huma.MediaType {
		return &huma.MediaType{Schema: &huma.Schema{Type: huma.TypeString, Format: "binary", Description: desc}}
	}
	multipart := &huma.Schema{Type: huma.TypeObject, Required: []string{"file"}, Properties: map[string]*huma.Schema{
		"file":      {Type: huma.TypeString, Format: "binary", Description: "The report: XML, gzip or zip"},
		"tenant_id": {Type: huma.TypeString, MaxLength: intPtr(64), Description: "The tenant, instead of the query parameter"},
	}}
	bad := problem("The file is not an acceptable report: errors name body (or body.file) and the message names the element at fault " +
		"(feedback/record[3]/row/source_ip); an archive of several files, a nested archive, any DTD, or a report whose policy domain is not the tenant's; " +
		"a Content-Type other than those accepted (location header.Content-Type); a missing tenant_id for a caller of several tenants")
	return []sdk.Route{
		{Method: http.MethodPost, Path: reportsPath, TenantScoped: true, Handler: h.upload, Operation: &huma.Operation{
			OperationID: "dmarc-reports-upload", Tags: []string{tag}, Summary: "Upload a DMARC aggregate report",
			Description: "Any user of the tenant may upload its reports (as they arrive in the tenant's rua mailbox). The body is the file itself, " +
				"plain XML, gzip (.xml.gz) or zip with one .xml member, told apart by its content rather than its name or type; or a multipart form with the file in `file`. " +
				"Limits: " + fmt.Sprintf("%d MiB as sent (the host's request limit may be lower), %d MiB expanded, expansion at most %d times, %d records, nesting %d deep. ",
				DefaultLimits.MaxCompressed>>20, DefaultLimits.MaxDecompressed>>20, DefaultLimits.MaxRatio, DefaultLimits.MaxRecords, DefaultLimits.MaxDepth) +
				"The report's policy_published domain must be one of the tenant's domains. A report the tenant already has (same org_name and report_id) " +
				"answers 200 with status duplicate and is not stored again; a new one answers 201.",
			Parameters: []*huma.Param{{Name: "tenant_id", In: "query",
				Description: "The tenant the report is for; may be left out by a caller who sees exactly one tenant, or given as a form field",
				Schema:      &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}}},
			RequestBody: &huma.RequestBody{Required: true, Description: "The report file", Content: map[string]*huma.MediaType{
				"application/xml": media("XML"), "text/xml": media("XML"), "application/gzip": media("gzip"), "application/zip": media("zip"),
				"application/octet-stream": media("any of the three"), "multipart/form-data": {Schema: multipart}}},
			Responses: map[string]*huma.Response{
				"201": sdk.JSONResponse("Stored", UploadResult{}), "200": sdk.JSONResponse("A duplicate, not stored again", UploadResult{}),
				"403": problem("The caller may not see the tenant named"),
				"413": problem("The file, or what it expands to, is over a limit; the detail names it"),
				"422": bad},
		}},
		{Method: get, Path: reportsPath, TenantScoped: true, Handler: h.list, Operation: &huma.Operation{
			OperationID: "dmarc-reports-list", Tags: []string{tag}, Summary: "DMARC aggregate reports of the caller's tenants",
			Description: "A page of reports with their totals. from and to select reports whose date range meets those days.",
			Parameters: []*huma.Param{tenantIDsParam(), domainParam(),
				{Name: "org_name", In: "query", Description: "Only reports of this reporting organisation (exact)", Schema: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(255)}},
				dateParam("from", "Reports ending on or after this day"), dateParam("to", "Reports beginning on or before this day"),
				{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1), Maximum: float(500), Default: 50}},
				{Name: "offset", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(0), Maximum: float(1_000_000), Default: 0}},
				{Name: "sort_by", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"date_begin", "received_at", "org_name", "domain", "messages"}, Default: "date_begin"}},
				{Name: "sort_order", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"asc", "desc"}, Default: "desc"}},
			},
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Reports", List{}), "422": problem("to is before from")},
		}},
		{Method: get, Path: reportsPath + "/stats", TenantScoped: true, Handler: h.stats, Operation: &huma.Operation{
			OperationID: "dmarc-reports-stats", Tags: []string{tag}, Summary: "DMARC pass and fail rates, grouped",
			Description: "Messages of the reports' records that passed DMARC (aligned DKIM or aligned SPF passed, as the receiver evaluated them) and failed, " +
				"grouped by day (the day each report begins, UTC, in day order), source IP, header_from domain, alignment (which aligned mechanisms passed) or " +
				"disposition, the others with the most failed messages first. Records count on the day their report begins.",
			Parameters: []*huma.Param{tenantIDsParam(), domainParam(),
				{Name: "group_by", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"day", "source_ip", "header_from", "alignment", "disposition"}, Default: "day"}},
				dateParam("from", fmt.Sprintf("First day; default %d days before to", defaultDays-1)), dateParam("to", "Last day; default today (UTC)"),
				{Name: "limit", In: "query", Description: "Groups listed", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1), Maximum: float(1000), Default: 100}},
			},
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Rates", StatsView{}),
				"422": problem(fmt.Sprintf("to is before from, or the range is longer than %d days", maxStatsDays))},
		}},
		{Method: get, Path: reportsPath + "/files", Auth: sdk.AuthAdmin, Handler: h.files, Operation: &huma.Operation{
			OperationID: "dmarc-reports-files", Tags: []string{tag}, Summary: "Files the folder ingest has read",
			Description: "Admins only: every file of reports_dir the ingest has read, by content (SHA-256), newest first, with what became of it: " +
				"stored, duplicate (the tenant had the report already), failed (with the reason; not read again) or unmatched (its domain is no tenant's; read again on each run).",
			Parameters: []*huma.Param{{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1), Maximum: float(1000), Default: 100}}},
			Responses:  map[string]*huma.Response{"200": sdk.JSONResponse("Files", []FileView{})},
		}},
		{Method: get, Path: reportsPath + "/{id}", Handler: h.get, Operation: &huma.Operation{
			OperationID: "dmarc-reports-get", Tags: []string{tag}, Summary: "A DMARC aggregate report with its records",
			Parameters: []*huma.Param{{Name: "id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: float(1)}}},
			Responses: map[string]*huma.Response{"200": sdk.JSONResponse("The report", Detail{}),
				"404": problem("No such report, or it is a tenant's the caller may not see")},
		}},
	}
}

func (h *Handlers) writeError(w http.ResponseWriter, err error) {
	var p *sdk.Problem
	if !errors.As(err, &p) && h.Logger != nil {
		h.Logger.Error("dmarc report request failed", "error", err)
	}
	sdk.WriteError(w, err)
}

func tooLargeProblem(detail string) *sdk.Problem {
	return &sdk.Problem{Title: http.StatusText(http.StatusRequestEntityTooLarge), Status: http.StatusRequestEntityTooLarge, Detail: detail}
}

// uploadTenant is the tenant an upload is for: the one named, which the
// caller must see, or the caller's only one.
func uploadTenant(p sdk.Principal, named, location string) (string, error) {
	if named == "" {
		if len(p.TenantIDs) == 1 {
			return p.TenantIDs[0], nil
		}
		return "", sdk.Invalid(location, "is required: name the tenant the report is for")
	}
	if !p.CanSee(named) {
		return "", sdk.Forbidden("no access to the tenant named")
	}
	return named, nil
}

// readUpload reads the file of an upload and the tenant it names.
func (h *Handlers) readUpload(r *http.Request) (file []byte, name, tenantID, location string, err error) {
	p := sdk.PrincipalFrom(r.Context())
	limit := h.Limits.withDefaults().MaxCompressed
	// A tenant named in the query is checked before anything of the body.
	if named := r.URL.Query().Get("tenant_id"); named != "" && !p.CanSee(named) {
		return nil, "", "", "", sdk.Forbidden("no access to the tenant named")
	}
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/xml", "text/xml", "application/gzip", "application/x-gzip", "application/zip", "application/octet-stream":
		if tenantID, err = uploadTenant(p, r.URL.Query().Get("tenant_id"), "query.tenant_id"); err != nil {
			return nil, "", "", "", err
		}
		file, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
		return file, "", tenantID, "body", err
	case "multipart/form-data":
		if params["boundary"] == "" {
			return nil, "", "", "", sdk.Invalid("header.Content-Type", "multipart/form-data needs a boundary")
		}
	default:
		return nil, "", "", "", sdk.Invalid("header.Content-Type", "is %q; send the file as application/xml, application/gzip, application/zip or application/octet-stream, or in the file field of multipart/form-data", clip(ct))
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, "", "", "", sdk.Invalid("body", "the multipart form is malformed: %v", err)
	}
	named := r.URL.Query().Get("tenant_id")
	seen := false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", "", "", sdk.Invalid("body", "the multipart form is malformed: %v", err)
		}
		switch part.FormName() {
		case "tenant_id":
			v, _ := io.ReadAll(io.LimitReader(part, 65))
			if len(v) > 64 {
				return nil, "", "", "", sdk.Invalid("body.tenant_id", "is longer than 64 characters")
			}
			named = strings.TrimSpace(string(v))
		case "file":
			if seen {
				return nil, "", "", "", sdk.Invalid("body.file", "is given twice; upload one report at a time")
			}
			seen = true
			name = clip(part.FileName())
			if file, err = io.ReadAll(io.LimitReader(part, limit+1)); err != nil {
				return nil, "", "", "", sdk.Invalid("body", "the multipart form is malformed: %v", err)
			}
		}
	}
	if tenantID, err = uploadTenant(p, named, "body.tenant_id"); err != nil {
		return nil, "", "", "", err
	}
	if !seen {
		return nil, "", "", "", sdk.Invalid("body.file", "is required: the report file")
	}
	return file, name, tenantID, "body.file", nil
}

func (h *Handlers) upload(w http.ResponseWriter, r *http.Request) {
	file, name, tenantID, location, err := h.readUpload(r)
	if err != nil {
		h.writeError(w, err)
		return
	}
	rep, err := Parse(bytes.NewReader(file), h.Limits)
	var pe *ParseError
	if errors.As(err, &pe) {
		if pe.TooLarge {
			h.writeError(w, tooLargeProblem(pe.Error()))
		} else {
			h.writeError(w, sdk.Invalid(location, "%s", pe.Error()))
		}
		return
	}
	if err != nil {
		h.writeError(w, err)
		return
	}
	owner, ok, err := h.TenantOf(r.Context(), rep.Domain)
	if err != nil {
		h.writeError(w, err)
		return
	}
	if !ok || owner != tenantID {
		h.writeError(w, sdk.Invalid(location, "the report is about %s, which is not a domain of the tenant", rep.Domain))
		return
	}
	sum := sha256.Sum256(file)
	stored, dup, err := h.Store.Insert(r.Context(), rep, Meta{TenantID: tenantID, Source: SourceUpload, FileName: name, SHA256: hex.EncodeToString(sum[:]), ReceivedAt: h.now()})
	if err != nil {
		h.writeError(w, err)
		return
	}
	if dup {
		sdk.WriteJSON(w, http.StatusOK, UploadResult{Status: "duplicate", Report: summaryOf(stored)})
		return
	}
	if h.Audit != nil {
		err := h.Audit.Audit(r.Context(), sdk.AuditEntry{Action: "dmarc_report.upload.success", Status: "success", TenantID: tenantID,
			ResourceType: "dmarc_report", ResourceID: strconv.FormatInt(stored.ID, 10),
			Details: map[string]any{"org_name": rep.OrgName, "report_id": rep.ReportID, "domain": rep.Domain, "records": len(rep.Records)}})
		if err != nil && h.Logger != nil {
			h.Logger.Error("audit entry not recorded", "report", stored.ID, "error", err)
		}
	}
	sdk.WriteJSON(w, http.StatusCreated, UploadResult{Status: "stored", Report: summaryOf(stored)})
}

// day reads a date parameter; zero when absent.
func day(r *http.Request, name string) (time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, sdk.Invalid("query."+name, "is %q, not a date (YYYY-MM-DD)", clip(v))
	}
	return t, nil
}

func (h *Handlers) list(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		h.writeError(w, err)
		return
	}
	q := r.URL.Query()
	f := ReportFilter{TenantIDs: tenants, Domain: strings.ToLower(q.Get("domain")), OrgName: q.Get("org_name"), SortBy: q.Get("sort_by"), Desc: q.Get("sort_order") != "asc"}
	f.Limit, _ = strconv.Atoi(q.Get("limit"))
	f.Offset, _ = strconv.Atoi(q.Get("offset"))
	if f.From, err = day(r, "from"); err == nil {
		f.To, err = day(r, "to")
	}
	if err == nil && !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From) {
		err = sdk.Invalid("query.to", "is before from")
	}
	if err != nil {
		h.writeError(w, err)
		return
	}
	rows, total, err := h.Store.List(r.Context(), f)
	if err != nil {
		h.writeError(w, err)
		return
	}
	out := List{Items: make([]Summary, len(rows)), Total: total, Limit: f.Limit, Offset: f.Offset}
	for i := range rows {
		out.Items[i] = summaryOf(&rows[i])
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

// statsRange is the statistics' days: from and to as given or by
// default, to not before from, at most maxStatsDays days.
func (h *Handlers) statsRange(r *http.Request) (from, to time.Time, err error) {
	if to, err = day(r, "to"); err != nil {
		return
	}
	if to.IsZero() {
		n := h.now()
		to = time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, time.UTC)
	}
	if from, err = day(r, "from"); err != nil {
		return
	}
	if from.IsZero() {
		from = to.AddDate(0, 0, -(defaultDays - 1))
	}
	switch {
	case to.Before(from):
		err = sdk.Invalid("query.to", "is before from")
	case to.Sub(from) >= maxStatsDays*24*time.Hour:
		err = sdk.Invalid("query.from", "the range from %s to %s is longer than %d days", from.Format(time.DateOnly), to.Format(time.DateOnly), maxStatsDays)
	}
	return
}

func (h *Handlers) stats(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		h.writeError(w, err)
		return
	}
	from, to, err := h.statsRange(r)
	if err != nil {
		h.writeError(w, err)
		return
	}
	q := r.URL.Query()
	groupBy := q.Get("group_by")
	limit, _ := strconv.Atoi(q.Get("limit"))
	st, err := h.Store.Stats(r.Context(), StatsFilter{TenantIDs: tenants, Domain: strings.ToLower(q.Get("domain")), From: from, To: to}, groupBy, limit)
	if err != nil {
		h.writeError(w, err)
		return
	}
	out := StatsView{GroupBy: groupBy, From: from.Format(time.DateOnly), To: to.Format(time.DateOnly), Messages: st.Total.Messages,
		Passed: st.Total.Passed, Failed: st.Total.Failed(), PassPercent: st.Total.PassPercent(), Groups: st.Groups, Items: make([]StatsItem, len(st.Items))}
	for i, it := range st.Items {
		out.Items[i] = itemOf(it)
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

// FileView is a folder file the ingest read.
type FileView struct {
	SHA256      string    `json:"sha256"`
	FileName    string    `json:"file_name"`
	Status      string    `json:"status" enum:"stored,duplicate,failed,unmatched"`
	Reason      string    `json:"reason" doc:"Why the file was refused, left unmatched or was a duplicate; empty when stored"`
	ReportID    *int64    `json:"report_id" doc:"The stored report's id (the duplicate's original), else null"`
	ProcessedAt time.Time `json:"processed_at"`
}

func (h *Handlers) files(w http.ResponseWriter, r *http.Request) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	files, err := h.Store.Files(r.Context(), limit)
	if err != nil {
		h.writeError(w, err)
		return
	}
	out := make([]FileView, len(files))
	for i, f := range files {
		out[i] = FileView{SHA256: f.SHA256, FileName: f.FileName, Status: f.Status, Reason: f.Reason, ReportID: f.ReportPK, ProcessedAt: f.ProcessedAt.UTC()}
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) get(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	rep, recs, err := h.Store.Get(r.Context(), sdk.PrincipalFrom(r.Context()).TenantIDs, id)
	if errors.Is(err, ErrNotFound) {
		err = sdk.NotFound("no report " + strconv.FormatInt(id, 10))
	}
	if err != nil {
		h.writeError(w, err)
		return
	}
	out := Detail{Summary: summaryOf(rep), Records: make([]RecordView, len(recs))}
	for i, rec := range recs {
		v := RecordView{SourceIP: rec.SourceIP, Count: rec.Count, Disposition: rec.Disposition, DKIM: rec.DKIM, SPF: rec.SPF, Pass: rec.Pass,
			Alignment: rec.Alignment, HeaderFrom: rec.HeaderFrom, EnvelopeFrom: rec.EnvelopeFrom, AuthDKIM: []DKIMAuth{}, AuthSPF: []SPFAuth{}}
		if err := json.Unmarshal([]byte(rec.AuthDKIM), &v.AuthDKIM); err != nil {
			h.writeError(w, err)
			return
		}
		if err := json.Unmarshal([]byte(rec.AuthSPF), &v.AuthSPF); err != nil {
			h.writeError(w, err)
			return
		}
		out.Records[i] = v
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}
