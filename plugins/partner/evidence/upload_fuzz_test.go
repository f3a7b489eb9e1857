package evidence

import (
	"mime"
	"mime/multipart"
	"net/textproto"
	"path"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/gabriel-vasile/mimetype"
)

// FuzzUploadChecks gives an uploaded file part's checks a client's
// Content-Disposition and Content-Type and the file's first bytes. A name
// they keep must be a bare file name of an accepted extension (no folder,
// control or reserved character, leading dot, more than 200 characters);
// content they accept must be detected as a type of that extension, and
// the type it is served with must be that extension's, well-formed.
func FuzzUploadChecks(f *testing.F) {
	for _, seed := range []struct {
		disposition, declared string
		head                  []byte
	}{
		{`form-data; name="file"; filename="report.pdf"`, "application/pdf", []byte("%PDF-1.7\n1 0 obj << >> endobj\n%%EOF\n")},
		{`form-data; name="file"; filename="../../etc/passwd.txt"`, "", []byte("root:x:0:0\n")},
		{`form-data; name="file"; filename="..\\..\\x.csv"`, "application/vnd.ms-excel", []byte("user,mfa\nada,true\n")},
		{`form-data; name=file; filename*=UTF-8''caf%C3%A9%0A.json`, "text/json", []byte(`{"controls":[]}`)},
		{`form-data; name="file"; filename=" .notes.TXT"`, "text/plain; charset=latin1", []byte("caf\xe9\n")},
		{`form-data; name="file"; filename="page.txt"`, "text/html", []byte("<!DOCTYPE html><script>alert(1)</script>")},
		{`form-data; name="file"; filename="policy.docx"`, "application/octet-stream", []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00")},
		{`form-data; name="file"; filename="` + strings.Repeat("n", 300) + `.png"`, "image/png", []byte("\x89PNG\r\n\x1a\n")},
	} {
		f.Add(seed.disposition, seed.declared, seed.head)
	}
	f.Fuzz(func(t *testing.T, disposition, declared string, head []byte) {
		part := &multipart.Part{Header: textproto.MIMEHeader{"Content-Disposition": {disposition}, "Content-Type": {declared}}}
		name, kind, err := checkName(part)
		if err != nil {
			return
		}
		ext := strings.ToLower(path.Ext(name))
		if got, ok := fileTypes[ext]; !ok || got.served != kind.served {
			t.Fatalf("%q kept as %q, of type %q", disposition, name, kind.served)
		}
		if !utf8.ValidString(name) || utf8.RuneCountInString(name) > maxFileName || strings.HasPrefix(name, ".") || strings.HasPrefix(name, " ") ||
			strings.ContainsFunc(name, func(r rune) bool {
				return unicode.IsControl(r) || r >= 0x80 && r < 0xa0 || strings.ContainsRune(`/\"*:<>?|%;`, r)
			}) {
			t.Fatalf("%q kept as the file name %q", disposition, name)
		}
		served, refused := checkContent(head, kind, name)
		if refused != nil {
			return
		}
		base, params, err := mime.ParseMediaType(served)
		if err != nil || base != kind.served || len(params) > 1 || len(params) == 1 && params["charset"] == "" {
			t.Fatalf("%s served as %q (%v)", name, served, err)
		}
		detected, _, _ := mime.ParseMediaType(mimetype.Detect(head).String())
		if !slices.Contains(kind.detected, detected) {
			t.Fatalf("%s accepted with content of type %s", name, detected)
		}
	})
}
