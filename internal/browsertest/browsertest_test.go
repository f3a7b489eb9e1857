package browsertest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// axePage breaks one rule that does not depend on colours (an image
// without a text alternative) and, in the dark scheme only, one that does
// (grey text on a grey background).
const axePage = `<!doctype html><html lang="en"><head><title>Axe</title><style>
body { background: #fff; color: #111 }
@media (prefers-color-scheme: dark) { body { background: #777; color: #888 } }
</style></head><body><main><p>Some text to read.</p>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="20" height="20"></main></body></html>`

// TestAxeBySchemes: in the light scheme every rule runs and the missing
// alternative is found, with the page's colours fine; in the dark scheme
// only the colour rules run, and the poor contrast is found, on a page
// loaded anew or scanned again.
func TestAxeBySchemes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(axePage))
	}))
	t.Cleanup(srv.Close)
	tab := Start(t).NewTab(srv.URL)
	ids := func() []string {
		var out []string
		for _, v := range tab.Axe() {
			out = append(out, v.ID)
		}
		return out
	}
	for _, c := range []struct {
		scheme    string
		want, not string
	}{
		{"light", "image-alt", "color-contrast"},
		{"dark", "color-contrast", "image-alt"},
		{"light", "image-alt", "color-contrast"},
	} {
		tab.ColorScheme(c.scheme)
		tab.Open("/", "main")
		got := ids()
		if !slices.Contains(got, c.want) || slices.Contains(got, c.not) {
			t.Errorf("%s: violations %v; want %s and not %s", c.scheme, got, c.want, c.not)
		}
	}
	// A second scan of the same page uses the axe-core it loaded.
	tab.ColorScheme("dark")
	if got := ids(); !slices.Equal(got, []string{"color-contrast"}) {
		t.Errorf("dark, scanned again without a reload: violations %v; want color-contrast", got)
	}
}
