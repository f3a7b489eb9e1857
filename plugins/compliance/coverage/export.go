package coverage

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
)

// The export's two shapes of a finding: a CSV row (exportColumns) and an
// OCSF Compliance Finding (ocsfOf). A field added to Finding is exported
// by a column here and a property of ocsfOf's object.

// exportColumn is a column of the CSV export: its header and its cell of a
// finding.
type exportColumn struct {
	name string
	cell func(f *Finding) string
}

// exportColumns are the CSV export's columns, in their order. A text cell
// that a spreadsheet would read as a formula is guarded by cell.
var exportColumns = []exportColumn{
	{"tenant_id", func(f *Finding) string { return f.TenantID }},
	{"subscription_id", func(f *Finding) string { return cell(f.SubscriptionID) }},
	{"resource_id", func(f *Finding) string { return cell(f.ResourceID) }},
	{"resource_type", func(f *Finding) string { return cell(f.ResourceType) }},
	{"resource_name", func(f *Finding) string { return cell(f.ResourceName) }},
	{"policy_definition_id", func(f *Finding) string { return cell(f.PolicyDefinitionID) }},
	{"policy_name", func(f *Finding) string { return cell(f.PolicyName) }},
	{"category", func(f *Finding) string { return cell(f.Category) }},
	{"severity", func(f *Finding) string { return f.Severity }},
	{"compliance_state", func(f *Finding) string { return f.ComplianceState }},
	{"policy_assignment_ids", func(f *Finding) string { return cell(strings.Join(f.Assignments, " ")) }},
	{"evaluated_at", func(f *Finding) string { return f.EvaluatedAt.UTC().Format(time.RFC3339) }},
	{"controls", func(f *Finding) string { return cell(strings.Join(controlNames(f.Controls), " ")) }},
	{"source", func(f *Finding) string { return f.Source }},
	{"assessment_id", func(f *Finding) string { return cell(f.AssessmentID) }},
	{"remediation", func(f *Finding) string { return cell(f.Remediation) }},
}

// exportHeader is the CSV export's header row.
var exportHeader = func() []string {
	out := make([]string, len(exportColumns))
	for i, c := range exportColumns {
		out[i] = c.name
	}
	return out
}()

// csvRecord is a finding's row of the CSV export, in record's space.
func csvRecord(record []string, f *Finding) []string {
	record = record[:0]
	for _, c := range exportColumns {
		record = append(record, c.cell(f))
	}
	return record
}

// cell guards a text cell against being read as a spreadsheet formula.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// controlNames names each control as <framework_id>:<control_id>.
func controlNames(refs []ControlRef) []string {
	out := make([]string, len(refs))
	for i, c := range refs {
		out[i] = c.FrameworkID + ":" + c.ControlID
	}
	return out
}

// OCSFVersion is the version of the Open Cybersecurity Schema Framework
// whose Compliance Finding class the export writes.
const OCSFVersion = "1.4.0"

// The OCSF Compliance Finding class: class 3 of the Findings category (2),
// and the one activity the export reports, Create.
const (
	ocsfCategoryUID       = 2
	ocsfClassUID          = 2003
	ocsfActivityCreate    = 1
	ocsfTypeUID           = ocsfClassUID*100 + ocsfActivityCreate
	ocsfRuleAnalytic      = 1
	ocsfAzureSubscription = 13
)

// ocsfSeverities are the OCSF severity_id of a policy's severity; any
// other is 0, Unknown.
var ocsfSeverities = map[string]int{states.SeverityHigh: 4, states.SeverityMedium: 3, states.SeverityLow: 2}

// ocsfStatus is how a finding's Azure Policy state reads in OCSF: the
// compliance check's status_id (1 Pass, 2 Warning, 3 Fail, 99 Other) and
// caption, and the finding's own status_id (1 New, 3 Suppressed,
// 4 Resolved) and caption.
type ocsfStatus struct {
	compliance        int
	complianceCaption string
	finding           int
	findingCaption    string
}

// ocsfStatuses map the states: a non-compliant resource fails the check;
// a conflict or an unknown state is a check without a result (Warning);
// an exemption is neither pass nor fail (Other, Exempt) and suppresses
// the finding; a compliant resource passes and its finding is resolved.
var ocsfStatuses = map[string]ocsfStatus{
	states.StateNonCompliant: {3, "Fail", 1, "New"},
	states.StateConflict:     {2, "Warning", 1, "New"},
	states.StateUnknown:      {2, "Warning", 1, "New"},
	states.StateExempt:       {99, "Exempt", 3, "Suppressed"},
	states.StateCompliant:    {1, "Pass", 4, "Resolved"},
}

// ocsfFinding is an OCSF Compliance Finding (class_uid 2003).
type ocsfFinding struct {
	ActivityID   int    `json:"activity_id"`
	ActivityName string `json:"activity_name"`
	CategoryUID  int    `json:"category_uid"`
	CategoryName string `json:"category_name"`
	ClassUID     int    `json:"class_uid"`
	ClassName    string `json:"class_name"`
	TypeUID      int    `json:"type_uid"`
	TypeName     string `json:"type_name"`
	SeverityID   int    `json:"severity_id"`
	Severity     string `json:"severity"`
	StatusID     int    `json:"status_id"`
	Status       string `json:"status"`
	// Time is when the resource was last evaluated, in milliseconds since
	// the epoch.
	Time        int64            `json:"time"`
	Message     string           `json:"message"`
	Metadata    ocsfMetadata     `json:"metadata"`
	FindingInfo ocsfFindingInfo  `json:"finding_info"`
	Compliance  ocsfCompliance   `json:"compliance"`
	Resources   []ocsfResource   `json:"resources"`
	Cloud       ocsfCloud        `json:"cloud"`
	Remediation *ocsfRemediation `json:"remediation,omitempty"`
	Unmapped    ocsfUnmapped     `json:"unmapped"`
}

// ocsfRemediation is how to fix the finding: its remediation text.
type ocsfRemediation struct {
	Desc string `json:"desc"`
}

type ocsfMetadata struct {
	Version string      `json:"version"`
	Product ocsfProduct `json:"product"`
	// Profiles are the profiles whose attributes the event has: cloud.
	Profiles  []string `json:"profiles"`
	TenantUID string   `json:"tenant_uid"`
}

type ocsfProduct struct {
	Name       string      `json:"name"`
	VendorName string      `json:"vendor_name"`
	Feature    ocsfFeature `json:"feature"`
}

// ocsfFeature is the part of the product that reported the finding.
type ocsfFeature struct {
	Name string `json:"name"`
}

type ocsfFindingInfo struct {
	UID          string       `json:"uid"`
	Title        string       `json:"title"`
	Desc         string       `json:"desc"`
	Types        []string     `json:"types,omitempty"`
	LastSeenTime int64        `json:"last_seen_time"`
	Analytic     ocsfAnalytic `json:"analytic"`
}

// ocsfAnalytic is the rule that found the finding: the policy definition.
type ocsfAnalytic struct {
	UID    string `json:"uid"`
	Name   string `json:"name"`
	TypeID int    `json:"type_id"`
	Type   string `json:"type"`
}

type ocsfCompliance struct {
	Control      string   `json:"control"`
	Standards    []string `json:"standards"`
	Requirements []string `json:"requirements"`
	StatusID     int      `json:"status_id"`
	Status       string   `json:"status"`
	StatusCode   string   `json:"status_code"`
}

type ocsfResource struct {
	UID   string     `json:"uid"`
	Name  string     `json:"name"`
	Type  string     `json:"type"`
	Group *ocsfGroup `json:"group,omitempty"`
}

type ocsfGroup struct {
	Name string `json:"name"`
}

type ocsfCloud struct {
	Provider string      `json:"provider"`
	Account  ocsfAccount `json:"account"`
}

type ocsfAccount struct {
	UID    string `json:"uid"`
	TypeID int    `json:"type_id"`
	Type   string `json:"type"`
}

// ocsfUnmapped holds what the class has no attribute for.
type ocsfUnmapped struct {
	Source              string   `json:"source"`
	PolicyAssignmentIDs []string `json:"policy_assignment_ids"`
	AssessmentID        string   `json:"assessment_id,omitempty"`
}

// ocsfOf is a finding as an OCSF Compliance Finding. standards names each
// framework by its id (its name and version).
func ocsfOf(f *Finding, standards map[string]string) ocsfFinding {
	st, ok := ocsfStatuses[f.ComplianceState]
	if !ok {
		st = ocsfStatuses[states.StateUnknown]
	}
	severity, severityID := f.Severity, ocsfSeverities[f.Severity]
	if severityID == 0 {
		severity = "Unknown"
	}
	evaluated := f.EvaluatedAt.UnixMilli()
	var names []string
	for _, c := range f.Controls {
		if name := standards[c.FrameworkID]; !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	out := ocsfFinding{
		ActivityID: ocsfActivityCreate, ActivityName: "Create", CategoryUID: ocsfCategoryUID, CategoryName: "Findings",
		ClassUID: ocsfClassUID, ClassName: "Compliance Finding", TypeUID: ocsfTypeUID, TypeName: "Compliance Finding: Create",
		SeverityID: severityID, Severity: severity, StatusID: st.finding, Status: st.findingCaption, Time: evaluated,
		Message: f.PolicyName + ": " + f.ComplianceState + " on " + f.ResourceName,
		Metadata: ocsfMetadata{Version: OCSFVersion, Product: ocsfProduct{Name: "Steward", VendorName: "Steward", Feature: ocsfFeature{Name: "Compliance"}},
			Profiles:  []string{"cloud"},
			TenantUID: f.TenantID},
		FindingInfo: ocsfFindingInfo{UID: FindingUID(f), Title: f.PolicyName,
			Desc:         findingDesc(f),
			LastSeenTime: evaluated,
			Analytic:     ocsfAnalytic{UID: f.PolicyDefinitionID, Name: f.PolicyName, TypeID: ocsfRuleAnalytic, Type: "Rule"}},
		Compliance: ocsfCompliance{Control: f.PolicyDefinitionID, Standards: nonNil(names), Requirements: controlNames(f.Controls),
			StatusID: st.compliance, Status: st.complianceCaption, StatusCode: f.ComplianceState},
		Resources: []ocsfResource{{UID: f.ResourceID, Name: f.ResourceName, Type: f.ResourceType}},
		Cloud:     ocsfCloud{Provider: "Azure", Account: ocsfAccount{UID: f.SubscriptionID, TypeID: ocsfAzureSubscription, Type: "Azure Subscription"}},
		Unmapped:  ocsfUnmapped{Source: f.Source, PolicyAssignmentIDs: nonNil(f.Assignments), AssessmentID: f.AssessmentID},
	}
	if f.Remediation != "" {
		out.Remediation = &ocsfRemediation{Desc: f.Remediation}
	}
	if f.Category != "" {
		out.FindingInfo.Types = []string{f.Category}
	}
	if group := resourceGroup(f.ResourceID); group != "" {
		out.Resources[0].Group = &ocsfGroup{Name: group}
	}
	return out
}

// FindingUID is a finding's identifier in the export: its tenant,
// resource and policy definition, which identify a policy finding, and a
// Defender finding's assessment, joined by "|".
func FindingUID(f *Finding) string {
	uid := f.TenantID + "|" + f.ResourceID + "|" + f.PolicyDefinitionID
	if f.AssessmentID != "" {
		uid += "|" + f.AssessmentID
	}
	return uid
}

// findingDesc says which source evaluated the resource (an assessment is
// Defender for Cloud's), how, and under which policy definition.
func findingDesc(f *Finding) string {
	by := "Azure Policy evaluated "
	if f.AssessmentID != "" {
		by = "Defender for Cloud assessed "
	}
	return by + f.ResourceID + " as " + f.ComplianceState + " under the policy definition " + f.PolicyDefinitionID + "."
}

// resourceGroup is the resource group an ARM id names, "" when it names
// none.
func resourceGroup(id string) string {
	parts := strings.Split(id, "/")
	for i := 0; i+1 < len(parts); i++ {
		if strings.EqualFold(parts[i], "resourceGroups") {
			return parts[i+1]
		}
	}
	return ""
}

// nonNil is list, or an empty list for nil, which JSON writes as [].
func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// exportFilename is the export's attachment name: findings-<date>.csv or
// .json, the date being today's.
func exportFilename(format string, now time.Time) string {
	ext := "csv"
	if format == "ocsf" {
		ext = "json"
	}
	return "findings-" + now.UTC().Format(time.DateOnly) + "." + ext
}

// exportDoc describes the export route.
var exportDoc = "Every finding the findings route (GET /api/v1/compliance/findings) gives for the same parameters, in its order, " +
	"streamed as a file: the same query, read from one database cursor and written as the findings come, never held whole, so an " +
	"export equals the findings route paged through. format=csv (the default) is text/csv (RFC 4180) with the header row " + exportHeaderDoc + ": several assignments " +
	"or controls in one cell are separated by spaces, a control is <framework_id>:<control_id>, evaluated_at is RFC 3339 in UTC, and a " +
	"text cell that a spreadsheet would read as a formula (starting with =, +, -, @) is prefixed with an apostrophe. format=ocsf is " +
	"application/json: one JSON array of OCSF " + OCSFVersion + " Compliance Finding events (class_uid 2003, category_uid 2, " +
	"activity_id 1 Create, type_uid 200301). Each event's time and finding_info.last_seen_time are the latest evaluation (milliseconds " +
	"since the epoch); finding_info.uid is <tenant_id>|<resource_id>|<policy_definition_id>, its title the policy's name and its " +
	"analytic the policy definition (a Rule); severity_id is 4 High, 3 Medium, 2 Low; compliance.control is the policy definition id, " +
	"compliance.standards the names of the frameworks its controls are of, compliance.requirements those controls as " +
	"<framework_id>:<control_id>, compliance.status_code the Azure Policy state, and compliance.status_id 3 Fail (NonCompliant), " +
	"2 Warning (Conflict, Unknown), 99 Other with status Exempt (Exempt) or 1 Pass (Compliant); the event's status_id is 1 New, " +
	"3 Suppressed (Exempt) or 4 Resolved (Compliant). resources holds the resource (uid the ARM id, type, name, group the resource " +
	"group), cloud the provider Azure and the subscription as the account (type_id 13), metadata.tenant_uid the tenant, and " +
	"unmapped.policy_assignment_ids the assignments. Both come as an attachment named findings-<date>.csv or .json. " +
	"An error after the first bytes breaks the response off, so a cut file never looks complete."

// exportHeaderDoc is the CSV export's header row, as the document says it.
var exportHeaderDoc = strings.Join(exportHeader, ",")

type exportIn struct {
	FindingsFilter
	Format string `query:"format" enum:"csv,ocsf" default:"csv" doc:"csv: a header row and a row per finding; ocsf: a JSON array of OCSF Compliance Finding events"`
}

// exportOut is the export: a stream, with its attachment header.
type exportOut struct {
	ContentDisposition string `header:"Content-Disposition" doc:"attachment; filename=\"findings-<date>.csv\" (or .json)"`
	Body               func(huma.Context)
}

// exportRoute declares the findings export.
func (s *Service) exportRoute() sdk.Route {
	return sdk.Get("/api/v1/compliance/findings/export", sdk.Op{ID: "compliance-findings-export", Tags: tags,
		Summary: "Every finding as CSV or as OCSF Compliance Findings", Description: exportDoc,
		Responses: map[string]*huma.Response{
			"200": {Description: "The findings as CSV, or as a JSON array of OCSF Compliance Finding events with format=ocsf", Content: map[string]*huma.MediaType{
				"text/csv": {Schema: &huma.Schema{Type: huma.TypeString, Description: "Header row " + exportHeaderDoc + ", then one row per finding"}},
				"application/json": {Schema: &huma.Schema{Type: huma.TypeArray, Items: sdk.SchemaOf(ocsfFinding{}),
					Description: "OCSF " + OCSFVersion + " Compliance Finding events, one per finding"}},
			}},
			"404": {Description: "No framework with this id, or no such control in it"},
			"422": {Description: "A bad parameter, or control without framework"},
		}}, s.export)
}

func (s *Service) export(ctx context.Context, in *exportIn) (*exportOut, error) {
	q, err := in.query(0, 0)
	if err != nil {
		return nil, err
	}
	// The framework and control are checked before the answer starts, so
	// that an unknown one is a 404 and never a file that breaks off.
	sq, m, exempt, err := s.findingsQuery(ctx, q)
	if err != nil {
		return nil, notFound(err)
	}
	each := func(ctx context.Context, fn func(*Finding) error) error {
		// A policy's controls are worked out once: its findings share them.
		controls := map[string][]ControlRef{}
		return s.Store.EachFinding(ctx, sq, s.extraFindings(), func(r states.StoredFinding) error {
			refs, ok := controls[r.PolicyDefinitionID]
			if !ok {
				refs = s.controlsOf(m, r.PolicyDefinitionID, q.Framework)
				controls[r.PolicyDefinitionID] = refs
			}
			f := finding(r, refs, exempt)
			return fn(&f)
		})
	}
	contentType, newWriter := "text/csv; charset=utf-8", newCSVExport
	if in.Format == "ocsf" {
		standards := map[string]string{}
		for _, fw := range s.Mapper.Frameworks().All() {
			standards[fw.ID] = strings.TrimSpace(fw.Name + " " + fw.Version)
		}
		contentType, newWriter = "application/json", func(w io.Writer) (exportWriter, error) { return newOCSFExport(w, standards) }
	}
	return &exportOut{ContentDisposition: fmt.Sprintf("attachment; filename=%q", exportFilename(in.Format, time.Now())),
		Body: func(hc huma.Context) {
			r, w := humago.Unwrap(hc)
			streamExport(w, r, contentType, each, newWriter)
		}}, nil
}

// exportWriter writes the export's findings in one format.
type exportWriter interface {
	write(*Finding) error
	// close writes what is buffered and ends the file.
	close() error
}

// streamExport writes the findings each reads, as it reads them, in the
// format newWriter makes. A failure before the first byte went out is
// answered as an error, without the attachment header; after it, the
// response is aborted, so the caller sees it break off rather than a file
// that looks complete.
func streamExport(w http.ResponseWriter, r *http.Request, contentType string, each func(context.Context, func(*Finding) error) error,
	newWriter func(io.Writer) (exportWriter, error)) {
	w.Header().Set("Content-Type", contentType)
	sent := &sentWriter{w: w}
	out, err := newWriter(sent)
	if err == nil {
		err = each(r.Context(), out.write)
	}
	if err == nil {
		err = out.close()
	}
	if err != nil {
		if !sent.any {
			w.Header().Del("Content-Disposition")
			sdk.WriteError(w, err)
			return
		}
		panic(http.ErrAbortHandler)
	}
}

// sentWriter notes whether anything was written through it.
type sentWriter struct {
	w   io.Writer
	any bool
}

func (s *sentWriter) Write(p []byte) (int, error) {
	s.any = true
	return s.w.Write(p)
}

// csvExport writes the export as CSV.
type csvExport struct {
	out    *csv.Writer
	record []string
}

func newCSVExport(w io.Writer) (exportWriter, error) {
	c := &csvExport{out: csv.NewWriter(w), record: make([]string, 0, len(exportColumns))}
	return c, c.out.Write(exportHeader)
}

func (c *csvExport) write(f *Finding) error {
	c.record = csvRecord(c.record, f)
	return c.out.Write(c.record)
}

func (c *csvExport) close() error {
	c.out.Flush()
	return c.out.Error()
}

// ocsfExport writes the export as a JSON array of OCSF events, one a
// line.
type ocsfExport struct {
	out       *bufio.Writer
	standards map[string]string
	n         int
}

func newOCSFExport(w io.Writer, standards map[string]string) (exportWriter, error) {
	o := &ocsfExport{out: bufio.NewWriter(w), standards: standards}
	_, err := o.out.WriteString("[")
	return o, err
}

func (o *ocsfExport) write(f *Finding) error {
	b, err := json.Marshal(ocsfOf(f, o.standards))
	if err != nil {
		return err
	}
	sep := ",\n"
	if o.n == 0 {
		sep = "\n"
	}
	o.n++
	if _, err := o.out.WriteString(sep); err != nil {
		return err
	}
	_, err = o.out.Write(b)
	return err
}

func (o *ocsfExport) close() error {
	if _, err := o.out.WriteString("\n]\n"); err != nil {
		return err
	}
	return o.out.Flush()
}
