package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/andybalholm/brotli"
)

func testAssets(t *testing.T, css string, withHTMX bool) *Assets {
	t.Helper()
	fsys := fstest.MapFS{
		"static/app.css":     {Data: []byte(css)},
		"static/app.js":      {Data: []byte("console.log(1)\n")},
		"static/favicon.svg": {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
	}
	if withHTMX {
		fsys["static/vendor/htmx.min.js"] = &fstest.MapFile{Data: []byte(strings.Repeat("var htmx = {};\n", 100))}
	}
	a, err := newAssets(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func get(h http.Handler, path string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestAssetNamesDeriveFromContent(t *testing.T) {
	css := "body { color: red }\n"
	sum := sha256.Sum256([]byte(css))
	want := "/static/app." + hex.EncodeToString(sum[:])[:8] + ".css"
	a, b := testAssets(t, css, false), testAssets(t, css, false)
	ua, _ := a.URL("app.css")
	ub, _ := b.URL("app.css")
	if ua != want || ub != want {
		t.Errorf("URL(app.css) = %q and %q, want %q both times", ua, ub, want)
	}
	c := testAssets(t, css+"a { color: blue }\n", false)
	if uc, _ := c.URL("app.css"); uc == want {
		t.Errorf("changed content kept the name %s", uc)
	}
	if _, ok := a.URL("nope.css"); ok {
		t.Error("an unknown asset has a URL")
	}
}

func TestFavicon(t *testing.T) {
	a := testAssets(t, "x", false)
	u, ok := a.URL("favicon.svg")
	if !ok {
		t.Fatal("the favicon has no URL")
	}
	for path, h := range map[string]http.Handler{u: a, FaviconPath: a.Favicon()} {
		w := get(h, path)
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(w.Body.String(), "<svg") {
			t.Errorf("%s: %d %s %q", path, w.Code, w.Header().Get("Content-Type"), w.Body.String())
		}
	}
	if cc := get(a.Favicon(), FaviconPath).Header().Get("Cache-Control"); strings.Contains(cc, "immutable") {
		t.Errorf("%s, whose name never changes, is %s", FaviconPath, cc)
	}
}

func TestHTMXIsOptional(t *testing.T) {
	if _, ok := testAssets(t, "x", false).URL("htmx.js"); ok {
		t.Error("htmx has a URL in a build without it")
	}
	u, ok := testAssets(t, "x", true).URL("htmx.js")
	if !ok || !strings.HasPrefix(u, "/static/htmx.") || !strings.HasSuffix(u, ".js") {
		t.Errorf("URL(htmx.js) = %q, %v", u, ok)
	}
	// make build copies htmx in before the tests it runs, which set
	// STEWARD_TEST_BIN; a plain go test may lack it.
	if os.Getenv("STEWARD_TEST_BIN") != "" {
		a, err := embeddedAssets()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := a.URL("htmx.js"); !ok {
			t.Error("make build did not copy htmx into ui/static/vendor")
		}
	}
}

func TestAssetIsServedImmutable(t *testing.T) {
	a := testAssets(t, "body { color: red }\n", true)
	for _, name := range []string{"app.css", "app.js", "htmx.js"} {
		u, _ := a.URL(name)
		w := get(a, u)
		h := w.Header()
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", u, w.Code)
		}
		wantType := "text/javascript; charset=utf-8"
		if name == "app.css" {
			wantType = "text/css; charset=utf-8"
		}
		for k, v := range map[string]string{
			"Cache-Control": "public, max-age=31536000, immutable", "Content-Type": wantType,
			"X-Content-Type-Options": "nosniff", "Vary": "Accept-Encoding", "Content-Encoding": "",
		} {
			if got := h.Get(k); got != v {
				t.Errorf("GET %s: %s = %q, want %q", u, k, got, v)
			}
		}
		if h.Get("ETag") == "" || h.Get("Content-Length") != strconv.Itoa(w.Body.Len()) {
			t.Errorf("GET %s: ETag %q, Content-Length %q for %d bytes", u, h.Get("ETag"), h.Get("Content-Length"), w.Body.Len())
		}
		if nm := get(a, u, "If-None-Match", h.Get("ETag")); nm.Code != http.StatusNotModified || nm.Body.Len() != 0 {
			t.Errorf("GET %s with its ETag: %d, %d bytes", u, nm.Code, nm.Body.Len())
		}
	}
}

func TestCompressionIsNegotiated(t *testing.T) {
	a := testAssets(t, strings.Repeat("body { color: red }\n", 50), false)
	u, _ := a.URL("app.css")
	plain := get(a, u).Body.Bytes()
	for _, c := range []struct{ accept, encoding string }{
		{"", ""},
		{"gzip", "gzip"},
		{"gzip, deflate, br", "br"},
		{"br;q=0, gzip;q=0.5", "gzip"},
		{"gzip;q=0, br;q=0", ""},
		{"*", "br"},
		{"identity", ""},
		{"GZIP", "gzip"},
	} {
		w := get(a, u, "Accept-Encoding", c.accept)
		if got := w.Header().Get("Content-Encoding"); got != c.encoding {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", c.accept, got, c.encoding)
			continue
		}
		var r io.Reader = w.Body
		switch c.encoding {
		case "gzip":
			zr, err := gzip.NewReader(w.Body)
			if err != nil {
				t.Fatal(err)
			}
			r = zr
		case "br":
			r = brotli.NewReader(w.Body)
		}
		body, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(body, plain) {
			t.Errorf("Accept-Encoding %q: body differs from the plain one (%v)", c.accept, err)
		}
		if c.encoding != "" && w.Body.Len() >= len(plain) {
			t.Errorf("Accept-Encoding %q: not smaller", c.accept)
		}
		if w.Header().Get("Vary") != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: Vary %q", c.accept, w.Header().Get("Vary"))
		}
	}
	gz := get(a, u, "Accept-Encoding", "gzip").Header().Get("ETag")
	br := get(a, u, "Accept-Encoding", "br").Header().Get("ETag")
	id := get(a, u).Header().Get("ETag")
	if gz == br || gz == id || br == id {
		t.Errorf("encodings share an ETag: %s %s %s", id, gz, br)
	}
}

func TestUnknownOrStaleAssetIs404(t *testing.T) {
	a := testAssets(t, "body { color: red }\n", false)
	current, _ := a.URL("app.css")
	for _, p := range []string{"/static/app.00000000.css", "/static/app.css", "/static/", "/static/nope.js", "/app.css", "/static/vendor/README.md", current + "/x"} {
		w := get(a, p)
		if w.Code != http.StatusNotFound || strings.Contains(w.Header().Get("Cache-Control"), "immutable") {
			t.Errorf("GET %s: %d, Cache-Control %q", p, w.Code, w.Header().Get("Cache-Control"))
		}
	}
	w := httptest.NewRecorder()
	a.ServeHTTP(w, httptest.NewRequest(http.MethodPost, current, nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %d", current, w.Code)
	}
	w = httptest.NewRecorder()
	a.ServeHTTP(w, httptest.NewRequest(http.MethodHead, current, nil))
	if w.Code != http.StatusOK || w.Body.Len() != 0 || w.Header().Get("Content-Length") == "" {
		t.Errorf("HEAD %s: %d, %d bytes, Content-Length %q", current, w.Code, w.Body.Len(), w.Header().Get("Content-Length"))
	}
}

func TestBrandStyleSheet(t *testing.T) {
	a := testAssets(t, "x", false)
	for _, c := range []struct{ colour, path, body string }{
		{"#0A66C2", "/static/brand.0a66c2.css", ":root{--brand:#0a66c2;--brand-fg:#fff}\n"},
		{"#ffd700", "/static/brand.ffd700.css", ":root{--brand:#ffd700;--brand-fg:#111}\n"},
	} {
		if got := brandURL(c.colour); got != c.path {
			t.Errorf("brandURL(%q) = %q, want %q", c.colour, got, c.path)
		}
		w := get(a, c.path)
		if w.Code != http.StatusOK || w.Body.String() != c.body || w.Header().Get("Cache-Control") != immutable || w.Header().Get("Content-Type") != "text/css; charset=utf-8" {
			t.Errorf("GET %s: %d %q %q", c.path, w.Code, w.Body, w.Header())
		}
	}
	for _, c := range []string{"", "red", "#fff", "#0a66c2;}", "0a66c2"} {
		if got := brandURL(c); got != "" {
			t.Errorf("brandURL(%q) = %q, want none", c, got)
		}
	}
	if w := get(a, "/static/brand.0A66C2.css"); w.Code != http.StatusNotFound {
		t.Errorf("an upper-case brand name: %d", w.Code)
	}
}

// TestPageWeight keeps the script and style a page loads, compressed,
// under 100 KB, and the style sheet lean.
func TestPageWeight(t *testing.T) {
	a, err := embeddedAssets()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, as := range a.byName {
		total += len(as.gzip)
	}
	if total > 100<<10 {
		t.Errorf("the assets weigh %d bytes gzipped, over 100 KB", total)
	}
	if css := a.byName["app.css"]; len(css.identity) > 20<<10 {
		t.Errorf("app.css is %d bytes, over 20 KB", len(css.identity))
	}
}
