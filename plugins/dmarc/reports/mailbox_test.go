package reports

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/core/cloud"
)

// mailbox is a report mailbox as Graph lists it: its messages oldest
// first, each with its attachments. failAt, when set, fails the listing
// of that message's attachments, as a Graph outage would.
type mailbox struct {
	messages    []cloud.MailMessage
	attachments map[string][]cloud.MailAttachment
	failAt      string
	listed      int
}

func (m *mailbox) MailMessages(_ context.Context, _, _ string, since time.Time, fn func(cloud.MailMessage) error) error {
	for _, msg := range m.messages {
		if msg.Received.Before(since) {
			continue
		}
		m.listed++
		if err := fn(msg); err != nil {
			return err
		}
	}
	return nil
}

func (m *mailbox) MailAttachments(_ context.Context, _, id string, fn func(cloud.MailAttachment) error) error {
	if id == m.failAt {
		return errors.New("graph: 503")
	}
	for _, a := range m.attachments[id] {
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil || zw.Close() != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestMailboxSync reads a mailbox of Contoso: a report already uploaded
// counts once, a bad attachment and another tenant's report are recorded
// and skipped, a failure keeps the watermark at the last message read,
// and the next run reads only the rest.
func TestMailboxSync(t *testing.T) {
	each(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		day := time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)
		google := sample(t, "google-contoso-retail.xml")
		if _, _, err := st.Insert(ctx, mustParse(t, "google-contoso-retail.xml"), Meta{TenantID: tenantContoso, Source: SourceUpload, ReceivedAt: day}); err != nil {
			t.Fatal(err)
		}
		mb := &mailbox{
			messages: []cloud.MailMessage{
				{ID: "m1", Subject: "Report domain: contoso-retail.example", Received: day},
				{ID: "m2", Subject: "Report domain: northwind-travel.example", Received: day.Add(time.Hour)},
				{ID: "m3", Subject: "Hello", Received: day.Add(2 * time.Hour)},
				{ID: "m4", Subject: "Report domain: fabrikam-foods.example", Received: day.Add(3 * time.Hour)},
			},
			attachments: map[string][]cloud.MailAttachment{
				"m1": {{ID: "a1", Name: "google.com!contoso-retail.example.xml.gz", Content: gzipped(t, google)}},
				"m2": {{ID: "a2", Name: "yahoo.xml", Content: sample(t, "yahoo-northwind-travel.xml")}, {ID: "a3", Name: "bad.xml", Content: []byte("<html/>")}},
				"m4": {{ID: "a4", Name: "microsoft.xml", Content: sample(t, "microsoft-fabrikam-foods.xml")}},
			},
			failAt: "m3",
		}
		tenantOf := func(_ context.Context, domain string) (string, bool, error) {
			if domain == "fabrikam-foods.example" {
				return tenantFabrikam, true, nil
			}
			return tenantContoso, true, nil
		}
		sync := &MailboxSync{Store: st, Enabled: true, TenantOf: tenantOf,
			Mailboxes: func(context.Context, string) ([]string, error) { return []string{"dmarc@contoso-retail.example"}, nil }}
		res, err := sync.Fetch(ctx, hclog.NewNullLogger(), tenantContoso, mb)
		if err == nil || !strings.Contains(err.Error(), "503") || res.Stored != 1 || res.Duplicates != 1 || res.Failed != 1 {
			t.Fatalf("first run %+v %v, want the outage after 2 messages", res, err)
		}
		state := &MailboxState{TenantID: tenantContoso, Mailbox: "dmarc@contoso-retail.example", Folder: "inbox"}
		if err := st.DB.NewSelect().Model(state).WherePK().Scan(ctx); err != nil || !state.Watermark.Equal(day.Add(time.Hour)) {
			t.Fatalf("watermark %v %v, want m2's time", state.Watermark, err)
		}

		mb.failAt, mb.listed = "", 0
		if res, err = sync.Fetch(ctx, hclog.NewNullLogger(), tenantContoso, mb); err != nil || res.Messages != 2 || res.Foreign != 1 || res.Stored != 0 {
			t.Fatalf("second run %+v %v, want m3 and m4 only", res, err)
		}
		if mb.listed != 3 {
			t.Errorf("second run listed %d messages, want 3 from the watermark on", mb.listed)
		}
		if res, err = sync.Fetch(ctx, hclog.NewNullLogger(), tenantContoso, mb); err != nil || res.Messages != 0 {
			t.Fatalf("third run %+v %v, want nothing new", res, err)
		}

		list, total, err := st.List(ctx, ReportFilter{TenantIDs: []string{tenantContoso, tenantFabrikam}, Limit: 10, SortBy: "org_name"})
		if err != nil || total != 2 || list[0].Source != SourceMailbox || list[0].OrgName != "Yahoo" || list[1].Source != SourceUpload {
			t.Fatalf("reports %+v %d %v, want the upload and Yahoo's from the mailbox, not Fabrikam's", list, total, err)
		}
		atts, err := st.Attachments(ctx, []string{tenantContoso}, 100)
		if err != nil || len(atts) != 5 {
			t.Fatalf("attachments %+v %v", atts, err)
		}
		status := map[string]string{}
		for _, a := range atts {
			status[a.MessageID+"/"+a.AttachmentID] = a.Status + ": " + a.Reason
		}
		for key, want := range map[string][2]string{"m1/a1": {"duplicate: ", "is stored already"}, "m2/a2": {"stored: ", ""},
			"m2/a3": {"failed: ", "root element is <html>"}, "m3/": {"failed: ", "the message has no file attachment"},
			"m4/a4": {"foreign: ", "the report is about fabrikam-foods.example"}} {
			if !strings.HasPrefix(status[key], want[0]) || !strings.Contains(status[key], want[1]) {
				t.Errorf("%s: %q, want %q", key, status[key], want)
			}
		}
		if other, err := st.Attachments(ctx, []string{tenantFabrikam}, 100); err != nil || len(other) != 0 {
			t.Errorf("Fabrikam's attachments %+v %v", other, err)
		}
	})
}
