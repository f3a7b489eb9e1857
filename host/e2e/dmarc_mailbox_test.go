package e2e

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// dmarcMailboxWorld is dmarcReportsWorld with each domain's DMARC record
// naming its rua mailbox, the mailboxes holding the samples as reporters
// send them (Google's zipped, Yahoo's gzipped and resent plain,
// Microsoft's plain), a message whose attachment is no report and, in
// Brand A's mailbox, Brand B's report, and the reverse names of the
// samples' sources but 203.0.113.45's.
func dmarcMailboxWorld(t *testing.T) string {
	zipped := zipOne(t, "google.com!contoso-retail.example!1795132800!1795219199.xml", dmarcReportSample(t, "google-contoso-retail.xml"))
	gz := gzipped(t, dmarcReportSample(t, "yahoo-northwind-travel.xml"))
	b64 := base64.StdEncoding.EncodeToString
	const dirA, dirB = "aaaaaaaa-1111-4111-8111-aaaaaaaaaaaa", "bbbbbbbb-2222-4222-8222-bbbbbbbbbbbb"
	wd := world.World{Tenants: []world.Tenant{
		{Name: "Brand A", DirectoryTenantID: dirA, Subscriptions: []world.Subscription{{ID: "aaaaaaaa-0000-0000-0000-000000000001", Name: "A prod"}},
			AccessGroups: []string{"grp-a"}, Domains: []string{"contoso-retail.example", "northwind-travel.example"}},
		{Name: "Brand B", DirectoryTenantID: dirB, Subscriptions: []world.Subscription{{ID: "bbbbbbbb-0000-0000-0000-000000000001", Name: "B prod"}},
			AccessGroups: []string{"grp-b"}, Domains: []string{"fabrikam-foods.example"}},
	}}
	for _, d := range []string{"contoso-retail.example", "northwind-travel.example", "fabrikam-foods.example"} {
		wd.DNS = append(wd.DNS, world.DNSRecord{Name: "_dmarc." + d, Type: "TXT", Value: "v=DMARC1; p=reject; rua=mailto:dmarc-reports@" + d + ",mailto:reports@dmarc-service.example"})
	}
	for ip, ptr := range map[string]string{
		"40.107.22.91":            "mail-db8eur05on2091.outbound.protection.outlook.com",
		"2a01:111:f400:7e1b::50b": "mail-am6eur05on2050b.outbound.protection.outlook.com",
		"198.51.100.7":            "o1.ptr2638.mail.sendgrid.net",
		"40.107.74.12":            "mail-ve1eur03on2012.outbound.protection.outlook.com",
	} {
		wd.DNS = append(wd.DNS, world.DNSRecord{Name: ip, Type: "PTR", Value: ptr})
	}
	wd.Mailboxes = []world.Mailbox{
		{Address: "dmarc-reports@contoso-retail.example", DirectoryTenantID: dirA, Messages: []world.MailMessage{
			{ID: "a-1", Subject: "Report domain: contoso-retail.example Submitter: google.com", From: "noreply-dmarc-support@google.com", Received: "2026-11-21T06:10:00Z",
				Attachments: []world.MailAttachment{{Name: "google.com!contoso-retail.example!1795132800!1795219199.zip", ContentType: "application/zip", Base64: b64(zipped)}}},
			{ID: "a-2", Subject: "Undeliverable", From: "postmaster@contoso-retail.example", Received: "2026-11-21T07:00:00Z",
				Attachments: []world.MailAttachment{{Name: "garbage.xml", Text: "<html>not a report</html>"}}},
			{ID: "a-3", Subject: "Report domain: fabrikam-foods.example", From: "dmarcreport@microsoft.com", Received: "2026-11-21T08:00:00Z",
				Attachments: []world.MailAttachment{{Name: "microsoft.xml", Text: string(dmarcReportSample(t, "microsoft-fabrikam-foods.xml"))}}},
		}},
		{Address: "dmarc-reports@northwind-travel.example", DirectoryTenantID: dirA, Messages: []world.MailMessage{
			{ID: "n-1", Subject: "Report Domain: northwind-travel.example Submitter: yahoo.com", From: "dmarc_support@yahoo.com", Received: "2026-11-22T01:00:00Z",
				Attachments: []world.MailAttachment{{Name: "yahoo.xml.gz", ContentType: "application/gzip", Base64: b64(gz)}}},
			{ID: "n-2", Subject: "Report Domain: northwind-travel.example Submitter: yahoo.com (resent)", From: "dmarc_support@yahoo.com", Received: "2026-11-22T02:00:00Z",
				Attachments: []world.MailAttachment{{Name: "yahoo.xml", Text: string(dmarcReportSample(t, "yahoo-northwind-travel.xml"))}}},
		}},
		{Address: "dmarc-reports@fabrikam-foods.example", DirectoryTenantID: dirB, Messages: []world.MailMessage{
			{ID: "f-1", Subject: "Report domain: fabrikam-foods.example", From: "dmarcreport@microsoft.com", Received: "2026-11-21T08:00:00Z",
				Attachments: []world.MailAttachment{{Name: "microsoft.xml", ContentType: "text/xml", Text: string(dmarcReportSample(t, "microsoft-fabrikam-foods.xml"))}}},
		}},
	}
	return writeWorld(t, wd)
}

type dmarcAttachment struct {
	TenantID  string `json:"tenant_id"`
	Mailbox   string `json:"mailbox"`
	MessageID string `json:"message_id"`
	FileName  string `json:"file_name"`
	Status    string `json:"status"`
	Reason    string `json:"reason"`
	ReportID  *int64 `json:"report_id"`
}

type dmarcRecordSource struct {
	SourceIP   string  `json:"source_ip"`
	SourcePTR  string  `json:"source_ptr"`
	SourceOrg  string  `json:"source_org"`
	LookedUpAt *string `json:"source_looked_up_at"`
}

// TestDMARCMailboxThroughTheHost: the dmarc_mailbox job fetches each
// tenant's reports from its rua mailboxes through the simulated Graph,
// on both databases. The reports are those an upload of the same files
// stores — the same figures as TestDMARCReportsThroughTheHost's, and an
// upload of one answers duplicate with the fetched report — a report
// uploaded before counts once, a bad attachment and another tenant's
// report are recorded and skipped, and a second sync adds nothing. Each
// record's source shows its reverse name and sending organisation. A user
// of Brand A sees Brand A's attachments only, is refused Brand B's (403)
// and Brand B's report (404).
func TestDMARCMailboxThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testDMARCMailboxThroughTheHost(t, dialect) })
	}
}

func testDMARCMailboxThroughTheHost(t *testing.T, dialect string) {
	o := hostOpts{pluginsHCL: dmarcPlugins("    mailbox_sync = true"), env: map[string]string{"STEWARD_SIM_WORLD": dmarcMailboxWorld(t), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "dmarc")
	waitStartupSync(t, h, admin, "dmarc_mailbox")
	f := &fixture{h: h, admin: admin}
	var tenants []struct{ ID, Name string }
	h.get("/api/v1/tenants", admin).json(t, &tenants)
	ids := map[string]string{}
	for _, tn := range tenants {
		ids[tn.Name] = tn.ID
	}
	tenantA, tenantB := ids["Brand A"], ids["Brand B"]

	// Brand B's report is uploaded before its mailbox is read, or after
	// (the start-up sync may have read it once the domains' first check
	// found the rua address): either way it is stored once.
	var up dmarcUpload
	microsoft := dmarcReportSample(t, "microsoft-fabrikam-foods.xml")
	upload := h.do(http.MethodPost, "/api/v1/dmarc/reports?tenant_id="+tenantB, admin, bytes.NewReader(microsoft), "Content-Type", "application/xml")
	if upload.json(t, &up); upload.status != http.StatusCreated && upload.status != http.StatusOK {
		t.Fatalf("upload of Brand B's report: %d %s", upload.status, upload.body)
	}
	if r := f.waitRun(t, f.trigger(t, "dmarc_mailbox")); r.Status != "completed" {
		t.Fatalf("mailbox sync %+v", r)
	}

	var list dmarcReportList
	h.get("/api/v1/dmarc/reports?sort_by=org_name&sort_order=asc", admin).json(t, &list)
	if list.Total != 3 || list.Items[0].OrgName != "Enterprise Outlook" || list.Items[0].ID != up.Report.ID ||
		list.Items[1].OrgName != "Yahoo" || list.Items[1].Source != "mailbox" || list.Items[2].OrgName != "google.com" || list.Items[2].Source != "mailbox" {
		t.Fatalf("reports after the mailbox sync %+v", list)
	}
	googleID := list.Items[2].ID

	// The figures of TestDMARCReportsThroughTheHost, whose reports are
	// the same files uploaded and read from a folder.
	var stats struct {
		Messages int64 `json:"messages"`
		Failed   int64 `json:"failed"`
		Items    []struct {
			Key    string `json:"key"`
			Failed int64  `json:"failed"`
		} `json:"items"`
	}
	h.get("/api/v1/dmarc/reports/stats?group_by=source_ip&from=2026-11-20&to=2026-11-21&tenant_ids="+tenantA, admin).json(t, &stats)
	if stats.Messages != 645 || stats.Failed != 25 || len(stats.Items) != 5 || stats.Items[0].Key != "203.0.113.45" || stats.Items[0].Failed != 22 {
		t.Errorf("Brand A's sources from the mailbox %+v", stats)
	}
	h.get("/api/v1/dmarc/reports/stats?group_by=disposition&from=2026-11-20&to=2026-11-21", admin).json(t, &stats)
	if stats.Messages != 945 || stats.Failed != 65 || stats.Items[0].Key != "quarantine" {
		t.Errorf("every tenant's dispositions %+v", stats)
	}
	var fetched, again struct {
		Report struct {
			ID          int64  `json:"id"`
			Messages    int64  `json:"messages"`
			Passed      int64  `json:"passed"`
			RecordCount int64  `json:"record_count"`
			SHA256      string `json:"sha256"`
		} `json:"report"`
		Status string `json:"status"`
	}
	h.get("/api/v1/dmarc/reports/"+strconv.FormatInt(googleID, 10), admin).json(t, &fetched.Report)
	r := h.do(http.MethodPost, "/api/v1/dmarc/reports?tenant_id="+tenantA, admin, bytes.NewReader(dmarcReportSample(t, "google-contoso-retail.xml")), "Content-Type", "application/xml")
	if r.json(t, &again); r.status != http.StatusOK || again.Status != "duplicate" || again.Report.ID != googleID ||
		again.Report.Messages != 520 || again.Report.Messages != fetched.Report.Messages || again.Report.Passed != fetched.Report.Passed || again.Report.RecordCount != 4 {
		t.Errorf("upload of the fetched report: %d %s, fetched %+v", r.status, r.body, fetched)
	}

	var atts []dmarcAttachment
	h.get("/api/v1/dmarc/reports/mailbox", admin).json(t, &atts)
	status := map[string]dmarcAttachment{}
	for _, a := range atts {
		status[a.MessageID] = a
	}
	// Brand B's: a duplicate of the upload, or the report the upload
	// was a duplicate of.
	fabrikam := map[int]string{http.StatusCreated: "duplicate", http.StatusOK: "stored"}[upload.status]
	for id, want := range map[string]string{"a-1": "stored", "a-2": "failed", "a-3": "foreign", "n-1": "stored", "n-2": "duplicate", "f-1": fabrikam} {
		if status[id].Status != want {
			t.Errorf("message %s: %+v, want %s", id, status[id], want)
		}
	}
	if len(atts) != 6 || !strings.Contains(status["a-2"].Reason, "root element is <html>") || status["a-3"].TenantID != tenantA ||
		status["f-1"].ReportID == nil || *status["f-1"].ReportID != up.Report.ID || *status["n-2"].ReportID != *status["n-1"].ReportID {
		t.Errorf("mailbox attachments %+v", atts)
	}

	// Again: nothing new.
	if r := f.waitRun(t, f.trigger(t, "dmarc_mailbox")); r.Status != "completed" {
		t.Fatalf("second mailbox sync %+v", r)
	}
	h.get("/api/v1/dmarc/reports", admin).json(t, &list)
	h.get("/api/v1/dmarc/reports/mailbox", admin).json(t, &atts)
	if list.Total != 3 || len(atts) != 6 {
		t.Errorf("after a second sync: %d reports, %d attachments", list.Total, len(atts))
	}

	// The sources: reverse names and organisations, none for the spoofer.
	var detail struct {
		Records []dmarcRecordSource `json:"records"`
	}
	h.get("/api/v1/dmarc/reports/"+strconv.FormatInt(googleID, 10), admin).json(t, &detail)
	want := map[string][2]string{
		"40.107.22.91":            {"mail-db8eur05on2091.outbound.protection.outlook.com", "Microsoft"},
		"2a01:111:f400:7e1b::50b": {"mail-am6eur05on2050b.outbound.protection.outlook.com", "Microsoft"},
		"198.51.100.7":            {"o1.ptr2638.mail.sendgrid.net", "SendGrid"},
		"203.0.113.45":            {"", ""},
	}
	for _, rec := range detail.Records {
		if w := want[rec.SourceIP]; rec.SourcePTR != w[0] || rec.SourceOrg != w[1] || rec.LookedUpAt == nil {
			t.Errorf("source %+v, want %q", rec, w)
		}
	}
	if len(detail.Records) != 4 {
		t.Errorf("records %+v", detail.Records)
	}

	u := tenancy.User{DirectoryTenantID: "aaaaaaaa-1111-4111-8111-aaaaaaaaaaaa", Subject: "oid-a-user", Email: "a-user@contoso-retail.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(t.Context(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)
	h.get("/api/v1/dmarc/reports/mailbox", tokA).json(t, &atts)
	if len(atts) != 5 {
		t.Errorf("Brand A's user sees %d attachments, want Brand A's 5", len(atts))
	}
	for _, a := range atts {
		if a.TenantID != tenantA {
			t.Errorf("Brand A's user sees %+v", a)
		}
	}
	if r := h.get("/api/v1/dmarc/reports/mailbox?tenant_ids="+tenantB, tokA); r.status != http.StatusForbidden {
		t.Errorf("Brand B's attachments for Brand A's user: %d %s", r.status, r.body)
	}
	if r := h.get("/api/v1/dmarc/reports/"+strconv.FormatInt(up.Report.ID, 10), tokA); r.status != http.StatusNotFound {
		t.Errorf("Brand B's report for Brand A's user: %d %s", r.status, r.body)
	}
	expectInvalid(t, h.get("/api/v1/dmarc/reports/mailbox?limit=0", tokA), "query.limit")
	if r := h.get("/partials/dmarc-reports/"+strconv.FormatInt(googleID, 10), tokA); r.status != http.StatusOK ||
		!strings.Contains(string(r.body), "<td>40.107.22.91</td><td>mail-db8eur05on2091.outbound.protection.outlook.com</td><td>Microsoft</td>") {
		t.Errorf("the report's records for Brand A's user: %d %s", r.status, r.body)
	}
}

// TestDMARCMailboxDemo: on the demo world, the mailbox sync fetches the
// reports of every domain with DMARC — Google's and Microsoft's of two
// days each — and each record's source shows its reverse name and
// sending organisation: Exchange Online's Microsoft, the newsletters'
// SendGrid and Mailchimp, the spoofer's none.
func TestDMARCMailboxDemo(t *testing.T) {
	h := startHost(t, hostOpts{pluginsHCL: dmarcPlugins("    mailbox_sync = true"), env: map[string]string{"STEWARD_SIM_BOOTSTRAP": "true"}})
	admin := h.login()
	waitStartupSync(t, h, admin, "dmarc")
	waitStartupSync(t, h, admin, "dmarc_mailbox")
	f := &fixture{h: h, admin: admin}
	if r := f.waitRun(t, f.trigger(t, "dmarc_mailbox")); r.Status != "completed" {
		t.Fatalf("mailbox sync %+v", r)
	}
	var list dmarcReportList
	h.get("/api/v1/dmarc/reports?limit=100", admin).json(t, &list)
	// Five domains publish DMARC: two reporters, two days each.
	if list.Total != 20 {
		t.Fatalf("%d reports from the demo's mailboxes, want 20: %+v", list.Total, list)
	}
	orgs := map[string]string{"40.107.": "Microsoft", "2a01:111:": "Microsoft", "149.72.": "SendGrid", "205.201.": "Mailchimp", "203.0.113.": ""}
	for _, item := range list.Items {
		if item.Source != "mailbox" {
			t.Errorf("report %+v not from the mailbox", item)
		}
		var detail struct {
			Records []dmarcRecordSource `json:"records"`
		}
		h.get("/api/v1/dmarc/reports/"+strconv.FormatInt(item.ID, 10), admin).json(t, &detail)
		if len(detail.Records) != 5 {
			t.Errorf("report %d has %d records", item.ID, len(detail.Records))
		}
		for _, rec := range detail.Records {
			matched := false
			for prefix, org := range orgs {
				if strings.HasPrefix(rec.SourceIP, prefix) {
					matched = true
					if rec.SourceOrg != org || (org == "") != (rec.SourcePTR == "") || rec.LookedUpAt == nil {
						t.Errorf("report %d: source %+v, want organisation %q", item.ID, rec, org)
					}
				}
			}
			if !matched {
				t.Errorf("report %d: unexpected source %+v", item.ID, rec)
			}
		}
	}
	var atts []dmarcAttachment
	h.get("/api/v1/dmarc/reports/mailbox?limit=1000", admin).json(t, &atts)
	failed := 0
	for _, a := range atts {
		if a.Status == "failed" {
			failed++
		}
	}
	if len(atts) != 21 || failed != 1 {
		t.Errorf("%d attachments, %d failed; want 21 with the undeliverable notice failed", len(atts), failed)
	}
}
