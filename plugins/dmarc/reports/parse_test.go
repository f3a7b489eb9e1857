package reports

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zipOf is an archive of the named members.
func zipOf(t testing.TB, members ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for i := 0; i < len(members); i += 2 {
		f, err := w.Create(members[i].(string))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(members[i+1].([]byte)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func parseBytes(b []byte) (*Report, error) { return Parse(bytes.NewReader(b), Limits{}) }

func TestParseGoogleReport(t *testing.T) {
	rep, err := parseBytes(sample(t, "google-contoso-retail.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.OrgName != "google.com" || rep.ReportID != "5871604411926393155" || rep.Email != "noreply-dmarc-support@google.com" ||
		rep.Domain != "contoso-retail.example" || rep.P != "reject" || rep.SP != "reject" || rep.Pct != 100 || rep.ADKIM != "r" || rep.ASPF != "r" ||
		!rep.Begin.Equal(time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)) || !rep.End.Equal(time.Date(2026, 11, 20, 23, 59, 59, 0, time.UTC)) {
		t.Errorf("report %+v", rep)
	}
	if len(rep.Records) != 4 || len(rep.Warnings) != 0 {
		t.Fatalf("%d records, want 4; warnings %q", len(rep.Records), rep.Warnings)
	}
	r := rep.Records[1]
	if r.SourceIP != "2a01:111:f400:7e1b::50b" || r.Count != 88 || r.Disposition != "none" || r.DKIM != "pass" || r.SPF != "fail" ||
		!r.Pass() || r.Alignment() != "dkim_only" || r.HeaderFrom != "contoso-retail.example" ||
		len(r.AuthDKIM) != 1 || r.AuthDKIM[0] != (DKIMAuth{Domain: "contoso-retail.example", Selector: "selector2", Result: "pass"}) ||
		len(r.AuthSPF) != 1 || r.AuthSPF[0] != (SPFAuth{Domain: "bounces.mailer.example", Result: "pass"}) {
		t.Errorf("record 2 %+v", r)
	}
	if r := rep.Records[2]; r.Pass() || r.Alignment() != "none" || r.Disposition != "reject" || len(r.AuthDKIM) != 0 {
		t.Errorf("record 3 %+v", r)
	}
}

func TestParseMicrosoftReport(t *testing.T) {
	rep, err := parseBytes(sample(t, "microsoft-fabrikam-foods.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.OrgName != "Enterprise Outlook" || rep.Domain != "fabrikam-foods.example" || rep.P != "quarantine" || rep.Pct != 50 || len(rep.Records) != 3 {
		t.Fatalf("report %+v", rep)
	}
	if r := rep.Records[1]; r.EnvelopeFrom != "mail.unknown-relay.example" || r.Disposition != "quarantine" || r.AuthSPF[0].Scope != "mfrom" || r.AuthSPF[0].Result != "fail" {
		t.Errorf("record 2 %+v", r)
	}
	if r := rep.Records[2]; r.Alignment() != "spf_only" || !r.Pass() {
		t.Errorf("record 3 %+v", r)
	}
}

// TestParseContainers: the same report reads alike as plain XML, gzip and
// a zip archive of one member, told apart by content whatever the name.
func TestParseContainers(t *testing.T) {
	doc := sample(t, "google-contoso-retail.xml")
	for name, body := range map[string][]byte{
		"xml":               doc,
		"gzip":              gz(t, doc),
		"zip":               zipOf(t, "google.com!contoso-retail.example!1795132800!1795219199.xml", doc),
		"zip with a folder": zipOf(t, "dir/", []byte{}, "REPORT.XML", doc),
	} {
		rep, err := parseBytes(body)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if rep.ReportID != "5871604411926393155" || len(rep.Records) != 4 || rep.Records[3].Count != 3 {
			t.Errorf("%s: %+v", name, rep)
		}
	}
}

func wantRefused(t *testing.T, name string, err error, tooLarge bool, contains string) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Errorf("%s: error %v, want a ParseError", name, err)
		return
	}
	if pe.TooLarge != tooLarge || !strings.Contains(pe.Error(), contains) {
		t.Errorf("%s: %q (too large %v), want %q (too large %v)", name, pe.Error(), pe.TooLarge, contains, tooLarge)
	}
}

const billionLaughs = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<feedback><report_metadata><org_name>&lol9;</org_name></report_metadata></feedback>`

func TestParseRefusesDTDs(t *testing.T) {
	_, err := parseBytes([]byte(billionLaughs))
	wantRefused(t, "billion laughs", err, false, "document type declaration")
	_, err = parseBytes(gz(t, []byte(billionLaughs)))
	wantRefused(t, "billion laughs gzipped", err, false, "document type declaration")
	external := `<?xml version="1.0"?><!DOCTYPE feedback SYSTEM "file:///etc/passwd"><feedback/>`
	_, err = parseBytes([]byte(external))
	wantRefused(t, "external DTD", err, false, "DTDs and entity declarations are refused")
	// An entity never declared is not expanded either.
	undeclared := strings.Replace(string(sample(t, "google-contoso-retail.xml")), "google.com</org_name>", "&xxe;</org_name>", 1)
	_, err = parseBytes([]byte(undeclared))
	wantRefused(t, "undeclared entity", err, false, "malformed")
}

func TestParseRefusesBadDocuments(t *testing.T) {
	doc := string(sample(t, "google-contoso-retail.xml"))
	replace := func(old, new string) []byte {
		if !strings.Contains(doc, old) {
			t.Fatalf("sample lacks %q", old)
		}
		return []byte(strings.Replace(doc, old, new, 1))
	}
	deep := "<feedback>" + strings.Repeat("<x>", 20) + strings.Repeat("</x>", 20) + "</feedback>"
	for _, c := range []struct {
		name, want string
		body       []byte
	}{
		{"empty", "empty", nil},
		{"not XML", "not XML", []byte("just some text")},
		{"malformed", "malformed", []byte(doc[:len(doc)/2])},
		{"wrong root", "root element is <rss>", []byte(`<?xml version="1.0"?><rss><channel/></rss>`)},
		{"two roots", "more than one root", []byte(`<feedback></feedback><feedback></feedback>`)},
		{"too deep", "deeper than 16", []byte(deep)},
		{"unclosed tag", "malformed", replace("<count>412</count>", "<count>412")},
		{"no report id", "report_id: is required", replace("<report_id>5871604411926393155</report_id>", "")},
		{"bad begin", "date_range/begin: is \"yesterday\", not an integer", replace("<begin>1795132800</begin>", "<begin>yesterday</begin>")},
		{"bad domain", "policy_published/domain: is \"not a domain\"", replace("<domain>contoso-retail.example</domain>\n    <adkim>", "<domain>not a domain</domain>\n    <adkim>")},
		{"bad policy", "policy_published/p: is \"block\"", replace("<p>reject</p>", "<p>block</p>")},
		{"bad pct", "pct: is 150, outside 0 to 100", replace("<pct>100</pct>", "<pct>150</pct>")},
		{"bad ip", "record[1]/row/source_ip: is \"40.107.22.999\"", replace("40.107.22.91", "40.107.22.999")},
		{"negative count", "record[1]/row/count: is -4", replace("<count>412</count>", "<count>-4</count>")},
		{"bad disposition", "record[1]/row/policy_evaluated/disposition: is \"drop\"", replace("<disposition>none</disposition>", "<disposition>drop</disposition>")},
		{"bad dkim", "record[1]/row/policy_evaluated/dkim: is \"maybe\"", replace("<dkim>pass</dkim>", "<dkim>maybe</dkim>")},
		{"bad auth result", "record[1]/auth_results/dkim[1]/result: is \"great\"", replace("<result>pass</result>", "<result>great</result>")},
		{"no header_from", "record[1]/identifiers/header_from: is required", replace("<header_from>contoso-retail.example</header_from>", "")},
		{"control characters", "holds control characters", replace("<org_name>google.com</org_name>", "<org_name>goo&#x9;gle</org_name>")},
		{"no records", "holds no records", []byte(`<feedback><report_metadata><org_name>a</org_name><report_id>1</report_id><date_range><begin>1795132800</begin><end>1795219199</end></date_range></report_metadata><policy_published><domain>a.example</domain><p>none</p></policy_published></feedback>`)},
	} {
		_, err := parseBytes(c.body)
		wantRefused(t, c.name, err, false, c.want)
	}
}

// TestParseWithoutOrgName: a report that leaves org_name out or empty is
// accepted, the reporter taken from the domain of its email, else
// recorded as unknown, with a warning saying so.
func TestParseWithoutOrgName(t *testing.T) {
	doc := string(sample(t, "google-contoso-retail.xml"))
	const org, email = "<org_name>google.com</org_name>", "<email>noreply-dmarc-support@google.com</email>"
	with := func(orgElem, emailElem string) []byte {
		return []byte(strings.Replace(strings.Replace(doc, org, orgElem, 1), email, emailElem, 1))
	}
	for _, c := range []struct {
		name, reporter, warning string
		body                    []byte
	}{
		{"no org_name element", "google.com", "recorded as google.com, the domain of report_metadata/email", with("", email)},
		{"empty org_name", "example.net", "recorded as example.net", with("<org_name></org_name>", "<email>noreply-dmarc@example.net</email>")},
		{"blank org_name, a named address", "reports.example.net", "recorded as reports.example.net",
			with("<org_name>  </org_name>", "<email>DMARC Reports &lt;dmarc@Reports.Example.NET.&gt;</email>")},
		{"no org_name, no email", Unknown, "email names no domain; the reporter is recorded as unknown", with("", "")},
		{"empty org_name and email", Unknown, "recorded as unknown", with("<org_name/>", "<email></email>")},
		{"an email without a domain", Unknown, "recorded as unknown", with("", "<email>postmaster</email>")},
		{"an email of a single label", Unknown, "recorded as unknown", with("", "<email>dmarc@localhost</email>")},
	} {
		rep, err := parseBytes(c.body)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if rep.OrgName != c.reporter || rep.ReportID != "5871604411926393155" || len(rep.Records) != 4 {
			t.Errorf("%s: reporter %q, report %q, %d records; want reporter %q", c.name, rep.OrgName, rep.ReportID, len(rep.Records), c.reporter)
		}
		if len(rep.Warnings) != 1 || !strings.HasPrefix(rep.Warnings[0], "feedback/report_metadata/org_name: is empty or missing") ||
			!strings.Contains(rep.Warnings[0], c.warning) {
			t.Errorf("%s: warnings %q, want one saying %q", c.name, rep.Warnings, c.warning)
		}
	}
	// Still refused: an org_name or email that is not text.
	_, err := parseBytes(with("<org_name>goo&#x9;gle</org_name>", email))
	wantRefused(t, "control characters", err, false, "org_name: holds control characters")
	_, err = parseBytes(with("", "<email>a&#x9;@google.com</email>"))
	wantRefused(t, "control characters in the email", err, false, "email: holds control characters")
}

// epochLike is a run of digits as long as seconds since 1970 are: a
// message about a date writes the date instead.
var epochLike = regexp.MustCompile(`\d{5,}`)

// TestParseDateRanges: a range longer than 31 days, or reaching up to a
// day past now, is accepted with a warning; one ending before it begins,
// or with a date before 2012 or more than a day ahead, is refused. Every
// message writes the dates as dates.
func TestParseDateRanges(t *testing.T) {
	doc := string(sample(t, "google-contoso-retail.xml"))
	const begin0, end0 = "<begin>1795132800</begin>", "<end>1795219199</end>"
	with := func(begin, end string) []byte {
		return []byte(strings.Replace(strings.Replace(doc, begin0, "<begin>"+begin+"</begin>", 1), end0, "<end>"+end+"</end>", 1))
	}
	at := func(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
	day := func(s string) time.Time {
		d, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	now := time.Now().UTC().Truncate(time.Second)
	soon, later := now.Add(2*time.Hour), now.Add(14*time.Hour)

	for _, c := range []struct {
		name       string
		begin, end time.Time
		warnings   []string
	}{
		{"a day", day("2026-11-20T00:00:00Z"), day("2026-11-20T23:59:59Z"), nil},
		{"31 days", day("2026-10-01T00:00:00Z"), day("2026-11-01T00:00:00Z"), nil},
		{"more than 31 days", day("2026-10-01T00:00:00Z"), day("2026-11-01T00:00:01Z"),
			[]string{"feedback/report_metadata/date_range: spans more than 31 days, from 2026-10-01T00:00:00Z to 2026-11-01T00:00:01Z; its messages count on the day it begins, 2026-10-01"}},
		{"a year", day("2025-01-01T00:00:00Z"), day("2025-12-31T23:59:59Z"), []string{"spans more than 31 days, from 2025-01-01T00:00:00Z to 2025-12-31T23:59:59Z"}},
		{"beginning a little ahead", soon, later,
			[]string{"feedback/report_metadata/date_range/begin: is " + soon.Format(time.RFC3339) + ", after now (", "): the reporter's clock may be ahead"}},
		{"ending a little ahead", now.Add(-10 * time.Hour), later, []string{"feedback/report_metadata/date_range/end: is " + later.Format(time.RFC3339) + ", after now"}},
		{"long and ahead", now.Add(-40 * 24 * time.Hour), later, []string{"date_range/end: is " + later.Format(time.RFC3339), "date_range: spans more than 31 days"}},
	} {
		rep, err := parseBytes(with(at(c.begin), at(c.end)))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !rep.Begin.Equal(c.begin) || !rep.End.Equal(c.end) {
			t.Errorf("%s: %s to %s", c.name, rep.Begin, rep.End)
		}
		all := strings.Join(rep.Warnings, "\n")
		if (len(rep.Warnings) == 0) != (len(c.warnings) == 0) || epochLike.MatchString(all) {
			t.Errorf("%s: warnings %q, want %q", c.name, rep.Warnings, c.warnings)
		}
		for _, w := range c.warnings {
			if !strings.Contains(all, w) {
				t.Errorf("%s: warnings %q, want them to say %q", c.name, rep.Warnings, w)
			}
		}
	}

	for _, c := range []struct {
		name, begin, end string
		want             []string
	}{
		{"not a number", "yesterday", at(now), []string{`date_range/begin: is "yesterday", not an integer`}},
		{"ends before it begins", "1795132800", "1795132000",
			[]string{"feedback/report_metadata/date_range: ends (2026-11-19T23:46:40Z) before it begins (2026-11-20T00:00:00Z)"}},
		{"the epoch", "0", "1795219199", []string{"date_range/begin: is 1970-01-01T00:00:00Z, before 2012-01-01: DMARC was published in 2012"}},
		{"before 1970", "-86400", "1795219199", []string{"date_range/begin: is 1969-12-31T00:00:00Z, before 2012-01-01"}},
		{"in milliseconds", "1795132800", "1795219199000", []string{"date_range/end: is not a date of the years 1 to 9999"}},
		{"far before", strconv.FormatInt(-1<<40, 10), "1795219199", []string{"date_range/begin: is not a date of the years 1 to 9999"}},
		{"2011", at(day("2011-12-31T23:59:59Z")), at(day("2012-01-01T00:00:00Z")), []string{"date_range/begin: is 2011-12-31T23:59:59Z, before 2012-01-01"}},
		{"beginning two days ahead", at(now.Add(48 * time.Hour)), at(now.Add(72 * time.Hour)),
			[]string{"date_range/begin: is " + now.Add(48*time.Hour).Format(time.RFC3339) + ", more than a day after now (" + now.Format(time.RFC3339)[:13]}},
		{"ending years ahead", "1795132800", "4102531199", []string{"date_range/end: is 2100-01-01T23:59:59Z, more than a day after now"}},
		{"both years ahead", "4102444800", "4102531199", []string{"date_range/begin: is 2100-01-01T00:00:00Z, more than a day after now"}},
	} {
		_, err := parseBytes(with(c.begin, c.end))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: error %v, want a ParseError", c.name, err)
			continue
		}
		msg := pe.Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q, want it to say %q", c.name, msg, w)
			}
		}
		if epochLike.MatchString(msg) || strings.Contains(msg, " "+c.begin) || strings.Contains(msg, " "+c.end) {
			t.Errorf("%s: %q writes a date as seconds", c.name, msg)
		}
	}
}

// withRecords is the Yahoo sample with its two records repeated to
// make n (even).
func withRecords(t testing.TB, n int) string {
	doc := string(sample(t, "yahoo-northwind-travel.xml"))
	start, end := strings.Index(doc, "<record>"), strings.LastIndex(doc, "</record>")+len("</record>")
	return doc[:start] + strings.Repeat(doc[start:end], n/2) + doc[end:]
}

func TestParseRefusesTooManyRecords(t *testing.T) {
	big := withRecords(t, 12)
	if _, err := Parse(strings.NewReader(big), Limits{MaxRecords: 12}); err != nil {
		t.Fatalf("12 records under a bound of 12: %v", err)
	}
	_, err := Parse(strings.NewReader(big), Limits{MaxRecords: 11})
	wantRefused(t, "13 records", err, false, "more than 11 records")
	// Few records with very many elements.
	doc := string(sample(t, "yahoo-northwind-travel.xml"))
	many := strings.Replace(doc, "<auth_results>", "<auth_results>"+strings.Repeat("<dkim><domain>a.example</domain><result>pass</result></dkim>", 300), 1)
	_, err = Parse(strings.NewReader(many), Limits{MaxRecords: 10})
	wantRefused(t, "many signatures", err, false, "more than 704 elements")
}

func TestParseRefusesArchivesOutOfBounds(t *testing.T) {
	doc := sample(t, "google-contoso-retail.xml")
	_, err := Parse(bytes.NewReader(doc), Limits{MaxCompressed: 1000})
	wantRefused(t, "large plain file", err, true, "larger than 1000 bytes")
	_, err = Parse(bytes.NewReader(gz(t, doc)), Limits{MaxDecompressed: 1000})
	wantRefused(t, "gzip over the size bound", err, true, "expands to more than 1000 bytes")
	_, err = Parse(bytes.NewReader(zipOf(t, "r.xml", doc)), Limits{MaxDecompressed: 1000})
	wantRefused(t, "zip over the size bound", err, true, "claims")
	_, err = Parse(bytes.NewReader(gz(t, doc)), Limits{MaxRatio: 2})
	wantRefused(t, "gzip over the ratio bound", err, true, "more than 2 times")

	_, err = parseBytes(zipOf(t, "a.xml", doc, "b.xml", doc))
	wantRefused(t, "two members", err, false, "holds 2 files")
	_, err = parseBytes(zipOf(t))
	wantRefused(t, "empty zip", err, false, "holds 0 files")
	_, err = parseBytes(zipOf(t, "report.txt", doc))
	wantRefused(t, "not xml", err, false, "not an .xml file")
	_, err = parseBytes(gz(t, gz(t, doc)))
	wantRefused(t, "nested gzip", err, false, "holds another archive")
	_, err = parseBytes(zipOf(t, "inner.xml", zipOf(t, "r.xml", doc)))
	wantRefused(t, "nested zip", err, false, "holds another archive")
	_, err = parseBytes([]byte{0x1f, 0x8b, 0x08, 0, 0, 0})
	wantRefused(t, "corrupt gzip", err, false, "gzip")
	_, err = parseBytes([]byte("PK\x03\x04garbage"))
	wantRefused(t, "corrupt zip", err, false, "zip archive is corrupt")
}

// deflatedZeros is a raw deflate stream of n MiB of zeros, about a
// kilobyte a MiB, built without compressing them all: one MiB compressed
// and flushed to a byte boundary decodes the same wherever it is
// repeated, since the only data it can refer back to is zeros.
func deflatedZeros(t *testing.T, mib int) []byte {
	t.Helper()
	var chunk bytes.Buffer
	w, _ := flate.NewWriter(&chunk, flate.BestCompression)
	if _, err := w.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	out := bytes.Repeat(chunk.Bytes(), mib)
	// A final, empty stored block.
	return append(out, 0x01, 0x00, 0x00, 0xff, 0xff)
}

func zerosCRC(mib int) uint32 {
	block, crc := make([]byte, 1<<20), uint32(0)
	for range mib {
		crc = crc32.Update(crc, crc32.IEEETable, block)
	}
	return crc
}

// bomb is 1 GiB of zeros compressed to about a megabyte. A lying zip
// claims its member holds 1000 bytes.
func bomb(t *testing.T, kind string, lie bool) []byte {
	t.Helper()
	const mib = 1024
	data, crc := deflatedZeros(t, mib), zerosCRC(mib)
	var buf bytes.Buffer
	switch kind {
	case "gzip":
		buf.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
		buf.Write(data)
		buf.Write(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, crc), uint32(mib<<20)))
	case "zip":
		size := uint64(mib << 20)
		if lie {
			size = 1000
		}
		zw := zip.NewWriter(&buf)
		f, err := zw.CreateRaw(&zip.FileHeader{Name: "report.xml", Method: zip.Deflate, CRC32: crc,
			CompressedSize64: uint64(len(data)), UncompressedSize64: size})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestParseRefusesBombs(t *testing.T) {
	for _, c := range []struct {
		kind string
		lie  bool
		want string
	}{
		{"gzip", false, "expands to more than 52428800 bytes"},
		{"zip", false, "claims 1073741824 bytes"},
		{"zip", true, "holds more than the 1000 bytes claimed"},
	} {
		b := bomb(t, c.kind, c.lie)
		if len(b) > 2<<20 {
			t.Fatalf("the %s bomb is %d bytes", c.kind, len(b))
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := parseBytes(b)
		runtime.ReadMemStats(&after)
		wantRefused(t, c.kind, err, !c.lie, c.want)
		// Expanding the gigabyte would allocate at least as much; stopping
		// at the 50 MiB bound allocates a few times that at most.
		if n := after.TotalAlloc - before.TotalAlloc; n > 256<<20 {
			t.Errorf("%s bomb: %d MiB allocated before it was refused", c.kind, n>>20)
		}
	}
}

func FuzzParseReport(f *testing.F) {
	for _, name := range []string{"google-contoso-retail.xml", "microsoft-fabrikam-foods.xml", "yahoo-northwind-travel.xml"} {
		doc := sample(f, name)
		f.Add(doc)
		f.Add(gz(f, doc))
		f.Add(zipOf(f, "r.xml", doc))
	}
	f.Add([]byte(billionLaughs))
	f.Add([]byte(`<feedback><record><row><source_ip>::1</source_ip></row></record></feedback>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := Parse(bytes.NewReader(b), Limits{MaxCompressed: 1 << 20, MaxDecompressed: 4 << 20})
		var pe *ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error %v is not a ParseError", err)
		}
		if err == nil && (rep.OrgName == "" || rep.ReportID == "" || rep.Domain == "" || len(rep.Records) == 0) {
			t.Fatalf("accepted an incomplete report %+v", rep)
		}
	})
}
