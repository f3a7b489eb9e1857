package cloud_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// mailWorld gives the brand tenant a report mailbox of 120 messages, one
// of them archived: three pages at the client's page size of 50. The
// managing tenant has a mailbox of its own.
func mailWorld() *world.World {
	w := graphWorld()
	start := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)
	brand := world.Mailbox{Address: "dmarc@brand.example", DirectoryTenantID: brandTenant}
	for i := range 120 {
		m := world.MailMessage{ID: fmt.Sprintf("msg-%02d", i), Subject: fmt.Sprintf("Report %d", i), From: "noreply-dmarc-support@google.com",
			Received:    start.Add(time.Duration(i) * time.Hour).Format(time.RFC3339),
			Attachments: []world.MailAttachment{{Name: fmt.Sprintf("r%d.xml.gz", i), ContentType: "application/gzip", Text: fmt.Sprintf("<feedback>%d</feedback>", i)}}}
		if i == 3 {
			m.Folder = "archive"
		}
		brand.Messages = append(brand.Messages, m)
	}
	brand.Messages[5].Attachments = append(brand.Messages[5].Attachments, world.MailAttachment{Name: "note.txt", Base64: base64.StdEncoding.EncodeToString([]byte("hello"))})
	w.Mailboxes = []world.Mailbox{brand, {Address: "dmarc@managing.example", DirectoryTenantID: managingTenant,
		Messages: []world.MailMessage{{ID: "m-1", Subject: "Managing", Received: "2026-11-02T00:00:00Z"}}}}
	return w
}

// TestGraphMailMessagesAndAttachments lists a mailbox's inbox oldest
// first across pages, from a watermark, and reads attachments as the
// bytes the reporter sent; another tenant's mailbox and folders that do
// not exist are Graph's 404s.
func TestGraphMailMessagesAndAttachments(t *testing.T) {
	_, c := startGraphSim(t, mailWorld())
	ctx := context.Background()
	g := c.Graph(brandTenant)
	var got []cloud.MailMessage
	if err := g.MailMessages(ctx, "DMARC@brand.example", "Inbox", time.Time{}, func(m cloud.MailMessage) error { got = append(got, m); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 119 || got[0].ID != "msg-00" || got[118].ID != "msg-119" || got[0].From != "noreply-dmarc-support@google.com" || !got[0].HasAttachments {
		t.Fatalf("inbox: %d messages %+v", len(got), got)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Received.Before(got[i-1].Received) {
			t.Fatalf("not oldest first at %d: %+v", i, got)
		}
	}
	since := got[116].Received
	got = nil
	if err := g.MailMessages(ctx, "dmarc@brand.example", "inbox", since, func(m cloud.MailMessage) error { got = append(got, m); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ID != "msg-117" {
		t.Fatalf("since %s: %+v", since, got)
	}

	var atts []cloud.MailAttachment
	if err := g.MailAttachments(ctx, "dmarc@brand.example", "msg-05", func(a cloud.MailAttachment) error { atts = append(atts, a); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(atts) != 2 || atts[0].Name != "r5.xml.gz" || atts[0].ContentType != "application/gzip" || string(atts[1].Content) != "hello" {
		t.Fatalf("attachments %+v", atts)
	}
	zr, err := gzip.NewReader(bytes.NewReader(atts[0].Content))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(zr); string(b) != "<feedback>5</feedback>" {
		t.Fatalf("gzip attachment holds %q", b)
	}

	var re *azcore.ResponseError
	for name, err := range map[string]error{
		"another tenant's mailbox": g.MailMessages(ctx, "dmarc@managing.example", "inbox", time.Time{}, func(cloud.MailMessage) error { return nil }),
		"a missing folder":         g.MailMessages(ctx, "dmarc@brand.example", "nowhere", time.Time{}, func(cloud.MailMessage) error { return nil }),
		"a missing message":        g.MailAttachments(ctx, "dmarc@brand.example", "msg-999", func(cloud.MailAttachment) error { return nil }),
	} {
		if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %v, want 404", name, err)
		}
	}
	stop := errors.New("stop")
	if err := g.MailMessages(ctx, "dmarc@brand.example", "archive", time.Time{}, func(m cloud.MailMessage) error {
		if m.ID != "msg-03" {
			t.Errorf("archive lists %s", m.ID)
		}
		return stop
	}); err != stop {
		t.Errorf("fn's error: %v", err)
	}
}
