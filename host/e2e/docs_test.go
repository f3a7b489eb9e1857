package e2e

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestDocsNeedNoOtherOrigin: the API reference loads everything it needs
// from the host itself, so it works offline, and its content security
// policy allows no other origin.
func TestDocsNeedNoOtherOrigin(t *testing.T) {
	h := startHost(t, hostOpts{})
	page := h.get("/docs", "")
	if page.status != http.StatusOK || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(page.body), `apiDescriptionUrl="/openapi.json"`) {
		t.Fatalf("/docs: %d %s %s", page.status, page.header.Get("Content-Type"), page.body)
	}
	csp := page.header.Get("Content-Security-Policy")
	for _, directive := range strings.Split(csp, ";") {
		for _, source := range strings.Fields(directive)[1:] {
			if strings.Contains(source, ":") && source != "data:" || strings.Contains(source, ".") {
				t.Errorf("content security policy allows %s: %s", source, csp)
			}
		}
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(string(page.body), -1)
	want := map[string]string{"text/javascript": "", "text/css": ""}
	for _, m := range refs {
		ref := m[1]
		if !strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "//") {
			t.Errorf("/docs refers to another origin: %s", ref)
			continue
		}
		if ref == "/openapi.json" {
			continue
		}
		r := h.get(ref, "")
		ct, _, _ := strings.Cut(r.header.Get("Content-Type"), ";")
		if r.status != http.StatusOK || len(r.body) < 10000 {
			t.Errorf("%s: %d, %d bytes", ref, r.status, len(r.body))
		}
		want[ct] = ref
	}
	for ct, ref := range want {
		if ref == "" {
			t.Errorf("/docs loads no %s from the host: %s", ct, page.body)
		}
	}
	if r := h.get("/docs/elsewhere.js", ""); r.status != http.StatusNotFound {
		t.Errorf("an asset the host does not have: %d", r.status)
	}
}
