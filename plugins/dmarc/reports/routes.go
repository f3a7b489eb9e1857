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
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
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
	// Tenants names the tenants the upload form offers a caller of
	// several; nil offers none, and such a caller's upload is refused
	// for want of a tenant.
	Tenants TenantNamer
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
	OrgName     string    `json:"org_name" doc:"The reporting organisation (the receiver), as its report names itself in report_metadata/org_name; for a report that leaves org_name out or empty, the domain of its report_metadata/email (noreply-dmarc@example.net: example.net), else unknown"`
	Email       string    `json:"email"`
	ReportID    string    `json:"report_id" doc:"The organisation's id of the report; with org_name as recorded it identifies the report within a tenant (so two reports recorded as of unknown are told apart by report_id alone)"`
	Domain      string    `json:"domain" doc:"The domain whose published policy the report is about"`
	DateBegin   time.Time `json:"date_begin"`
	DateEnd     time.Time `json:"date_end"`
	Policy      Policy    `json:"policy_published"`
	Source      string    `json:"source" enum:"upload,folder,mailbox" doc:"How the report arrived: uploaded, read from the reports folder, or fetched from the tenant's report mailbox"`
	FileName    string    `json:"file_name" doc:"The uploaded, ingested or attached file's name; empty for a raw upload"`
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
	SourceIP         string     `json:"source_ip"`
	SourcePTR        string     `json:"source_ptr" doc:"The source address's reverse name (its PTR record, the first by name), as the address's owner publishes it, not forward-confirmed; empty when it has none or before it was looked up (source_looked_up_at null)"`
	SourceOrg        string     `json:"source_org" doc:"The sending organisation the reverse name belongs to: a well-known sender's name (Google, Microsoft, Amazon SES, SendGrid, Mailchimp, …) for its registrable domain, else that domain (by the public suffix list); empty without a reverse name"`
	SourceLookedUpAt *time.Time `json:"source_looked_up_at" doc:"When source_ptr and source_org were looked up; null until the mailbox sync job looked them up"`
	Count            int64      `json:"count"`
	Disposition      string     `json:"disposition" enum:"none,quarantine,reject" doc:"What the receiver did under the policy"`
	DKIM             string     `json:"dkim" enum:"pass,fail" doc:"Aligned DKIM as the receiver evaluated it"`
	SPF              string     `json:"spf" enum:"pass,fail" doc:"Aligned SPF as the receiver evaluated it"`
	Pass             bool       `json:"dmarc_pass" doc:"dkim or spf passed"`
	Alignment        string     `json:"alignment" enum:"dkim_and_spf,dkim_only,spf_only,none" doc:"Which aligned mechanisms passed"`
	HeaderFrom       string     `json:"header_from"`
	EnvelopeFrom     string     `json:"envelope_from"`
	AuthDKIM         []DKIMAuth `json:"auth_results_dkim" doc:"Each DKIM signature's raw result, aligned or not"`
	AuthSPF          []SPFAuth  `json:"auth_results_spf" doc:"Each SPF check's raw result, aligned or not"`
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
	Status   string   `json:"status" enum:"stored,duplicate" doc:"stored: the report is new; duplicate: the tenant already has a report of that org_name and report_id, and nothing was written"`
	Report   Summary  `json:"report" doc:"The stored report; for a duplicate, the one stored before"`
	Warnings []string `json:"warnings" doc:"What the uploaded report was accepted despite, each naming the element: an empty or missing org_name (and the reporter recorded instead), a date range longer than 31 days (its messages count on the day it begins), a date up to a day after now (the reporter's clock ahead). Empty for an ordinary report"`
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

// Scope is the tenants and the policy domain a read covers.
type Scope struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	Domain  string        `query:"domain" maxLength:"253" doc:"Only reports about this policy domain"`
}

type uploadIn struct {
	Tenant      sdk.TenantID `query:"tenant_id" doc:"The tenant the report is for; may be left out by a caller who sees exactly one tenant, or given as a form field"`
	ContentType string       `header:"Content-Type" doc:"The body's media type: one of the request body's"`
	RawBody     []byte
}

// uploadOut is stored (201) or a duplicate (200).
type uploadOut struct {
	Status int
	Body   UploadResult
}

type listIn struct {
	Scope
	OrgName   string    `query:"org_name" maxLength:"255" doc:"Only reports of this reporting organisation (exact)"`
	From      time.Time `query:"from" timeFormat:"2006-01-02" doc:"Reports ending on or after this day"`
	To        time.Time `query:"to" timeFormat:"2006-01-02" doc:"Reports beginning on or before this day"`
	Limit     int       `query:"limit" minimum:"1" maximum:"500" default:"50"`
	Offset    int       `query:"offset" minimum:"0" maximum:"1000000" default:"0"`
	SortBy    string    `query:"sort_by" enum:"date_begin,received_at,org_name,domain,messages" default:"date_begin"`
	SortOrder string    `query:"sort_order" enum:"asc,desc" default:"desc"`
}

// statsIn's from defaults to defaultDays-1 days before to.
type statsIn struct {
	Scope
	GroupBy string    `query:"group_by" enum:"day,source_ip,header_from,alignment,disposition" default:"day"`
	From    time.Time `query:"from" timeFormat:"2006-01-02" doc:"First day; default 29 days before to"`
	To      time.Time `query:"to" timeFormat:"2006-01-02" doc:"Last day; default today (UTC)"`
	Limit   int       `query:"limit" minimum:"1" maximum:"1000" default:"100" doc:"Groups listed"`
}

type mailboxIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	Limit   int           `query:"limit" minimum:"1" maximum:"1000" default:"100"`
}

type filesIn struct {
	Limit int `query:"limit" minimum:"1" maximum:"1000" default:"100"`
}

type getIn struct {
	ID int64 `path:"id" minimum:"1"`
}

// uploadTypes are the media types an upload's body may have besides
// multipart/form-data; the content tells the three formats apart.
var uploadTypes = []string{"application/xml", "text/xml", "application/gzip", "application/x-gzip", "application/zip", "application/octet-stream"}

// uploadBody documents an upload's body.
func uploadBody() *huma.RequestBody {
	media := func(desc string) *huma.MediaType {
		return &huma.MediaType{Schema: &huma.Schema{Type: huma.TypeString, Format: "binary", Description: desc}}
	}
	tenant := sdk.TenantID("").Schema(nil)
	tenant.Description = "The tenant, instead of the query parameter"
	multipart := &huma.Schema{Type: huma.TypeObject, Required: []string{"file"}, Properties: map[string]*huma.Schema{
		"file": {Type: huma.TypeString, Format: "binary", Description: "The report: XML, gzip or zip"}, "tenant_id": tenant}}
	return &huma.RequestBody{Required: true, Description: "The report file", Content: map[string]*huma.MediaType{
		"application/xml": media("XML"), "text/xml": media("XML"), "application/gzip": media("gzip"), "application/zip": media("zip"),
		"application/octet-stream": media("any of the three"), "multipart/form-data": {Schema: multipart}}}
}

// Routes declares the report routes.
func (h *Handlers) Routes() []sdk.Route {
	op := func(id, summary, doc string) sdk.Op {
		return sdk.Op{ID: "dmarc-reports-" + id, Tags: []string{tag}, Summary: summary, Description: doc}
	}
	upload := op("upload", "Upload a DMARC aggregate report",
		"Any user of the tenant may upload its reports (as they arrive in the tenant's rua mailbox). The body is the file itself, "+
			"plain XML, gzip (.xml.gz) or zip with one .xml member, told apart by its content rather than its name or type; or a multipart form with the file in `file`. "+
			"Limits: "+fmt.Sprintf("%d MiB as sent (the host's request limit may be lower), %d MiB expanded, expansion at most %d times, %d records, nesting %d deep. ",
			DefaultLimits.MaxCompressed>>20, DefaultLimits.MaxDecompressed>>20, DefaultLimits.MaxRatio, DefaultLimits.MaxRecords, DefaultLimits.MaxDepth)+
			"The report's policy_published domain must be one of the tenant's domains. A report the tenant already has (same org_name and report_id) "+
			"answers 200 with status duplicate and is not stored again; a new one answers 201. "+
			"A report with an empty or missing org_name is accepted: its reporter is recorded as the domain of its report_metadata/email "+
			"(noreply-dmarc@example.net: example.net), else as unknown, and that stands for org_name in telling duplicates apart. "+
			"Accepted with a warning in warnings: such a report, a date range longer than 31 days, a date up to a day after now. "+
			"Refused: a file that is not an acceptable report (422 naming body, or body.file, with the element at fault, e.g. feedback/record[3]/row/source_ip): "+
			"an archive of several files, a nested archive, any DTD, a report whose policy domain is not the tenant's, "+
			"a date range ending before it begins or with a date before 2012 or more than a day after now (the message writes the dates in RFC 3339); "+
			"a Content-Type other than those accepted (header.Content-Type); a missing tenant_id for a caller of several tenants; "+
			"a file, or what it expands to, over a limit (413, the detail names it).")
	upload.Status, upload.RequestBody = http.StatusCreated, uploadBody()
	upload.Responses = map[string]*huma.Response{"201": sdk.JSONResponse("Stored", UploadResult{}),
		"200": sdk.JSONResponse("A duplicate, not stored again", UploadResult{})}
	stats := op("stats", "DMARC pass and fail rates, grouped",
		"Messages of the reports' records that passed DMARC (aligned DKIM or aligned SPF passed, as the receiver evaluated them) and failed, "+
			"grouped by day (the day each report begins, UTC, in day order), source IP, header_from domain, alignment (which aligned mechanisms passed) or "+
			"disposition, the others with the most failed messages first. Records count on the day their report begins. "+
			fmt.Sprintf("A range with to before from, or longer than %d days, is 422.", maxStatsDays))
	get := op("get", "A DMARC aggregate report with its records", "A report of a tenant the caller may not see is 404.")
	get.Errors = []int{http.StatusNotFound}
	files := op("files", "Files the folder ingest has read",
		"Admins only: every file of reports_dir the ingest has read, by content (SHA-256), newest first, with what became of it: "+
			"stored, duplicate (the tenant had the report already), failed (with the reason; not read again) or unmatched (its domain is no tenant's; read again on each run). "+
			"A stored or duplicate file's reason also lists the warnings an upload of it would answer with.")
	files.Auth = sdk.AuthAdmin
	mailbox := op("mailbox", "Attachments the mailbox sync has read",
		"Every attachment the dmarc_mailbox job has read from the caller's tenants' report mailboxes, newest first, with what became of it: "+
			"stored, duplicate (the tenant had the report already, uploaded or fetched), failed (not an acceptable report, with the reason; "+
			"a message without a file attachment is one row without attachment_id) or foreign (a report about a domain that is not the tenant's, not stored). "+
			"Each message is read once.")
	return []sdk.Route{
		sdk.Post(reportsPath, upload, h.upload),
		sdk.Get(reportsPath, op("list", "DMARC aggregate reports of the caller's tenants",
			"A page of reports with their totals. from and to select reports whose date range meets those days; to before from is 422."), h.list),
		sdk.Get(reportsPath+"/stats", stats, h.stats),
		sdk.Get(reportsPath+"/files", files, h.files),
		sdk.Get(reportsPath+"/mailbox", mailbox, h.mailbox),
		sdk.Get(reportsPath+"/{id}", get, h.get),
	}
}

func tooLargeProblem(detail string) *sdk.Problem {
	return &sdk.Problem{Title: http.StatusText(http.StatusRequestEntityTooLarge), Status: http.StatusRequestEntityTooLarge, Detail: detail}
}

// uploadTenant is the tenant an upload is for: the one named, or the
// caller's only one.
func uploadTenant(p sdk.Principal, named, location string) (string, error) {
	switch {
	case named != "":
		return named, nil
	case len(p.TenantIDs) == 1:
		return p.TenantIDs[0], nil
	}
	return "", sdk.Invalid(location, "is required: name the tenant the report is for")
}

// readUpload reads the file of an upload and the tenant it names. A
// tenant named in the query the host has checked; one named in a form
// field is checked here.
func readUpload(ctx context.Context, in *uploadIn) (file []byte, name, tenantID, location string, err error) {
	p := sdk.PrincipalFrom(ctx)
	ct, params, _ := mime.ParseMediaType(in.ContentType)
	switch {
	case slices.Contains(uploadTypes, ct):
		tenantID, err = uploadTenant(p, string(in.Tenant), "query.tenant_id")
		return in.RawBody, "", tenantID, "body", err
	case ct != "multipart/form-data":
		return nil, "", "", "", sdk.Invalid("header.Content-Type", "is %q; send the file as application/xml, application/gzip, application/zip or application/octet-stream, or in the file field of multipart/form-data", clip(ct))
	case params["boundary"] == "":
		return nil, "", "", "", sdk.Invalid("header.Content-Type", "multipart/form-data needs a boundary")
	}
	mr := multipart.NewReader(bytes.NewReader(in.RawBody), params["boundary"])
	named, seen := string(in.Tenant), false
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
			if named = strings.TrimSpace(string(v)); named != "" && !p.CanSee(named) {
				return nil, "", "", "", sdk.Forbidden(protocol.MsgNoTenantAccess)
			}
		case "file":
			if seen {
				return nil, "", "", "", sdk.Invalid("body.file", "is given twice; upload one report at a time")
			}
			seen = true
			name = fileName(part.FileName())
			if file, err = io.ReadAll(part); err != nil {
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

func (h *Handlers) upload(ctx context.Context, in *uploadIn) (*uploadOut, error) {
	file, name, tenantID, location, err := readUpload(ctx, in)
	if err != nil {
		return nil, err
	}
	rep, err := Parse(bytes.NewReader(file), h.Limits)
	var pe *ParseError
	switch {
	case errors.As(err, &pe) && pe.TooLarge:
		return nil, tooLargeProblem(pe.Error())
	case errors.As(err, &pe):
		return nil, sdk.Invalid(location, "%s", pe.Error())
	case err != nil:
		return nil, err
	}
	owner, ok, err := h.TenantOf(ctx, rep.Domain)
	if err != nil {
		return nil, err
	}
	if !ok || owner != tenantID {
		return nil, sdk.Invalid(location, "the report is about %s, which is not a domain of the tenant", rep.Domain)
	}
	sum := sha256.Sum256(file)
	stored, dup, err := h.Store.Insert(ctx, rep, Meta{TenantID: tenantID, Source: SourceUpload, FileName: name, SHA256: hex.EncodeToString(sum[:]), ReceivedAt: h.now()})
	if err != nil {
		return nil, err
	}
	warnings := nonNil(rep.Warnings)
	if dup {
		return &uploadOut{Status: http.StatusOK, Body: UploadResult{Status: "duplicate", Report: summaryOf(stored), Warnings: warnings}}, nil
	}
	if h.Audit != nil {
		err := h.Audit.Audit(ctx, sdk.AuditEntry{Action: "dmarc_report.upload.success", Status: "success", TenantID: tenantID,
			ResourceType: "dmarc_report", ResourceID: strconv.FormatInt(stored.ID, 10),
			Details: map[string]any{"org_name": rep.OrgName, "report_id": rep.ReportID, "domain": rep.Domain, "records": len(rep.Records)}})
		if err != nil && h.Logger != nil {
			h.Logger.Error("audit entry not recorded", "report", stored.ID, "error", err)
		}
	}
	return &uploadOut{Status: http.StatusCreated, Body: UploadResult{Status: "stored", Report: summaryOf(stored), Warnings: warnings}}, nil
}

func (h *Handlers) list(ctx context.Context, in *listIn) (*List, error) {
	if !in.From.IsZero() && !in.To.IsZero() && in.To.Before(in.From) {
		return nil, sdk.Invalid("query.to", "is before from")
	}
	f := ReportFilter{TenantIDs: in.Tenants, Domain: strings.ToLower(in.Domain), OrgName: in.OrgName, SortBy: in.SortBy, Desc: in.SortOrder != "asc",
		From: in.From, To: in.To, Limit: in.Limit, Offset: in.Offset}
	rows, total, err := h.Store.List(ctx, f)
	if err != nil {
		return nil, err
	}
	out := &List{Items: make([]Summary, len(rows)), Total: total, Limit: f.Limit, Offset: f.Offset}
	for i := range rows {
		out.Items[i] = summaryOf(&rows[i])
	}
	return out, nil
}

// dayRange is the days of the statistics and of the page's report
// section: from and to as given or by default (the defaultDays to
// today), to not before from, at most maxStatsDays days.
func (h *Handlers) dayRange(from, to time.Time) (time.Time, time.Time, error) {
	var err error
	if to.IsZero() {
		n := h.now()
		to = time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, time.UTC)
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
	return from, to, err
}

func (h *Handlers) stats(ctx context.Context, in *statsIn) (*StatsView, error) {
	from, to, err := h.dayRange(in.From, in.To)
	if err != nil {
		return nil, err
	}
	st, err := h.Store.Stats(ctx, StatsFilter{TenantIDs: in.Tenants, Domain: strings.ToLower(in.Domain), From: from, To: to}, in.GroupBy, in.Limit)
	if err != nil {
		return nil, err
	}
	out := &StatsView{GroupBy: in.GroupBy, From: from.Format(time.DateOnly), To: to.Format(time.DateOnly), Messages: st.Total.Messages,
		Passed: st.Total.Passed, Failed: st.Total.Failed(), PassPercent: st.Total.PassPercent(), Groups: st.Groups, Items: make([]StatsItem, len(st.Items))}
	for i, it := range st.Items {
		out.Items[i] = itemOf(it)
	}
	return out, nil
}

// FileView is a folder file the ingest read.
type FileView struct {
	SHA256      string    `json:"sha256"`
	FileName    string    `json:"file_name"`
	Status      string    `json:"status" enum:"stored,duplicate,failed,unmatched"`
	Reason      string    `json:"reason" doc:"Why the file was refused, left unmatched or was a duplicate, followed for a stored or duplicate file by the warnings an upload of it would answer with, separated by semicolons; empty for a report stored without warnings"`
	ReportID    *int64    `json:"report_id" doc:"The stored report's id (the duplicate's original), else null"`
	ProcessedAt time.Time `json:"processed_at"`
}

func (h *Handlers) files(ctx context.Context, in *filesIn) (*[]FileView, error) {
	files, err := h.Store.Files(ctx, in.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]FileView, len(files))
	for i, f := range files {
		out[i] = FileView{SHA256: f.SHA256, FileName: f.FileName, Status: f.Status, Reason: f.Reason, ReportID: f.ReportPK, ProcessedAt: f.ProcessedAt.UTC()}
	}
	return &out, nil
}

// AttachmentView is a mailbox attachment the sync read.
type AttachmentView struct {
	TenantID     string    `json:"tenant_id"`
	Mailbox      string    `json:"mailbox"`
	MessageID    string    `json:"message_id" doc:"Graph's id of the message"`
	AttachmentID string    `json:"attachment_id" doc:"Graph's id of the attachment; empty for a message without a file attachment"`
	Subject      string    `json:"subject"`
	FileName     string    `json:"file_name"`
	ReceivedAt   time.Time `json:"received_at"`
	Status       string    `json:"status" enum:"stored,duplicate,failed,foreign"`
	Reason       string    `json:"reason" doc:"Why the attachment was refused or not stored, or was a duplicate, followed by the warnings an upload of it would answer with, separated by semicolons; empty for a report stored without warnings"`
	ReportID     *int64    `json:"report_id" doc:"The stored report's id (the duplicate's original), else null"`
	SHA256       string    `json:"sha256"`
	ProcessedAt  time.Time `json:"processed_at"`
}

func (h *Handlers) mailbox(ctx context.Context, in *mailboxIn) (*[]AttachmentView, error) {
	rows, err := h.Store.Attachments(ctx, in.Tenants, in.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]AttachmentView, len(rows))
	for i, a := range rows {
		out[i] = AttachmentView{TenantID: a.TenantID, Mailbox: a.Mailbox, MessageID: a.MessageID, AttachmentID: a.AttachmentID, Subject: a.Subject,
			FileName: a.FileName, ReceivedAt: a.ReceivedAt.UTC(), Status: a.Status, Reason: a.Reason, ReportID: a.ReportPK, SHA256: a.SHA256,
			ProcessedAt: a.ProcessedAt.UTC()}
	}
	return &out, nil
}

func (h *Handlers) get(ctx context.Context, in *getIn) (*Detail, error) {
	return h.detail(ctx, sdk.PrincipalFrom(ctx).TenantIDs, in.ID)
}

// detail is a report of one of the tenants with its records; 404 for any
// other.
func (h *Handlers) detail(ctx context.Context, tenantIDs []string, id int64) (*Detail, error) {
	rep, recs, err := h.Store.Get(ctx, tenantIDs, id)
	if errors.Is(err, ErrNotFound) {
		err = sdk.NotFound("no report " + strconv.FormatInt(id, 10))
	}
	if err != nil {
		return nil, err
	}
	out := &Detail{Summary: summaryOf(rep), Records: make([]RecordView, len(recs))}
	for i, rec := range recs {
		v := RecordView{SourceIP: rec.SourceIP, SourcePTR: rec.SourcePTR, SourceOrg: rec.SourceOrg, Count: rec.Count, Disposition: rec.Disposition, DKIM: rec.DKIM, SPF: rec.SPF, Pass: rec.Pass,
			Alignment: rec.Alignment, HeaderFrom: rec.HeaderFrom, EnvelopeFrom: rec.EnvelopeFrom, AuthDKIM: []DKIMAuth{}, AuthSPF: []SPFAuth{}}
		if !rec.EnrichedAt.IsZero() {
			at := rec.EnrichedAt.UTC()
			v.SourceLookedUpAt = &at
		}
		if err := json.Unmarshal([]byte(rec.AuthDKIM), &v.AuthDKIM); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(rec.AuthSPF), &v.AuthSPF); err != nil {
			return nil, err
		}
		out.Records[i] = v
	}
	return out, nil
}
