package evidence_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/partner/evidence"
)

var (
	pdfContent  = []byte("%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
	htmlPayload = []byte("<!DOCTYPE html><html><body><script>fetch('/api/v1/auth/me')</script></body></html>")
)

func encoded(t *testing.T, enc func(*bytes.Buffer, image.Image) error) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	img.Set(1, 1, color.RGBA{R: 200, A: 255})
	var buf bytes.Buffer
	if err := enc(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// office is a ZIP archive with the parts of an Office document whose
// main part is under folder (word, xl or ppt), or of a plain archive.
func office(t *testing.T, folder string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := []string{"[Content_Types].xml", "_rels/.rels"}
	if folder != "" {
		names = append(names, folder+"/document.xml")
	} else {
		names = []string{"readme.md", "data/x.bin"}
	}
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "<xml>%s</xml>", n)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// blobs lists the files under the blob directory, by path below it.
func (f *fixture) blobs() []string {
	f.t.Helper()
	var out []string
	err := filepath.WalkDir(f.blobDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(f.blobDir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

var blobPathRE = regexp.MustCompile(`^[0-9a-f]{2}/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestUploadAndDownload: each accepted kind of file is stored with its
// SHA-256 under a generated id, listed, and served back whole as an
// attachment of the checked type with nosniff.
func TestUploadAndDownload(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, tenantA, "SEC-01", func(b map[string]any) { b["status"] = "in_progress" })
		pngBytes := encoded(t, func(b *bytes.Buffer, i image.Image) error { return png.Encode(b, i) })
		jpegBytes := encoded(t, func(b *bytes.Buffer, i image.Image) error { return jpeg.Encode(b, i, nil) })
		for _, c := range []struct {
			name, declared string
			content        []byte
			served         string
		}{
			{"report.pdf", "application/pdf", pdfContent, "application/pdf"},
			{"diagram.PNG", "image/png", pngBytes, "image/png"},
			{"photo.jpg", "", jpegBytes, "image/jpeg"},
			{"notes.txt", "text/plain", []byte("MFA is enforced for every admin.\n"), "text/plain; charset=utf-8"},
			{"users.csv", "application/vnd.ms-excel", []byte("user,mfa,admin\nada,true,true\nabe,false,false\n"), "text/csv"},
			{"export.json", "application/json", []byte(`{"controls":[{"id":"SEC-01","ok":true}]}`), "application/json"},
			{"policy.docx", "application/octet-stream", office(t, "word"), "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
			{"register.xlsx", "", office(t, "xl"), "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
		} {
			var fv evidence.FileView
			f.upload(userA, v.ID, part{field: "file", fileName: c.name, contentType: c.declared, content: c.content}).
				want(t, "upload "+c.name, http.StatusCreated).decode(t, &fv)
			if fv.SHA256 != sum(c.content) || fv.SizeBytes != int64(len(c.content)) || fv.ContentType != c.served ||
				fv.FileName != c.name || fv.EvidenceID != v.ID || fv.TenantID != tenantA || fv.UploadedBy != userA.ID {
				t.Errorf("%s stored as %+v", c.name, fv)
			}
			r := f.do(userA, http.MethodGet, evidenceAt+"/"+v.ID+"/files/"+fv.ID, nil).want(t, "download "+c.name, http.StatusOK)
			if !bytes.Equal(r.body, c.content) {
				t.Errorf("%s downloads as %d other bytes", c.name, len(r.body))
			}
			h := r.header
			if h.Get("Content-Type") != c.served || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("ETag") != `"`+fv.SHA256+`"` ||
				h.Get("Content-Disposition") != `attachment; filename="`+c.name+`"; filename*=UTF-8''`+c.name {
				t.Errorf("%s download headers: %v", c.name, h)
			}
		}
		var files []evidence.FileView
		f.do(userA, http.MethodGet, evidenceAt+"/"+v.ID+"/files", nil).want(t, "files", http.StatusOK).decode(t, &files)
		if len(files) != 8 || files[0].FileName != "report.pdf" || files[7].FileName != "register.xlsx" {
			t.Errorf("files: %+v", files)
		}
		var got evidence.Detail
		f.do(userA, http.MethodGet, evidenceAt+"/"+v.ID, nil).want(t, "get", http.StatusOK).decode(t, &got)
		if got.FileCount != 8 || len(got.Files) != 8 {
			t.Errorf("get: %d files, %d listed", got.FileCount, len(got.Files))
		}
		blobs := f.blobs()
		if len(blobs) != 8 {
			t.Errorf("blob directory holds %v", blobs)
		}
		for _, b := range blobs {
			if !blobPathRE.MatchString(filepath.ToSlash(b)) {
				t.Errorf("blob %s is not stored under a generated id", b)
			}
		}
		ups := f.audits("partner_evidence.file_upload.success")
		if len(ups) != 8 || ups[0].Details["sha256"] != sum(pdfContent) || ups[0].TenantID != tenantA || ups[0].Principal.ID != userA.ID {
			t.Errorf("upload audit: %+v", ups)
		}
	})
}

// TestMislabelledFiles: a file whose content is not what its name or
// declared type says is refused with a 422 naming body.file, and nothing
// is stored; a refused content (or an empty one) is audited as a failure.
func TestMislabelledFiles(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, tenantA, "SEC-01")
		pngBytes := encoded(t, func(b *bytes.Buffer, i image.Image) error { return png.Encode(b, i) })
		for _, c := range []struct {
			what string
			p    part
			msg  string
		}{
			{"HTML named report.pdf", part{field: "file", fileName: "report.pdf", contentType: "application/pdf", content: htmlPayload}, "text/html"},
			{"script named notes.txt", part{field: "file", fileName: "notes.txt", content: []byte("<script>alert(document.cookie)</script>")}, "text/html"},
			{"SVG named chart.png", part{field: "file", fileName: "chart.png", content: []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`)}, "not what the name"},
			{"PNG named report.pdf", part{field: "file", fileName: "report.pdf", content: pngBytes}, "image/png"},
			{"ZIP named policy.docx", part{field: "file", fileName: "policy.docx", content: office(t, "")}, "application/zip"},
			{"executable named data.csv", part{field: "file", fileName: "data.csv", content: append([]byte("MZ\x90\x00\x03\x00\x00\x00"), make([]byte, 64)...)}, "not what the name"},
			{"text named export.json", part{field: "file", fileName: "export.json", content: []byte("not json at all")}, "text/plain"},
			{"PDF declared as an image", part{field: "file", fileName: "report.pdf", contentType: "image/png", content: pdfContent}, "declared as image/png"},
			{"HTML declared for a text file", part{field: "file", fileName: "notes.txt", contentType: "text/html", content: []byte("hello")}, "declared as text/html"},
			{"an extension not accepted", part{field: "file", fileName: "page.html", content: htmlPayload}, "must end in one of"},
			{"no extension", part{field: "file", fileName: "README", content: []byte("hello")}, "must end in one of"},
			{"an empty file", part{field: "file", fileName: "empty.txt", content: nil}, "is empty"},
		} {
			f.upload(userA, v.ID, c.p).wantInvalid(t, c.what, "body.file", c.msg)
		}
		if b := f.blobs(); len(b) != 0 {
			t.Errorf("refused files left blobs: %v", b)
		}
		var files []evidence.FileView
		f.do(userA, http.MethodGet, evidenceAt+"/"+v.ID+"/files", nil).want(t, "files", http.StatusOK).decode(t, &files)
		if len(files) != 0 {
			t.Errorf("refused files recorded: %+v", files)
		}
		if fails := f.audits("partner_evidence.file_upload.failure"); len(fails) != 8 || fails[0].Status != "failure" || fails[0].Details["file_name"] != "report.pdf" ||
			fails[0].Details["reason"] != "the content is text/html, not what the name report.pdf says" {
			t.Errorf("content refusals audited: %+v", fails)
		}
	})
}

// TestUploadSizeLimit: a file over the configured limit is refused with
// 413 naming body.file and leaves nothing behind; one of exactly the
// limit is stored. The default limit is 5 MiB.
func TestUploadSizeLimit(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect, 4096)
			v := f.create(userA, tenantA, "SEC-01")
			text := bytes.Repeat([]byte("evidence "), 1000)
			f.upload(userA, v.ID, part{field: "file", fileName: "big.txt", content: text[:4097]}).
				wantProblem(t, "4097 bytes", http.StatusRequestEntityTooLarge, "body.file", "at most 4096 bytes")
			if b := f.blobs(); len(b) != 0 {
				t.Errorf("an oversized file left %v", b)
			}
			var fv evidence.FileView
			f.upload(userA, v.ID, part{field: "file", fileName: "exact.txt", content: text[:4096]}).want(t, "4096 bytes", http.StatusCreated).decode(t, &fv)
			if fv.SizeBytes != 4096 {
				t.Errorf("stored %d bytes", fv.SizeBytes)
			}
		})
	}
	t.Run("default", func(t *testing.T) {
		f := newFixture(t, storetest.Dialects()[0], 0)
		v := f.create(userA, tenantA, "SEC-01")
		big := bytes.Repeat([]byte("0123456789abcdef"), evidence.DefaultMaxFileBytes/16+1)
		f.upload(userA, v.ID, part{field: "file", fileName: "big.txt", content: big}).
			wantProblem(t, "over 5 MiB", http.StatusRequestEntityTooLarge, "body.file", "at most 5242880 bytes")
		f.upload(userA, v.ID, part{field: "file", fileName: "big.txt", content: big[:evidence.DefaultMaxFileBytes]}).want(t, "5 MiB", http.StatusCreated)
	})
}

// TestPathTraversalNames: a file name with folders of either kind of path
// keeps only its last element; the content is stored under a generated
// id in the blob directory and nothing is written outside it.
func TestPathTraversalNames(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, tenantA, "SEC-01")
		outside := filepath.Dir(f.blobDir)
		for _, c := range []struct{ sent, kept string }{
			{"../../etc/passwd.txt", "passwd.txt"},
			{`..\..\windows\system32\evil.pdf`, "evil.pdf"},
			{"/abs/path/../..//report.pdf", "report.pdf"},
			{"...hidden.txt", "hidden.txt"},
			{"rep\"ort;name*.pdf", "rep_ort_name_.pdf"},
			{"Prüfbericht 2026.pdf", "Prüfbericht 2026.pdf"},
		} {
			content := pdfContent
			if strings.HasSuffix(c.kept, ".txt") {
				content = []byte("root:x:0:0")
			}
			var fv evidence.FileView
			f.upload(userA, v.ID, part{field: "file", fileName: c.sent, content: content}).want(t, "upload "+c.sent, http.StatusCreated).decode(t, &fv)
			if fv.FileName != c.kept {
				t.Errorf("%q kept as %q, want %q", c.sent, fv.FileName, c.kept)
			}
			r := f.do(userA, http.MethodGet, evidenceAt+"/"+v.ID+"/files/"+fv.ID, nil).want(t, "download", http.StatusOK)
			cd := r.header.Get("Content-Disposition")
			if strings.Contains(cd, "..") || strings.Contains(cd, "/") || strings.Contains(cd, `\`) || strings.Count(cd, `"`) != 2 {
				t.Errorf("%q downloads with Content-Disposition %s", c.sent, cd)
			}
		}
		f.upload(userA, v.ID, part{field: "file", fileName: "../../etc/passwd", content: []byte("root")}).
			wantInvalid(t, "a name without an extension", "body.file", "must end in one of")
		r := f.do(userA, http.MethodGet, evidenceAt+"/"+v.ID+"/files", nil)
		var files []evidence.FileView
		r.decode(t, &files)
		last := files[len(files)-1]
		r = f.do(userA, http.MethodGet, evidenceAt+"/"+v.ID+"/files/"+last.ID, nil)
		if cd := r.header.Get("Content-Disposition"); cd != `attachment; filename="Pr_fbericht 2026.pdf"; filename*=UTF-8''Pr%C3%BCfbericht%202026.pdf` {
			t.Errorf("a UTF-8 name downloads with Content-Disposition %s", cd)
		}
		for _, b := range f.blobs() {
			if !blobPathRE.MatchString(filepath.ToSlash(b)) {
				t.Errorf("blob %s is not stored under a generated id", b)
			}
		}
		entries, err := os.ReadDir(outside)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != filepath.Base(f.blobDir) && e.Name() != "steward.db" && !strings.HasPrefix(e.Name(), "steward.db-") {
				t.Errorf("a file was written beside the blob directory: %s", e.Name())
			}
		}
	})
}

// TestUploadBody: a body that is not multipart is a 415; a multipart body
// without the file part, with another part, or with a file part without a
// name is a 422 naming it, and leaves nothing stored.
func TestUploadBody(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, tenantA, "SEC-01")
		at := evidenceAt + "/" + v.ID + "/files"
		f.do(userA, http.MethodPost, at, map[string]any{"file": "x"}).want(t, "a JSON body", http.StatusUnsupportedMediaType)
		f.upload(userA, v.ID).wantInvalid(t, "no part", "body.file", "required")
		f.upload(userA, v.ID, part{field: "comment", content: []byte("hi")}, part{field: "file", fileName: "a.txt", content: []byte("a")}).
			wantInvalid(t, "a part before the file", "body.comment", "not a field")
		f.upload(userA, v.ID, part{field: "file", fileName: "a.txt", content: []byte("a")}, part{field: "file", fileName: "b.txt", content: []byte("b")}).
			wantInvalid(t, "two files", "body.file", "not a field")
		f.upload(userA, v.ID, part{field: "file", content: []byte("a")}).wantInvalid(t, "no file name", "body.file", "file name")
		req := httptest.NewRequest(http.MethodPost, at, strings.NewReader("--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nhello"))
		req.Header.Set("Content-Type", "multipart/form-data; boundary=xyz")
		f.send(userA, req).wantInvalid(t, "a body cut short", "body", "well-formed")
		if b := f.blobs(); len(b) != 0 {
			t.Errorf("refused uploads left %v", b)
		}
		var got evidence.Detail
		f.do(userA, http.MethodGet, evidenceAt+"/"+v.ID, nil).want(t, "get", http.StatusOK).decode(t, &got)
		if got.FileCount != 0 {
			t.Errorf("%d files recorded", got.FileCount)
		}
	})
}

// TestFileIsolation: a user of another tenant gets 404 for the files of
// tenant A's evidence — list, download, delete — and the file stays.
func TestFileIsolation(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, tenantA, "SEC-01")
		var fv evidence.FileView
		f.upload(userA, v.ID, part{field: "file", fileName: "secret.txt", content: []byte("tenant A's secret")}).want(t, "upload", http.StatusCreated).decode(t, &fv)
		at := evidenceAt + "/" + v.ID + "/files/" + fv.ID
		for _, m := range []string{http.MethodGet, http.MethodDelete} {
			r := f.do(userB, m, at, nil)
			r.want(t, "user B "+m, http.StatusNotFound)
			if strings.Contains(string(r.body), "secret") {
				t.Errorf("user B %s: %s", m, r.body)
			}
		}
		// The file of another evidence record is not reachable through one's own.
		w := f.create(userB, tenantB, "SEC-01")
		f.do(userB, http.MethodGet, evidenceAt+"/"+w.ID+"/files/"+fv.ID, nil).want(t, "A's file under B's evidence", http.StatusNotFound)
		f.do(userB, http.MethodDelete, evidenceAt+"/"+w.ID+"/files/"+fv.ID, nil).want(t, "delete A's file under B's evidence", http.StatusNotFound)
		r := f.do(userA, http.MethodGet, at, nil).want(t, "user A downloads", http.StatusOK)
		if string(r.body) != "tenant A's secret" || len(f.blobs()) != 1 {
			t.Errorf("after user B's attempts: %q, blobs %v", r.body, f.blobs())
		}
	})
}

// TestDeleteFile: a delete removes the record and the blob, is audited,
// and is a 404 the second time.
func TestDeleteFile(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, tenantA, "SEC-01")
		var keep, drop evidence.FileView
		f.upload(userA, v.ID, part{field: "file", fileName: "keep.pdf", content: pdfContent}).want(t, "upload", http.StatusCreated).decode(t, &keep)
		f.upload(userA, v.ID, part{field: "file", fileName: "drop.txt", content: []byte("old")}).want(t, "upload", http.StatusCreated).decode(t, &drop)
		at := evidenceAt + "/" + v.ID + "/files/" + drop.ID
		f.do(userA, http.MethodDelete, at, nil).want(t, "delete", http.StatusNoContent)
		f.do(userA, http.MethodDelete, at, nil).want(t, "delete again", http.StatusNotFound)
		f.do(userA, http.MethodGet, at, nil).want(t, "download deleted", http.StatusNotFound)
		if b := f.blobs(); len(b) != 1 || !strings.HasSuffix(b[0], keep.ID) {
			t.Errorf("blobs after the delete: %v", b)
		}
		dels := f.audits("partner_evidence.file_delete")
		if len(dels) != 1 || dels[0].ResourceID != drop.ID || dels[0].Details["file_name"] != "drop.txt" || dels[0].Principal.ID != userA.ID {
			t.Errorf("delete audit: %+v", dels)
		}
	})
}

// TestFilesFrozenUnderReview: submitted or accepted evidence keeps its
// files — no upload, no delete — until it is moved back to in_progress.
func TestFilesFrozenUnderReview(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		v := f.create(userA, tenantA, "SEC-01", func(b map[string]any) { b["status"] = "in_progress" })
		var fv evidence.FileView
		f.upload(userA, v.ID, part{field: "file", fileName: "a.pdf", content: pdfContent}).want(t, "upload", http.StatusCreated).decode(t, &fv)
		f.patch(userA, v.ID, map[string]any{"status": "submitted"})
		f.upload(userA, v.ID, part{field: "file", fileName: "b.pdf", content: pdfContent}).want(t, "upload to submitted", http.StatusConflict)
		f.do(userA, http.MethodDelete, evidenceAt+"/"+v.ID+"/files/"+fv.ID, nil).want(t, "delete from submitted", http.StatusConflict)
		f.do(admin, http.MethodPost, evidenceAt+"/"+v.ID+"/review", map[string]any{"decision": "accepted", "reason": "ok"}).want(t, "accept", http.StatusOK)
		f.upload(userA, v.ID, part{field: "file", fileName: "b.pdf", content: pdfContent}).want(t, "upload to accepted", http.StatusConflict)
		f.do(admin, http.MethodDelete, evidenceAt+"/"+v.ID+"/files/"+fv.ID, nil).want(t, "admin deletes from accepted", http.StatusConflict)
		if b := f.blobs(); len(b) != 1 {
			t.Errorf("blobs: %v", b)
		}
	})
}

// TestMaxFiles: evidence keeps at most MaxFiles files; one more is a 422
// naming body.file and leaves no blob.
func TestMaxFiles(t *testing.T) {
	f := newFixture(t, storetest.Dialects()[0], 0)
	v := f.create(userA, tenantA, "SEC-01")
	for i := range evidence.MaxFiles {
		f.upload(userA, v.ID, part{field: "file", fileName: fmt.Sprintf("n%d.txt", i), content: []byte("x")}).want(t, "upload", http.StatusCreated)
	}
	f.upload(userA, v.ID, part{field: "file", fileName: "one-more.txt", content: []byte("x")}).
		wantInvalid(t, "one file too many", "body.file", fmt.Sprintf("has %d files already", evidence.MaxFiles))
	if b := f.blobs(); len(b) != evidence.MaxFiles {
		t.Errorf("%d blobs", len(b))
	}
}

// TestSanitizeFileName: what is kept of a client's name.
func TestSanitizeFileName(t *testing.T) {
	for in, want := range map[string]string{
		"report.pdf":                      "report.pdf",
		"../../etc/passwd":                "passwd",
		`..\..\x.pdf`:                     "x.pdf",
		"..":                              "",
		"dir/":                            "",
		" .env":                           "env",
		"a\x00b\nc.txt":                   "abc.txt",
		"a\u0085b.txt":                    "ab.txt",
		"bad\xffutf8.txt":                 "badutf8.txt",
		strings.Repeat("n", 300) + ".pdf": strings.Repeat("n", 196) + ".pdf",
		strings.Repeat("é", 250):          strings.Repeat("é", 200),
	} {
		if got := evidence.SanitizeFileName(in); got != want {
			t.Errorf("SanitizeFileName(%q) = %q, want %q", in, got, want)
		}
	}
}
