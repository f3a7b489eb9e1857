package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

// partnerEvidencePlugin declares the partner plugin with the example
// catalogue and an upload limit of 64 KiB.
func partnerEvidencePlugin(t *testing.T) string {
	catalogue, err := filepath.Abs(filepath.Join("..", "..", "plugins", "partner", "catalogue.example.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("plugin \"partner\" {\n  binary = %q\n  config {\n    catalogue_file = %q\n    max_file_bytes = 65536\n  }\n}\n",
		filepath.Join(binDir, "plugins", "partner"), catalogue)
}

type evidenceView struct {
	ID           string  `json:"id"`
	TenantID     string  `json:"tenant_id"`
	Status       string  `json:"status"`
	ReviewReason *string `json:"review_reason"`
	ExpiresAt    *string `json:"expires_at"`
	FileCount    int     `json:"file_count"`
}

type evidenceFile struct {
	ID          string `json:"id"`
	FileName    string `json:"file_name"`
	ContentType string `json:"content_type"`
	SizeBytes   int64  `json:"size_bytes"`
	SHA256      string `json:"sha256"`
}

// TestPartnerEvidenceThroughTheHost: a user of Brand A keeps evidence for
// a requirement of the catalogue, uploads a PDF through the host (a
// mislabelled file, an oversized one and a name with folders are handled
// as documented), downloads it as an attachment, and submits it; a user
// of Brand B finds none of it, the user cannot review it, an admin accepts
// it with a reason, which the partner assessment then counts, every change
// is in the audit log, and the expiry job runs on demand. On both databases, every answer checked against the
// OpenAPI document.
func TestPartnerEvidenceThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testPartnerEvidence(t, dialect) })
	}
}

func testPartnerEvidence(t *testing.T, dialect string) {
	f := newFixtureOn(t, dialect, hostOpts{pluginsHCL: partnerEvidencePlugin(t)})
	h := f.h
	userB := tenancy.User{DirectoryTenantID: f.tenantB.DirectoryTenantID, Subject: "oid-bob-evidence", Email: "bob@brand-b.example", Name: "Bob", Groups: []string{"grp-b"}}
	if err := tenancy.New(h.db()).UpsertUser(context.Background(), &userB); err != nil {
		t.Fatal(err)
	}
	tokA, tokB := f.tokenA, h.tokenFor(userB)
	send := func(method, path, token string, body any) response {
		t.Helper()
		if body == nil {
			return h.do(method, path, token, nil)
		}
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		return h.do(method, path, token, bytes.NewReader(raw), "Content-Type", "application/json")
	}
	want := func(what string, r response, status int) response {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, status)
		}
		return r
	}
	uploadTo := func(token, path, name string, content []byte) response {
		t.Helper()
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		hdr := textproto.MIMEHeader{}
		hdr.Set("Content-Disposition", `form-data; name="file"; filename="`+name+`"`)
		w, err := mw.CreatePart(hdr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(content)
		_ = mw.Close()
		return h.do(http.MethodPost, path, token, &buf, "Content-Type", mw.FormDataContentType())
	}
	upload := func(token, id, name string, content []byte) response {
		t.Helper()
		return uploadTo(token, "/api/v1/partner/evidence/"+id+"/files", name, content)
	}

	want("unknown requirement", send(http.MethodPost, "/api/v1/partner/evidence", tokA, map[string]any{"requirement_id": "NOPE-1"}), http.StatusUnprocessableEntity)
	want("create in Brand B", send(http.MethodPost, "/api/v1/partner/evidence", tokA, map[string]any{"tenant_id": f.tenantB.ID, "requirement_id": "IAM-03"}), http.StatusForbidden)
	var ev evidenceView
	want("create", send(http.MethodPost, "/api/v1/partner/evidence", tokA, map[string]any{"requirement_id": "IAM-03", "status": "in_progress",
		"owner": "Alice", "links": []string{"https://reviews.brand-a.example/q3"}}), http.StatusCreated).json(t, &ev)
	if ev.TenantID != f.tenantA.ID || ev.Status != "in_progress" {
		t.Fatalf("created %+v", ev)
	}
	at := "/api/v1/partner/evidence/" + ev.ID

	pdf := []byte("%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
	var file evidenceFile
	want("upload", upload(tokA, ev.ID, "../../access-review-Q3.pdf", pdf), http.StatusCreated).json(t, &file)
	digest := sha256.Sum256(pdf)
	if file.SHA256 != hex.EncodeToString(digest[:]) || file.SizeBytes != int64(len(pdf)) || file.FileName != "access-review-Q3.pdf" || file.ContentType != "application/pdf" {
		t.Errorf("uploaded %+v", file)
	}
	// The blob is in the plugin's own folder of the data directory, which
	// only the host's user may enter.
	own := filepath.Join(h.dataDir, "plugins", "partner")
	if blob, err := os.ReadFile(filepath.Join(own, "evidence", file.ID[:2], file.ID)); err != nil || !bytes.Equal(blob, pdf) {
		t.Errorf("the blob in the plugin's data directory: %v", err)
	}
	if st, err := os.Stat(own); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the plugin's data directory: %v, %v", st.Mode(), err)
	}
	r := want("mislabelled", upload(tokA, ev.ID, "report.pdf", []byte("<html><script>alert(1)</script></html>")), http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `"location":"body.file"`) {
		t.Errorf("mislabelled: %s", r.body)
	}
	r = want("oversized", upload(tokA, ev.ID, "big.txt", bytes.Repeat([]byte("a"), 65537)), http.StatusRequestEntityTooLarge)
	if !strings.Contains(string(r.body), `"location":"body.file"`) {
		t.Errorf("oversized: %s", r.body)
	}

	r = want("download", h.get(at+"/files/"+file.ID, tokA), http.StatusOK)
	if !bytes.Equal(r.body, pdf) || r.header.Get("Content-Type") != "application/pdf" || r.header.Get("X-Content-Type-Options") != "nosniff" ||
		r.header.Get("Content-Disposition") != `attachment; filename="access-review-Q3.pdf"; filename*=UTF-8''access-review-Q3.pdf` {
		t.Errorf("download: %v, %d bytes", r.header, len(r.body))
	}

	// Brand B's user finds nothing of Brand A's evidence.
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, at, nil},
		{http.MethodPatch, at, map[string]any{"notes": "mine"}},
		{http.MethodGet, at + "/files", nil},
		{http.MethodGet, at + "/files/" + file.ID, nil},
		{http.MethodDelete, at + "/files/" + file.ID, nil},
	} {
		r := want("Brand B: "+c.method+" "+c.path, send(c.method, c.path, tokB, c.body), http.StatusNotFound)
		if strings.Contains(string(r.body), "PDF") || strings.Contains(string(r.body), f.tenantA.ID) {
			t.Errorf("Brand B %s %s: %s", c.method, c.path, r.body)
		}
	}
	want("Brand B uploads", upload(tokB, ev.ID, "x.pdf", pdf), http.StatusNotFound)
	want("Brand B lists Brand A", h.get("/api/v1/partner/evidence?tenant_ids="+f.tenantA.ID, tokB), http.StatusForbidden)
	var list struct {
		Items []evidenceView `json:"items"`
		Total int            `json:"total"`
	}
	want("Brand B lists", h.get("/api/v1/partner/evidence", tokB), http.StatusOK).json(t, &list)
	if list.Total != 0 {
		t.Errorf("Brand B lists %+v", list)
	}

	want("submit", send(http.MethodPatch, at, tokA, map[string]any{"status": "submitted"}), http.StatusOK)
	want("upload to submitted evidence", upload(tokA, ev.ID, "late.pdf", pdf), http.StatusConflict)
	want("a user reviews", send(http.MethodPost, at+"/review", tokA, map[string]any{"decision": "accepted", "reason": "mine"}), http.StatusForbidden)
	want("review without a reason", send(http.MethodPost, at+"/review", f.admin, map[string]any{"decision": "accepted"}), http.StatusUnprocessableEntity)
	want("accept", send(http.MethodPost, at+"/review", f.admin, map[string]any{"decision": "accepted", "reason": "Q3 review complete", "validity_days": 90}), http.StatusOK).json(t, &ev)
	if ev.Status != "accepted" || ev.ReviewReason == nil || *ev.ReviewReason != "Q3 review complete" || ev.ExpiresAt == nil || ev.FileCount != 1 {
		t.Errorf("accepted %+v", ev)
	}
	want("Brand A lists accepted", h.get("/api/v1/partner/evidence?status=accepted", tokA), http.StatusOK).json(t, &list)
	if list.Total != 1 || list.Items[0].ID != ev.ID {
		t.Errorf("accepted evidence listed %+v", list)
	}

	var job struct {
		JobID string `json:"job_id"`
	}
	want("expiry on demand", h.do(http.MethodPost, "/api/v1/sync/partner_evidence_expiry", f.admin, nil), http.StatusAccepted).json(t, &job)
	if run := f.waitRun(t, job.JobID); run.Status != "completed" || run.RecordsProcessed != 0 {
		t.Errorf("expiry run %+v", run)
	}
	// The assessment reads the accepted evidence: IAM-03, which no check
	// decides, is met for Brand A and still awaits evidence for Brand B.
	want("partner sync", h.do(http.MethodPost, "/api/v1/partner/sync", f.admin, nil), http.StatusAccepted).json(t, &job)
	if run := f.waitRun(t, job.JobID); run.Status != "completed" {
		t.Fatalf("partner run %+v", run)
	}
	var results struct {
		Items []struct {
			TenantID       string `json:"tenant_id"`
			RequirementID  string `json:"requirement_id"`
			Status         string `json:"status"`
			EvidenceStatus string `json:"evidence_status"`
		} `json:"items"`
	}
	h.get("/api/v1/partner/results?limit=500", f.admin).json(t, &results)
	got := map[string]string{}
	for _, it := range results.Items {
		if it.RequirementID == "IAM-03" {
			got[it.TenantID] = it.Status + "/" + it.EvidenceStatus
		}
	}
	if got[f.tenantA.ID] != "met/accepted" || got[f.tenantB.ID] != "awaiting_evidence/" {
		t.Errorf("IAM-03 assessed as %v", got)
	}

	var page auditPage
	h.get("/api/v1/audit-logs?action_prefix=partner_evidence&limit=100", f.admin).json(t, &page)
	seen := map[string]string{}
	for _, e := range page.Items {
		seen[e.Action] = e.ActorID
		if e.TenantID == nil || *e.TenantID != f.tenantA.ID {
			t.Errorf("audit entry of another tenant: %+v", e)
		}
	}
	for action, actor := range map[string]string{
		"partner_evidence.create.success": f.userA.ID, "partner_evidence.file_upload.success": f.userA.ID,
		"partner_evidence.file_upload.failure": f.userA.ID, "partner_evidence.update.success": f.userA.ID,
		"partner_evidence.review.success": "",
	} {
		got, ok := seen[action]
		if !ok || actor != "" && got != actor {
			t.Errorf("audit %s by %q, want %q (seen %v)", action, got, actor, seen)
		}
	}

	// The partner page's evidence panel acts through the host as the API
	// does: its form starts Brand A's evidence and uploads a file, stored
	// with its SHA-256; Brand B's user is refused Brand A's tenant, and a
	// standard user the review.
	panel := "/partials/partner-evidence/IAM-01"
	inA := "?tenant_id=" + f.tenantA.ID
	form := func(what, path, token string, v url.Values, status int) string {
		t.Helper()
		return string(want(what, h.do(http.MethodPost, path, token, strings.NewReader(v.Encode()), "Content-Type", "application/x-www-form-urlencoded"), status).body)
	}
	if html := form("panel: start", panel+inA, tokA, url.Values{"owner": {"Alice"}}, http.StatusOK); !strings.Contains(html, "Evidence started.") {
		t.Errorf("panel: start: %s", html)
	}
	form("panel: Brand B starts in Brand A", panel+inA, tokB, url.Values{}, http.StatusForbidden)
	html := string(want("panel: upload", uploadTo(tokA, panel+"/files"+inA, "plan.pdf", pdf), http.StatusOK).body)
	if !strings.Contains(html, "File uploaded.") || !strings.Contains(html, hex.EncodeToString(digest[:6])) {
		t.Errorf("panel: upload: %s", html)
	}
	want("panel: Brand B uploads to Brand A", uploadTo(tokB, panel+"/files"+inA, "plan.pdf", pdf), http.StatusForbidden)
	form("panel: submit", panel+"/status"+inA, tokA, url.Values{"status": {"submitted"}}, http.StatusOK)
	form("panel: a user reviews", panel+"/review"+inA, tokA, url.Values{"decision": {"accepted"}, "reason": {"mine"}}, http.StatusForbidden)
	if html := form("panel: review", panel+"/review"+inA, f.admin, url.Values{"decision": {"rejected"}, "reason": {"Out of date"}}, http.StatusOK); !strings.Contains(html, "Out of date") {
		t.Errorf("panel: review: %s", html)
	}
}
