package world

import (
	"fmt"
	"strings"
	"time"
)

// demoSender is a source of a demo domain's mail as receivers report it,
// with the reverse name its address has (none for "").
type demoSender struct {
	ip, ptr    string
	count      int64
	dkim, spf  string // aligned results: "pass" or "fail"
	authDomain string // the domain the raw DKIM and SPF results are of
}

// demoSenders are a domain's sources on a day: Exchange Online over IPv4
// and IPv6, a newsletter through SendGrid and one through Mailchimp
// (DKIM aligned, SPF on the provider's bounce domain), and a spoofer
// without a reverse name that fails both. The addresses are the brand's
// and the domain's own, so the reverse names stay apart.
func demoSenders(brand, n int, domain string) []demoSender {
	dashed := strings.ReplaceAll(domain, ".", "-")
	return []demoSender{
		{ip: fmt.Sprintf("40.107.%d.%d", brand, 10+n), ptr: fmt.Sprintf("mail-%s%d.outbound.protection.outlook.com", dashed, n), count: int64(300 + 40*n), dkim: "pass", spf: "pass", authDomain: domain},
		{ip: fmt.Sprintf("2a01:111:f400:%x::%x", 0x7e00+brand, 0x50+n), ptr: fmt.Sprintf("mail-%s%dv6.outbound.protection.outlook.com", dashed, n), count: int64(60 + 5*n), dkim: "pass", spf: "fail", authDomain: domain},
		{ip: fmt.Sprintf("149.72.%d.%d", brand, 20+n), ptr: fmt.Sprintf("o%d.ptr%d.mail.sendgrid.net", n+1, 1000*brand+n), count: int64(120 + 10*n), dkim: "pass", spf: "fail", authDomain: "sendgrid.net"},
		{ip: fmt.Sprintf("205.201.%d.%d", 128+brand, 30+n), ptr: fmt.Sprintf("mail%d.atl%d.mcsv.net", 30+n, brand), count: int64(45 + n), dkim: "pass", spf: "fail", authDomain: "mcsv.net"},
		{ip: fmt.Sprintf("203.0.113.%d", 200+10*brand+n), count: int64(7 + 3*n), dkim: "fail", spf: "fail", authDomain: "spoof-" + dashed + ".invalid"},
	}
}

// demoReporter is a receiver that sends the demo's aggregate reports.
type demoReporter struct {
	org, email, from string
	// host begins its reports' file names.
	host string
	// ext names how its reports are attached: .zip (Google), .xml.gz
	// (Microsoft) or .xml.
	ext, contentType string
}

var demoReporters = []demoReporter{
	{org: "google.com", email: "noreply-dmarc-support@google.com", from: "noreply-dmarc-support@google.com", host: "google.com", ext: ".zip", contentType: "application/zip"},
	{org: "Enterprise Outlook", email: "dmarcreport@microsoft.com", from: "dmarcreport@microsoft.com", host: "enterprise.protection.outlook.com", ext: ".xml.gz", contentType: "application/gzip"},
}

// mailboxes gives each domain with a DMARC record its rua mailbox,
// dmarc-reports@<domain>, with the reports of the two days before
// yesterday from Google (zipped) and Microsoft (gzipped), and the
// reverse names of their sources (PTR records). Contoso Retail's
// mailbox also holds a message whose attachment is no report. Nothing
// is drawn at random: the reports are a function of the domain and the
// day.
func (g *demoGen) mailboxes() {
	for _, dt := range g.ts {
		for n, domain := range dt.spec.domains {
			m := demoMailPosture[domain]
			if m.dmarc == "" {
				continue
			}
			box := Mailbox{Address: "dmarc-reports@" + domain, DirectoryTenantID: dt.t.DirectoryTenantID}
			senders := demoSenders(dt.spec.brand, n, domain)
			for _, s := range senders {
				if s.ptr != "" {
					g.w.DNS = append(g.w.DNS, DNSRecord{Name: s.ip, Type: "PTR", Value: s.ptr})
				}
			}
			for d := 3; d >= 2; d-- {
				begin := g.today.AddDate(0, 0, -d)
				for k, r := range demoReporters {
					id := fmt.Sprintf("%d%02d%d", begin.Unix(), n, k)
					name := fmt.Sprintf("%s!%s!%d!%d%s", r.host, domain, begin.Unix(), begin.Unix()+86399, r.ext)
					box.Messages = append(box.Messages, MailMessage{
						ID:       fmt.Sprintf("AAMkAD%s-%s", strings.ReplaceAll(domain, ".", ""), id),
						Subject:  fmt.Sprintf("Report Domain: %s Submitter: %s Report-ID: %s", domain, r.org, id),
						From:     r.from,
						Received: begin.Add(24*time.Hour + time.Duration(5+k)*time.Hour).Format(time.RFC3339),
						Attachments: []MailAttachment{{Name: name, ContentType: r.contentType,
							Text: demoReport(r, id, domain, m, begin, senders, d+k)}},
					})
				}
			}
			if domain == "contoso-retail.example" {
				box.Messages = append(box.Messages, MailMessage{ID: "AAMkADcontosoretailexample-notice", Subject: "Undeliverable: DMARC report",
					From: "postmaster@contoso-retail.example", Received: g.today.AddDate(0, 0, -1).Add(7 * time.Hour).Format(time.RFC3339),
					Attachments: []MailAttachment{{Name: "details.xml", ContentType: "text/xml", Text: "<html><body>Delivery has failed.</body></html>"}}})
			}
			g.w.Mailboxes = append(g.w.Mailboxes, box)
		}
	}
}

// demoReport is an aggregate report (RFC 7489, appendix C) of a day of
// the domain's mail from the senders, their counts scaled by scale.
func demoReport(r demoReporter, id, domain string, m demoMail, begin time.Time, senders []demoSender, scale int) string {
	pct := m.pct
	if pct == 0 {
		pct = 100
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<feedback>\n  <report_metadata>\n    <org_name>%s</org_name>\n    <email>%s</email>\n"+
		"    <report_id>%s</report_id>\n    <date_range>\n      <begin>%d</begin>\n      <end>%d</end>\n    </date_range>\n  </report_metadata>\n"+
		"  <policy_published>\n    <domain>%s</domain>\n    <adkim>r</adkim>\n    <aspf>r</aspf>\n    <p>%s</p>\n    <sp>%s</sp>\n    <pct>%d</pct>\n  </policy_published>\n",
		r.org, r.email, id, begin.Unix(), begin.Unix()+86399, domain, m.dmarc, m.dmarc, pct)
	for _, s := range senders {
		disposition := "none"
		if s.dkim != "pass" && s.spf != "pass" {
			disposition = m.dmarc
		}
		fmt.Fprintf(&b, "  <record>\n    <row>\n      <source_ip>%s</source_ip>\n      <count>%d</count>\n      <policy_evaluated>\n"+
			"        <disposition>%s</disposition>\n        <dkim>%s</dkim>\n        <spf>%s</spf>\n      </policy_evaluated>\n    </row>\n"+
			"    <identifiers>\n      <header_from>%s</header_from>\n    </identifiers>\n    <auth_results>\n"+
			"      <dkim>\n        <domain>%s</domain>\n        <result>%s</result>\n        <selector>selector1</selector>\n      </dkim>\n"+
			"      <spf>\n        <domain>%s</domain>\n        <result>%s</result>\n      </spf>\n    </auth_results>\n  </record>\n",
			s.ip, s.count*int64(scale)/4+1, disposition, s.dkim, s.spf, domain, dkimDomain(s, domain), s.dkim, s.authDomain, rawSPF(s, domain))
	}
	b.WriteString("</feedback>\n")
	return b.String()
}

// dkimDomain is the domain a sender signs as: the From domain for an
// aligned signature, else its own.
func dkimDomain(s demoSender, domain string) string {
	if s.dkim == "pass" {
		return domain
	}
	return s.authDomain
}

// rawSPF is the raw SPF result: the aligned result when it passed, a
// soft fail for a spoofer, a fail of the domain's own record, and a pass
// of a provider's bounce domain, unaligned.
func rawSPF(s demoSender, domain string) string {
	switch {
	case s.spf == "pass":
		return "pass"
	case strings.HasSuffix(s.authDomain, ".invalid"):
		return "softfail"
	case s.authDomain == domain:
		return "fail"
	}
	return "pass"
}
