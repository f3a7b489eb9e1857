package graph_test

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/url"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/graph"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// startMail serves testWorld with a mailbox of Alpha's: twelve messages
// an hour apart, the third in the archive, the first with a zipped
// report and a text file.
func startMail(t *testing.T) *env {
	t.Helper()
	w := testWorld()
	box := world.Mailbox{Address: "dmarc@alpha.example", DirectoryTenantID: tenantA}
	for i := range 12 {
		m := world.MailMessage{ID: fmt.Sprintf("m%02d", i), Subject: fmt.Sprintf("Report %d", i), From: "noreply@reporter.example",
			Received: time.Date(2026, 11, 20, i, 0, 0, 0, time.UTC).Format(time.RFC3339)}
		if i == 2 {
			m.Folder = "archive"
		}
		box.Messages = append(box.Messages, m)
	}
	box.Messages[0].Attachments = []world.MailAttachment{{Name: "r!alpha.example!1!2.zip", ContentType: "application/zip", Text: "<feedback/>"},
		{Name: "note.txt", Base64: base64.StdEncoding.EncodeToString([]byte("hi"))}}
	w.Mailboxes = []world.Mailbox{box}
	s, p := simtest.Start(t, w, cloudsim.Options{Now: simtest.Fixed(now)}, simtest.Client(simtest.ClientID, simtest.ClientSecret))
	graph.Register(s, p)
	e := &env{t: t, sim: s, tokens: map[string]string{}}
	for _, tid := range []string{tenantA, tenantB} {
		e.tokens[tid] = e.token(tid, graph.Audience+"/.default")
	}
	return e
}

// TestMailMessages lists a folder's messages as Graph does: newest first
// by default, ten a page, $top, $orderby and $filter on receivedDateTime;
// the mailbox is its directory's only.
func TestMailMessages(t *testing.T) {
	e := startMail(t)
	const inbox = "/v1.0/users/dmarc@alpha.example/mailFolders/Inbox/messages"
	items, pages := e.all(tenantA, inbox)
	if len(items) != 11 || pages != 2 || items[0]["id"] != "m11" || items[10]["id"] != "m00" {
		t.Fatalf("inbox: %d messages in %d pages: %v", len(items), pages, items)
	}
	first := items[10]
	from := first["from"].(map[string]any)["emailAddress"].(map[string]any)
	if first["receivedDateTime"] != "2026-11-20T00:00:00Z" || first["hasAttachments"] != true || from["address"] != "noreply@reporter.example" || first["subject"] != "Report 0" {
		t.Errorf("message %v", first)
	}
	resp, body := e.get(e.tokens[tenantA], inbox+"?$top=3&$orderby="+url.QueryEscape("receivedDateTime asc")+"&$filter="+url.QueryEscape("receivedDateTime ge 2026-11-20T05:00:00Z"))
	got := body["value"].([]any)
	if resp.StatusCode != 200 || len(got) != 3 || got[0].(map[string]any)["id"] != "m05" || body["@odata.nextLink"] == nil ||
		body["@odata.context"] != e.sim.URLs[cloudsim.Graph]+"/v1.0/$metadata#users('dmarc@alpha.example')/mailFolders('Inbox')/messages" {
		t.Errorf("from 05:00, oldest first, three a page: %d %v", resp.StatusCode, body)
	}
	if archived, _ := e.all(tenantA, "/v1.0/users/dmarc@alpha.example/mailFolders/archive/messages"); len(archived) != 1 || archived[0]["id"] != "m02" {
		t.Errorf("archive %v", archived)
	}
	for path, want := range map[string][2]any{
		inbox + "?$filter=" + url.QueryEscape("receivedDateTime ge 'yesterday'"): {400, "ErrorInvalidUrlQuery"},
		inbox + "?$filter=" + url.QueryEscape("receivedDateTime ge 2026-13-01"):  {400, "ErrorInvalidUrlQuery"},
		inbox + "?$filter=" + url.QueryEscape("subject ge 'a'"):                  {400, "ErrorInvalidUrlQuery"},
		inbox + "?$top=1001":        {400, "ErrorInvalidUrlQuery"},
		inbox + "?$orderby=subject": {400, "ErrorInvalidUrlQuery"},
		"/v1.0/users/dmarc@alpha.example/mailFolders/nowhere/messages": {404, "ErrorItemNotFound"},
		"/v1.0/users/nobody@alpha.example/mailFolders/inbox/messages":  {404, "ErrorInvalidUser"},
		"/v1.0/users/dmarc@alpha.example/messages/m99/attachments":     {404, "ErrorItemNotFound"},
	} {
		resp, body := e.get(e.tokens[tenantA], path)
		if code, _, _ := graphError(body); resp.StatusCode != want[0] || code != want[1] {
			t.Errorf("%s: %d %v, want %v", path, resp.StatusCode, body, want)
		}
	}
	if resp, body := e.get(e.tokens[tenantB], inbox); resp.StatusCode != 404 {
		t.Errorf("Beta's token reads Alpha's mailbox: %d %v", resp.StatusCode, body)
	}
}

// TestMailAttachments serves file attachments with their content in
// contentBytes, a report packed by its name.
func TestMailAttachments(t *testing.T) {
	e := startMail(t)
	items, _ := e.all(tenantA, "/v1.0/users/dmarc@alpha.example/messages/m00/attachments")
	if len(items) != 2 {
		t.Fatalf("attachments %v", items)
	}
	a := items[0]
	raw, err := base64.StdEncoding.DecodeString(a["contentBytes"].(string))
	if err != nil || a["@odata.type"] != "#microsoft.graph.fileAttachment" || a["name"] != "r!alpha.example!1!2.zip" || a["contentType"] != "application/zip" ||
		a["size"] != float64(len(raw)) || a["isInline"] != false {
		t.Fatalf("attachment %v %v", a, err)
	}
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil || len(zr.File) != 1 || zr.File[0].Name != "r!alpha.example!1!2.xml" {
		t.Fatalf("zip %v %v", zr, err)
	}
	f, _ := zr.File[0].Open()
	if b, _ := io.ReadAll(f); string(b) != "<feedback/>" {
		t.Errorf("zip member holds %q", b)
	}
	if b, _ := base64.StdEncoding.DecodeString(items[1]["contentBytes"].(string)); string(b) != "hi" {
		t.Errorf("note.txt holds %q", b)
	}
}
