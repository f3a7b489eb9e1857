package views_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/partner/evidence"
	"github.com/stewardhq/steward/sdk"
)

var fabrikamer = sdk.Principal{ID: "uf", Kind: "user", TenantIDs: []string{fabrikam.ID}}

// formAt is a panel route of the requirement for the tenant.
func formAt(req, tenant, tail string) string {
	return "/partials/partner-evidence/" + req + tail + "?tenant_id=" + tenant
}

// post answers a form's status and body; a form of nil is a DELETE.
func (f *fixture) post(t *testing.T, p sdk.Principal, target string, form url.Values) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodDelete, target, nil)
	if form != nil {
		req = httptest.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return f.send(t, p, req)
}

func (f *fixture) send(t *testing.T, p sdk.Principal, req *http.Request) (int, string) {
	t.Helper()
	resp := f.h.Do(req, p)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// ok is the answer's HTML, which must be 200.
func (f *fixture) ok(t *testing.T, p sdk.Principal, target string, form url.Values) string {
	t.Helper()
	code, body := f.post(t, p, target, form)
	if code != http.StatusOK {
		t.Fatalf("%s: %d %s", target, code, body)
	}
	return body
}

// upload posts a file through the panel's upload form.
func (f *fixture) upload(t *testing.T, p sdk.Principal, target, name string, content []byte) (int, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	part, err := mw.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := part.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, target, &b)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return f.send(t, p, req)
}

// record is the tenant's evidence for the requirement, which must exist.
func (f *fixture) record(t *testing.T, tenant, req string) evidence.Evidence {
	t.Helper()
	list, _, err := f.evidence.List(context.Background(), evidence.ListQuery{TenantIDs: []string{tenant}, RequirementIDs: []string{req}, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("%s has no evidence for %s", tenant, req)
	}
	return list[0]
}

func lacks(t *testing.T, what, body string, unwanted ...string) {
	t.Helper()
	for _, u := range unwanted {
		if strings.Contains(body, u) {
			t.Errorf("%s has %q: %s", what, u, body)
		}
	}
}

// TestEvidencePanel: a tenant's user starts, edits, uploads to, deletes
// from and submits its evidence through the page's forms, each refusal
// beside its field; only an admin sees and may post the review; no form
// reaches another tenant's evidence.
func TestEvidencePanel(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := start(t, dialect)
			if _, _, err := f.h.RunJob(context.Background(), "partner"); err != nil {
				t.Fatal(err)
			}
			_, page := f.view(t, "/partner", contosoer)
			contains(t, "contoso's page", page, `hx-post="`+formAt("IR-01", contoso.ID, ""), `<label for="ev-t-contoso-IR-01-due_date">`,
				`type="date"`, "Start evidence")
			lacks(t, "contoso's page", page, fabrikam.ID)

			// Refused: the due date is named beside its field; nothing is stored.
			html := f.ok(t, contosoer, formAt("IR-01", contoso.ID, ""), url.Values{"owner": {"Ada"}, "due_date": {"31 December"}})
			contains(t, "a refused start", html, `<details class="partner-evidence" open>`, `id="ev-t-contoso-IR-01-due_date-error"`, `aria-invalid="true"`,
				`value="Ada"`, "Start evidence")
			if list, _, _ := f.evidence.List(context.Background(), evidence.ListQuery{TenantIDs: []string{contoso.ID}, Limit: 10}); len(list) != 0 {
				t.Errorf("a refused start stored %+v", list)
			}

			html = f.ok(t, contosoer, formAt("IR-01", contoso.ID, ""), url.Values{"owner": {"Ada"}, "due_date": {"2026-12-15"}})
			contains(t, "the panel started", html, "Evidence started.", "in progress", "Ada", "2026-12-15", "No files yet.", "Submit for review")
			rec := f.record(t, contoso.ID, "IR-01")
			if rec.Status != evidence.StatusInProgress || rec.Owner == nil || *rec.Owner != "Ada" || rec.CreatedBy != contosoer.ID {
				t.Errorf("started %+v", rec)
			}

			html = f.ok(t, contosoer, formAt("IR-01", contoso.ID, "/edit"), url.Values{"owner": {"Grace"}, "notes": {strings.Repeat("n", 4001)}})
			contains(t, "a refused edit", html, `id="ev-t-contoso-IR-01-notes-error"`, `value="Grace"`)
			html = f.ok(t, contosoer, formAt("IR-01", contoso.ID, "/edit"), url.Values{"owner": {"Grace"}, "notes": {"Plan v2"}})
			contains(t, "an edit", html, "Evidence saved.", "Grace", "Plan v2")
			if rec = f.record(t, contoso.ID, "IR-01"); rec.DueDate != nil || *rec.Owner != "Grace" {
				t.Errorf("an edit without a due date keeps %+v", rec)
			}

			// An upload stores the file with its SHA-256; a content that is
			// not its name's type is refused beside the file field.
			content := []byte("Incident response plan\nCall the duty officer.\n")
			sum := sha256.Sum256(content)
			code, html := f.upload(t, contosoer, formAt("IR-01", contoso.ID, "/files"), "plan.txt", content)
			if code != http.StatusOK {
				t.Fatalf("upload: %d %s", code, html)
			}
			files, err := f.evidence.Files(context.Background(), rec.ID)
			if err != nil || len(files) != 1 || files[0].SHA256 != hex.EncodeToString(sum[:]) || files[0].SizeBytes != int64(len(content)) {
				t.Fatalf("uploaded %+v %v", files, err)
			}
			contains(t, "the panel with a file", html, "File uploaded.", "plan.txt", hex.EncodeToString(sum[:6]), strconv.Itoa(len(content))+" bytes",
				`href="/api/v1/partner/evidence/`+rec.ID+`/files/`+files[0].ID+`"`)
			code, html = f.upload(t, contosoer, formAt("IR-01", contoso.ID, "/files"), "plan.pdf", content)
			if code != http.StatusOK {
				t.Fatalf("refused upload: %d %s", code, html)
			}
			contains(t, "a refused upload", html, `id="ev-t-contoso-IR-01-file-error"`)
			if files, _ = f.evidence.Files(context.Background(), rec.ID); len(files) != 1 {
				t.Errorf("a refused upload stored %+v", files)
			}

			// Another tenant: the fabrikam user is refused contoso's
			// tenant, and contoso's file under its own evidence is 404.
			// The start form as a browser sends it, its fields empty; a
			// body of no fields at all is not a form.
			blank := url.Values{"owner": {""}, "due_date": {""}}
			if code, body := f.post(t, admin, formAt("IR-01", fabrikam.ID, ""), url.Values{}); code != http.StatusUnprocessableEntity || !strings.Contains(body, `"location":"body"`) {
				t.Errorf("an empty form: %d %s, want 422 naming body", code, body)
			}
			f.ok(t, admin, formAt("IR-01", fabrikam.ID, ""), blank)
			for _, tail := range []string{"", "/edit", "/status", "/files"} {
				if code, body := f.post(t, fabrikamer, formAt("IR-01", contoso.ID, tail), url.Values{"status": {"submitted"}}); code != http.StatusForbidden {
					t.Errorf("fabrikam's user posting %s to contoso: %d %s", tail, code, body)
				}
			}
			if code, _ := f.post(t, fabrikamer, formAt("IR-01", contoso.ID, "/files/"+files[0].ID), nil); code != http.StatusForbidden {
				t.Errorf("fabrikam's user deleting contoso's file: %d", code)
			}
			if code, _ := f.post(t, fabrikamer, formAt("IR-01", fabrikam.ID, "/files/"+files[0].ID), nil); code != http.StatusNotFound {
				t.Errorf("contoso's file under fabrikam's evidence: %d", code)
			}
			if code, _ := f.post(t, contosoer, formAt("DP-01", contoso.ID, "/edit"), url.Values{"owner": {"x"}}); code != http.StatusNotFound {
				t.Errorf("editing evidence not started: %d", code)
			}
			if code, _ := f.post(t, contosoer, formAt("NOPE-9", contoso.ID, ""), blank); code != http.StatusNotFound {
				t.Errorf("a requirement not in the catalogue: %d", code)
			}
			if files, _ = f.evidence.Files(context.Background(), rec.ID); len(files) != 1 {
				t.Fatalf("contoso's files after fabrikam's posts: %+v", files)
			}

			html = f.ok(t, contosoer, formAt("IR-01", contoso.ID, "/files/"+files[0].ID), nil)
			contains(t, "the panel after a delete", html, "File deleted.", "No files yet.")
			f.upload(t, contosoer, formAt("IR-01", contoso.ID, "/files"), "plan.txt", content)

			html = f.ok(t, contosoer, formAt("IR-01", contoso.ID, "/status"), url.Values{"status": {evidence.StatusSubmitted}})
			contains(t, "the panel submitted", html, "Evidence is submitted.", "Withdraw from review")
			lacks(t, "the panel submitted to a user", html, "Record review", `name="decision"`, "Upload", "hx-delete")
			if code, _ := f.post(t, contosoer, formAt("IR-01", contoso.ID, "/review"), url.Values{"decision": {"accepted"}, "reason": {"fine"}}); code != http.StatusForbidden {
				t.Errorf("a user's review: %d", code)
			}
			if f.record(t, contoso.ID, "IR-01").Status != evidence.StatusSubmitted {
				t.Errorf("a user's review changed the evidence")
			}

			_, page = f.view(t, "/partner?tenant_id="+contoso.ID, admin)
			contains(t, "the admin's page", page, "Record review", `name="decision"`)
			html = f.ok(t, admin, formAt("IR-01", contoso.ID, "/review"), url.Values{"decision": {"accepted"}, "reason": {""}, "validity_days": {"9999"}})
			contains(t, "a refused review", html, `id="ev-t-contoso-IR-01-reason-error"`, `id="ev-t-contoso-IR-01-validity_days-error"`)
			html = f.ok(t, admin, formAt("IR-01", contoso.ID, "/review"), url.Values{"decision": {"accepted"}, "reason": {"Plan is current"}, "validity_days": {"365"}})
			contains(t, "the panel accepted", html, "Review recorded.", "accepted", "Plan is current", "Expires")
			if rec = f.record(t, contoso.ID, "IR-01"); rec.Status != evidence.StatusAccepted || rec.ReviewedBy == nil || *rec.ReviewedBy != admin.ID {
				t.Errorf("reviewed %+v", rec)
			}
		})
	}
}
