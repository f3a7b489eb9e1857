package reports

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits bound what Parse accepts. The zero value of a field takes the
// default of DefaultLimits.
type Limits struct {
	// MaxCompressed bounds the input as given (a plain XML file is its own
	// compressed form).
	MaxCompressed int64
	// MaxDecompressed bounds the XML document an archive holds.
	MaxDecompressed int64
	// MaxRatio bounds the decompressed size over the compressed size.
	MaxRatio int64
	// MaxRecords bounds the report's <record> elements.
	MaxRecords int
	// MaxDepth bounds the element nesting.
	MaxDepth int
}

// DefaultLimits are generous for real reports: the largest receivers'
// daily aggregate reports for a busy domain hold a few thousand records
// and are well under a megabyte compressed.
var DefaultLimits = Limits{
	MaxCompressed:   10 << 20,
	MaxDecompressed: 50 << 20,
	MaxRatio:        100,
	MaxRecords:      20000,
	MaxDepth:        16,
}

func (l Limits) withDefaults() Limits {
	if l.MaxCompressed <= 0 {
		l.MaxCompressed = DefaultLimits.MaxCompressed
	}
	if l.MaxDecompressed <= 0 {
		l.MaxDecompressed = DefaultLimits.MaxDecompressed
	}
	if l.MaxRatio <= 0 {
		l.MaxRatio = DefaultLimits.MaxRatio
	}
	if l.MaxRecords <= 0 {
		l.MaxRecords = DefaultLimits.MaxRecords
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	return l
}

// ParseError is why an input is not an acceptable report. Path names the
// element at fault (feedback/record[3]/row/source_ip) when there is one.
type ParseError struct {
	// TooLarge is set when a size bound was crossed.
	TooLarge bool
	Path     string
	Msg      string
}

func (e *ParseError) Error() string {
	if e.Path != "" {
		return e.Path + ": " + e.Msg
	}
	return e.Msg
}

func tooLarge(format string, args ...any) error {
	return &ParseError{TooLarge: true, Msg: fmt.Sprintf(format, args...)}
}

func invalid(path, format string, args ...any) error {
	return &ParseError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Report is a parsed and validated aggregate report (RFC 7489 appendix C).
// Strings of enumerations are lower case.
type Report struct {
	// OrgName is the reporter: the report's org_name, or when it leaves
	// that out the domain of its email, else Unknown.
	OrgName  string
	Email    string
	ReportID string
	Begin    time.Time
	End      time.Time
	Domain   string
	ADKIM    string
	ASPF     string
	P        string
	SP       string
	Pct      int
	Records  []Record
	// Warnings name what the report was accepted despite, each as a
	// ParseError reads: the element, then what is out of the ordinary.
	Warnings []string
}

// Unknown is the reporter of a report that names neither its
// organisation nor an email address with a domain.
const Unknown = "unknown"

// Record is one row of a report: messages from one source with one
// outcome.
type Record struct {
	SourceIP     string
	Count        int64
	Disposition  string
	DKIM         string
	SPF          string
	HeaderFrom   string
	EnvelopeFrom string
	AuthDKIM     []DKIMAuth
	AuthSPF      []SPFAuth
}

// Pass is DMARC's verdict on the record: aligned DKIM or aligned SPF
// passed, as the receiver evaluated them.
func (r *Record) Pass() bool { return r.DKIM == "pass" || r.SPF == "pass" }

// Alignment names which aligned mechanisms passed: dkim_and_spf,
// dkim_only, spf_only or none.
func (r *Record) Alignment() string {
	switch {
	case r.DKIM == "pass" && r.SPF == "pass":
		return "dkim_and_spf"
	case r.DKIM == "pass":
		return "dkim_only"
	case r.SPF == "pass":
		return "spf_only"
	}
	return "none"
}

// DKIMAuth is a DKIM signature's raw result.
type DKIMAuth struct {
	Domain   string `json:"domain"`
	Selector string `json:"selector,omitempty"`
	Result   string `json:"result"`
}

// SPFAuth is an SPF check's raw result.
type SPFAuth struct {
	Domain string `json:"domain"`
	Scope  string `json:"scope,omitempty"`
	Result string `json:"result"`
}

var (
	magicGzip = []byte{0x1f, 0x8b}
	magicZip  = []byte("PK\x03\x04")
	// An empty zip archive starts with its end-of-directory record.
	magicZipEmpty = []byte("PK\x05\x06")
)

// Parse reads one report from r: plain XML, gzip or a zip archive of a
// single .xml member, told apart by their first bytes. Every size bound
// is enforced while reading, so an archive that expands past a bound is
// refused without being expanded further. The error is a *ParseError for
// an input at fault.
func Parse(r io.Reader, limits Limits) (*Report, error) {
	l := limits.withDefaults()
	raw, err := io.ReadAll(io.LimitReader(r, l.MaxCompressed+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > l.MaxCompressed {
		return nil, tooLarge("the file is larger than %d bytes", l.MaxCompressed)
	}
	doc, err := decompress(raw, l)
	if err != nil {
		return nil, err
	}
	return parseXML(doc, l)
}

// decompress returns the XML document raw holds.
func decompress(raw []byte, l Limits) ([]byte, error) {
	if len(raw) == 0 {
		return nil, invalid("", "the file is empty")
	}
	// What an archive may expand to: the smaller of the absolute bound and
	// the ratio bound.
	bound := min(l.MaxDecompressed, int64(len(raw))*l.MaxRatio)
	var (
		doc    []byte
		format string
		err    error
	)
	switch {
	case bytes.HasPrefix(raw, magicGzip):
		format = "gzip"
		doc, err = gunzip(raw, bound, l)
	case bytes.HasPrefix(raw, magicZip), bytes.HasPrefix(raw, magicZipEmpty):
		format = "zip"
		doc, err = unzip(raw, bound, l)
	default:
		return raw, nil
	}
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(doc, magicGzip) || bytes.HasPrefix(doc, magicZip) || bytes.HasPrefix(doc, magicZipEmpty) {
		return nil, invalid("", "the %s archive holds another archive; only one level of compression is accepted", format)
	}
	return doc, nil
}

// expand reads what rc decompresses to, refusing it once it passes bound.
func expand(rc io.Reader, compressed int, bound int64, l Limits, what string) ([]byte, error) {
	doc, err := io.ReadAll(io.LimitReader(rc, bound+1))
	if err != nil {
		return nil, invalid("", "the %s data is corrupt: %v", what, err)
	}
	if int64(len(doc)) > bound {
		if bound == l.MaxDecompressed {
			return nil, tooLarge("the %s archive expands to more than %d bytes", what, l.MaxDecompressed)
		}
		return nil, tooLarge("the %s archive expands more than %d times its %d bytes", what, l.MaxRatio, compressed)
	}
	return doc, nil
}

func gunzip(raw []byte, bound int64, l Limits) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, invalid("", "the gzip header is corrupt: %v", err)
	}
	// One member: a report is one file, and a stream of members could
	// smuggle a second document.
	zr.Multistream(false)
	return expand(zr, len(raw), bound, l, "gzip")
}

func unzip(raw []byte, bound int64, l Limits) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		return nil, invalid("", "the zip archive is corrupt: %v", err)
	}
	var files []*zip.File
	for _, f := range zr.File {
		if !f.FileInfo().IsDir() {
			files = append(files, f)
		}
	}
	if len(files) != 1 {
		return nil, invalid("", "the zip archive holds %d files; a report archive holds exactly one .xml file", len(files))
	}
	f := files[0]
	if !strings.HasSuffix(strings.ToLower(f.Name), ".xml") {
		return nil, invalid("", "the zip archive's member %q is not an .xml file", f.Name)
	}
	// The claimed size is only a hint, checked to refuse early; the read
	// below is bounded whatever the archive says.
	if f.UncompressedSize64 > uint64(bound) {
		if bound == l.MaxDecompressed {
			return nil, tooLarge("the zip archive's member claims %d bytes, more than %d", f.UncompressedSize64, l.MaxDecompressed)
		}
		return nil, tooLarge("the zip archive's member claims %d bytes, more than %d times the archive's %d", f.UncompressedSize64, l.MaxRatio, len(raw))
	}
	rc, err := f.Open()
	if err != nil {
		return nil, invalid("", "the zip archive's member cannot be read: %v", err)
	}
	defer rc.Close()
	doc, err := expand(rc, len(raw), bound, l, "zip")
	var pe *ParseError
	if errors.As(err, &pe) && strings.Contains(pe.Msg, zip.ErrFormat.Error()) {
		// archive/zip stops reading a member at the size its header
		// claims (or at a checksum mismatch).
		return nil, invalid("", "the zip archive's member does not match its header: it holds more than the %d bytes claimed, or fails its checksum", f.UncompressedSize64)
	}
	return doc, err
}

// The document's shape, by local names: the RFC 7489 schema has no
// namespace and later drafts add one, so either is read.
type feedbackXML struct {
	XMLName  xml.Name `xml:"feedback"`
	Metadata struct {
		OrgName   string `xml:"org_name"`
		Email     string `xml:"email"`
		ReportID  string `xml:"report_id"`
		DateRange struct {
			Begin string `xml:"begin"`
			End   string `xml:"end"`
		} `xml:"date_range"`
	} `xml:"report_metadata"`
	Policy struct {
		Domain string `xml:"domain"`
		ADKIM  string `xml:"adkim"`
		ASPF   string `xml:"aspf"`
		P      string `xml:"p"`
		SP     string `xml:"sp"`
		Pct    string `xml:"pct"`
	} `xml:"policy_published"`
	Records []recordXML `xml:"record"`
}

type recordXML struct {
	Row struct {
		SourceIP        string `xml:"source_ip"`
		Count           string `xml:"count"`
		PolicyEvaluated struct {
			Disposition string `xml:"disposition"`
			DKIM        string `xml:"dkim"`
			SPF         string `xml:"spf"`
		} `xml:"policy_evaluated"`
	} `xml:"row"`
	Identifiers struct {
		HeaderFrom   string `xml:"header_from"`
		EnvelopeFrom string `xml:"envelope_from"`
	} `xml:"identifiers"`
	AuthResults struct {
		DKIM []struct {
			Domain   string `xml:"domain"`
			Selector string `xml:"selector"`
			Result   string `xml:"result"`
		} `xml:"dkim"`
		SPF []struct {
			Domain string `xml:"domain"`
			Scope  string `xml:"scope"`
			Result string `xml:"result"`
		} `xml:"spf"`
	} `xml:"auth_results"`
}

// elementsPerRecord bounds a document's elements for its record bound: a
// record of RFC 7489's schema with a few signatures has about twenty.
const elementsPerRecord = 64

// scan walks the document's tokens before it is decoded, refusing what
// the decoder would otherwise accept or spend unbounded work on: any
// directive (a DTD, which is how entity expansion is declared), nesting
// past the depth bound, a root other than <feedback>, more records than
// the bound, and more elements than so many records could hold.
func scan(doc []byte, l Limits) error {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	depth, records, roots, elements := 0, 0, 0, 0
	maxElements := (l.MaxRecords + 1) * elementsPerRecord
	for {
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return invalid("", "the XML is malformed: %v", err)
		}
		switch t := tok.(type) {
		case xml.Directive:
			return invalid("", "the XML holds a document type declaration or another directive (<!%s…); DTDs and entity declarations are refused", firstWord(t))
		case xml.StartElement:
			depth++
			elements++
			if elements > maxElements {
				return invalid("", "the XML holds more than %d elements", maxElements)
			}
			if depth > l.MaxDepth {
				return invalid("", "the XML nests elements deeper than %d levels", l.MaxDepth)
			}
			if depth == 1 {
				roots++
				if roots > 1 {
					return invalid("", "the XML has more than one root element")
				}
				if t.Name.Local != "feedback" {
					return invalid("", "the root element is <%s>; a DMARC aggregate report's is <feedback>", t.Name.Local)
				}
			}
			if depth == 2 && t.Name.Local == "record" {
				records++
				if records > l.MaxRecords {
					return invalid("feedback/record", "the report holds more than %d records", l.MaxRecords)
				}
			}
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return invalid("", "the file is not XML: it has text outside a root element")
			}
		}
	}
	if roots == 0 {
		return invalid("", "the file is not XML: no root element")
	}
	return nil
}

func firstWord(d xml.Directive) string {
	s := string(d)
	if i := strings.IndexAny(s, " \t\r\n["); i >= 0 {
		s = s[:i]
	}
	if len(s) > 16 {
		s = s[:16]
	}
	return s
}

func parseXML(doc []byte, l Limits) (*Report, error) {
	if err := scan(doc, l); err != nil {
		return nil, err
	}
	var f feedbackXML
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	if err := d.Decode(&f); err != nil {
		return nil, invalid("", "the XML is malformed: %v", err)
	}
	return f.validate()
}

const (
	maxText       = 255
	maxEmail      = 320
	maxReportSpan = 31 * 24 * time.Hour
	// maxSkew is how far ahead of ours a reporter's clock may be.
	maxSkew  = 24 * time.Hour
	maxCount = 1 << 40
)

var (
	dispositions = []string{"none", "quarantine", "reject"}
	evaluated    = []string{"pass", "fail"}
	dkimResults  = []string{"none", "pass", "fail", "policy", "neutral", "temperror", "permerror"}
	spfResults   = []string{"none", "neutral", "pass", "fail", "softfail", "temperror", "permerror"}
	spfScopes    = []string{"helo", "mfrom"}
	alignments   = []string{"r", "s"}
	policies     = []string{"none", "quarantine", "reject"}
)

// v collects the first validation failure, so each check reads as one
// line, and the warnings.
type v struct {
	err      error
	warnings []string
}

func (c *v) warn(path, format string, args ...any) {
	c.warnings = append(c.warnings, invalid(path, format, args...).Error())
}

func (c *v) text(path, s string, required bool, max int) string {
	s = strings.TrimSpace(s)
	switch {
	case c.err != nil:
	case s == "" && required:
		c.err = invalid(path, "is required")
	case len(s) > max:
		c.err = invalid(path, "is longer than %d characters", max)
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		c.err = invalid(path, "holds control characters")
	}
	return s
}

func (c *v) enum(path, s string, required bool, allowed []string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	switch {
	case c.err != nil:
	case s == "" && !required:
	case s == "":
		c.err = invalid(path, "is required (one of %s)", strings.Join(allowed, ", "))
	case !slices.Contains(allowed, s):
		c.err = invalid(path, "is %q, not one of %s", clip(s), strings.Join(allowed, ", "))
	}
	return s
}

func (c *v) domain(path, s string, required bool) string {
	s = strings.ToLower(strings.TrimSuffix(c.text(path, s, required, 253), "."))
	if c.err == nil && s != "" && !validDomain(s) {
		c.err = invalid(path, "is %q, not a domain name", clip(s))
	}
	return s
}

func (c *v) integer(path, s string, lo, hi int64) int64 {
	s = strings.TrimSpace(s)
	if c.err != nil {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		c.err = invalid(path, "is %q, not an integer", clip(s))
		return 0
	}
	if n < lo || n > hi {
		c.err = invalid(path, "is %d, outside %d to %d", n, lo, hi)
	}
	return n
}

// A report's dates are written in messages as dates, never as the
// seconds the report holds; minDate and maxDate bound the seconds that
// RFC 3339 writes (the years 1 to 9999).
var (
	minDate = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	maxDate = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
)

// date reads a report date, seconds since 1970 UTC, refusing one that
// cannot be real: before DMARC was published, or more than maxSkew after
// now.
func (c *v) date(path, s string, now time.Time) time.Time {
	s = strings.TrimSpace(s)
	if c.err != nil {
		return time.Time{}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		c.err = invalid(path, "is %q, not an integer (seconds since 1970-01-01T00:00:00Z)", clip(s))
		return time.Time{}
	}
	if n < minDate || n > maxDate {
		c.err = invalid(path, "is not a date of the years 1 to 9999; a report's dates lie between %s and now", earliest.Format(time.DateOnly))
		return time.Time{}
	}
	t := time.Unix(n, 0).UTC()
	switch {
	case t.Before(earliest):
		c.err = invalid(path, "is %s, before %s: DMARC was published in 2012", t.Format(time.RFC3339), earliest.Format(time.DateOnly))
	case t.After(now.Add(maxSkew)):
		c.err = invalid(path, "is %s, more than a day after now (%s)", t.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	return t
}

// reporterOf is the reporter named by a report's email: the domain after
// its last @ (an address in angle brackets too), else Unknown.
func reporterOf(email string) string {
	i := strings.LastIndexByte(email, '@')
	if i < 0 {
		return Unknown
	}
	d := strings.ToLower(strings.TrimSuffix(strings.TrimRight(email[i+1:], "> "), "."))
	if len(d) > 253 || !validDomain(d) {
		return Unknown
	}
	return d
}

// clip keeps an echoed value short: 64 bytes at most, cut where a
// character starts, and a mark of the cut.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// fileName is a file's name as a record keeps it: clipped, and text a
// database stores, without control characters (strings.Map reads a byte
// that is not UTF-8 as U+FFFD).
func fileName(s string) string {
	return clip(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s))
}

func validDomain(s string) bool {
	labels := strings.Split(s, ".")
	if len(labels) < 2 {
		return false
	}
	for _, label := range labels {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// earliest is the first report date accepted: DMARC was published in 2012.
var earliest = time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC)

func (f *feedbackXML) validate() (*Report, error) {
	c := &v{}
	m, p := &f.Metadata, &f.Policy
	rep := &Report{
		OrgName:  c.text("feedback/report_metadata/org_name", m.OrgName, false, maxText),
		Email:    c.text("feedback/report_metadata/email", m.Email, false, maxEmail),
		ReportID: c.text("feedback/report_metadata/report_id", m.ReportID, true, maxText),
	}
	if c.err == nil && rep.OrgName == "" {
		rep.OrgName = reporterOf(rep.Email)
		if rep.OrgName == Unknown {
			c.warn("feedback/report_metadata/org_name", "is empty or missing, and report_metadata/email names no domain; the reporter is recorded as %s", Unknown)
		} else {
			c.warn("feedback/report_metadata/org_name", "is empty or missing; the reporter is recorded as %s, the domain of report_metadata/email", rep.OrgName)
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	rep.Begin = c.date("feedback/report_metadata/date_range/begin", m.DateRange.Begin, now)
	rep.End = c.date("feedback/report_metadata/date_range/end", m.DateRange.End, now)
	if c.err == nil {
		switch {
		case rep.End.Before(rep.Begin):
			c.err = invalid("feedback/report_metadata/date_range", "ends (%s) before it begins (%s)", rep.End.Format(time.RFC3339), rep.Begin.Format(time.RFC3339))
		case rep.Begin.After(now):
			c.warn("feedback/report_metadata/date_range/begin", "is %s, after now (%s): the reporter's clock may be ahead", rep.Begin.Format(time.RFC3339), now.Format(time.RFC3339))
		case rep.End.After(now):
			c.warn("feedback/report_metadata/date_range/end", "is %s, after now (%s): the reporter's clock may be ahead", rep.End.Format(time.RFC3339), now.Format(time.RFC3339))
		}
		if rep.End.Sub(rep.Begin) > maxReportSpan {
			c.warn("feedback/report_metadata/date_range", "spans more than 31 days, from %s to %s; its messages count on the day it begins, %s",
				rep.Begin.Format(time.RFC3339), rep.End.Format(time.RFC3339), rep.Begin.Format(time.DateOnly))
		}
	}
	rep.Domain = c.domain("feedback/policy_published/domain", p.Domain, true)
	rep.ADKIM = c.enum("feedback/policy_published/adkim", p.ADKIM, false, alignments)
	rep.ASPF = c.enum("feedback/policy_published/aspf", p.ASPF, false, alignments)
	rep.P = c.enum("feedback/policy_published/p", p.P, true, policies)
	rep.SP = c.enum("feedback/policy_published/sp", p.SP, false, policies)
	rep.Pct = 100
	if strings.TrimSpace(p.Pct) != "" {
		rep.Pct = int(c.integer("feedback/policy_published/pct", p.Pct, 0, 100))
	}
	if rep.ADKIM == "" {
		rep.ADKIM = "r"
	}
	if rep.ASPF == "" {
		rep.ASPF = "r"
	}
	if rep.SP == "" {
		rep.SP = rep.P
	}
	if c.err == nil && len(f.Records) == 0 {
		c.err = invalid("feedback/record", "the report holds no records")
	}
	rep.Records = make([]Record, 0, len(f.Records))
	for i := range f.Records {
		if c.err != nil {
			break
		}
		rep.Records = append(rep.Records, f.Records[i].validate(c, fmt.Sprintf("feedback/record[%d]", i+1)))
	}
	if c.err != nil {
		return nil, c.err
	}
	rep.Warnings = c.warnings
	return rep, nil
}

func (x *recordXML) validate(c *v, at string) Record {
	row := &x.Row
	r := Record{
		Count:        c.integer(at+"/row/count", row.Count, 0, maxCount),
		Disposition:  c.enum(at+"/row/policy_evaluated/disposition", row.PolicyEvaluated.Disposition, true, dispositions),
		DKIM:         c.enum(at+"/row/policy_evaluated/dkim", row.PolicyEvaluated.DKIM, true, evaluated),
		SPF:          c.enum(at+"/row/policy_evaluated/spf", row.PolicyEvaluated.SPF, true, evaluated),
		HeaderFrom:   strings.ToLower(c.text(at+"/identifiers/header_from", x.Identifiers.HeaderFrom, true, 253)),
		EnvelopeFrom: c.text(at+"/identifiers/envelope_from", x.Identifiers.EnvelopeFrom, false, maxText),
	}
	ip := c.text(at+"/row/source_ip", row.SourceIP, true, 64)
	if c.err == nil {
		addr, err := netip.ParseAddr(ip)
		if err != nil || addr.Zone() != "" {
			c.err = invalid(at+"/row/source_ip", "is %q, not an IP address", clip(ip))
		}
		r.SourceIP = addr.Unmap().String()
	}
	r.EnvelopeFrom = strings.ToLower(r.EnvelopeFrom)
	for i, d := range x.AuthResults.DKIM {
		p := fmt.Sprintf("%s/auth_results/dkim[%d]", at, i+1)
		r.AuthDKIM = append(r.AuthDKIM, DKIMAuth{
			Domain:   strings.ToLower(c.text(p+"/domain", d.Domain, true, 253)),
			Selector: c.text(p+"/selector", d.Selector, false, maxText),
			Result:   c.enum(p+"/result", d.Result, true, dkimResults),
		})
	}
	for i, s := range x.AuthResults.SPF {
		p := fmt.Sprintf("%s/auth_results/spf[%d]", at, i+1)
		r.AuthSPF = append(r.AuthSPF, SPFAuth{
			Domain: strings.ToLower(c.text(p+"/domain", s.Domain, false, 253)),
			Scope:  c.enum(p+"/scope", s.Scope, false, spfScopes),
			Result: c.enum(p+"/result", s.Result, true, spfResults),
		})
	}
	return r
}
