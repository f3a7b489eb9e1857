package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/andybalholm/brotli"
)

// StaticPrefix is the path under which Assets serves the static assets.
const StaticPrefix = "/static/"

// immutable is the Cache-Control of every asset: its name changes with
// its content, so a browser may keep it for a year without asking again.
const immutable = "public, max-age=31536000, immutable"

// assetFiles are the assets: the name templates ask for, the file in the
// embedded tree and its media type. htmx is copied in by make
// (web/fetch-npm-files.sh) and is optional, so that a plain go build or go
// test works from a clean clone; pages then render without it.
var assetFiles = []struct {
	name, file, mediaType string
	optional              bool
}{
	{"app.css", "static/app.css", "text/css; charset=utf-8", false},
	{"app.js", "static/app.js", "text/javascript; charset=utf-8", false},
	{"favicon.svg", "static/favicon.svg", "image/svg+xml", false},
	{"htmx.js", "static/vendor/htmx.min.js", "text/javascript; charset=utf-8", true},
}

// asset is one served file in each of its encodings.
type asset struct {
	hashed    string
	mediaType string
	etag      string
	identity  []byte
	gzip      []byte
	brotli    []byte
}

// Assets serves the UI's static assets at StaticPrefix + a content-hashed
// name ("app.3f2a9c1b.css"), immutable, precompressed with brotli and
// gzip, and the style sheets of tenants' brand colours. Any other name,
// including an asset's name with an older hash, is a 404. It is a plain
// http.Handler; mount it at StaticPrefix without stripping the prefix.
type Assets struct {
	byName   map[string]*asset
	byHashed map[string]*asset
}

// newAssets reads, hashes and compresses the assets in fsys, which holds
// the tree assetFiles name.
func newAssets(fsys fs.FS) (*Assets, error) {
	a := &Assets{byName: map[string]*asset{}, byHashed: map[string]*asset{}}
	for _, f := range assetFiles {
		b, err := fs.ReadFile(fsys, f.file)
		if errors.Is(err, fs.ErrNotExist) && f.optional {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("asset %s: %w", f.name, err)
		}
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])[:8]
		ext := path.Ext(f.name)
		as := &asset{hashed: strings.TrimSuffix(f.name, ext) + "." + h + ext, mediaType: f.mediaType, etag: `"` + h, identity: b}
		if as.gzip, err = gzipped(b); err != nil {
			return nil, fmt.Errorf("asset %s: %w", f.name, err)
		}
		if as.brotli, err = brotlied(b); err != nil {
			return nil, fmt.Errorf("asset %s: %w", f.name, err)
		}
		a.byName[f.name], a.byHashed[as.hashed] = as, as
	}
	return a, nil
}

func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // a valid level never errs
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	err := zw.Close()
	return buf.Bytes(), err
}

// brotliLevel is quality 5: the assets are compressed at start-up, where
// quality 11 took 280 ms and about 45 MiB of the host's start and 9 still
// 180 ms, while 5 takes a few milliseconds and still beats gzip -9 (htmx:
// 16.5 kB against 16.9 kB).
const brotliLevel = 5

func brotlied(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	bw := brotli.NewWriterLevel(&buf, brotliLevel)
	if _, err := bw.Write(b); err != nil {
		return nil, err
	}
	err := bw.Close()
	return buf.Bytes(), err
}

// URL is the path of the asset named name ("app.css") under its current
// hashed name, and false for an asset this build does not have.
func (a *Assets) URL(name string) (string, bool) {
	as, ok := a.byName[name]
	if !ok {
		return "", false
	}
	return StaticPrefix + as.hashed, true
}

// brandName matches the name of a brand colour's style sheet.
var brandName = regexp.MustCompile(`^brand\.([0-9a-f]{6})\.css$`)

// ServeHTTP serves GET and HEAD of StaticPrefix + a hashed name.
func (a *Assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, StaticPrefix)
	as := a.byHashed[name]
	if as == nil && ok {
		if m := brandName.FindStringSubmatch(name); m != nil {
			b := brandCSS(m[1])
			as = &asset{mediaType: "text/css; charset=utf-8", etag: `"brand-` + m[1], identity: b}
		}
	}
	if as == nil {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		http.Error(w, "no such asset", http.StatusNotFound)
		return
	}
	serve(w, r, as, immutable)
}

// FaviconPath is where browsers look for a site's icon without being told.
const FaviconPath = "/favicon.ico"

// faviconCache lets a browser keep the icon at FaviconPath for a day: its
// name does not change with its content, so it cannot be immutable.
const faviconCache = "public, max-age=86400"

// Favicon serves the icon at FaviconPath (the SVG the layout links to
// under its hashed name; browsers go by the media type, not the name).
func (a *Assets) Favicon() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, a.byName["favicon.svg"], faviconCache)
	})
}

// serve writes an asset in the best encoding the request accepts.
func serve(w http.ResponseWriter, r *http.Request, as *asset, cacheControl string) {
	body, encoding, tag := as.identity, "", as.etag+`"`
	switch {
	case as.brotli != nil && accepts(r, "br"):
		body, encoding, tag = as.brotli, "br", as.etag+`-br"`
	case as.gzip != nil && accepts(r, "gzip"):
		body, encoding, tag = as.gzip, "gzip", as.etag+`-gz"`
	}
	h := w.Header()
	h.Set("Cache-Control", cacheControl)
	h.Set("Content-Type", as.mediaType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Vary", "Accept-Encoding")
	h.Set("ETag", tag)
	if encoding != "" {
		h.Set("Content-Encoding", encoding)
	}
	if etagMatches(r.Header.Get("If-None-Match"), tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// accepts reports whether the request's Accept-Encoding accepts coding
// with a weight above zero, by name or by "*".
func accepts(r *http.Request, coding string) bool {
	star := false
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.ToLower(strings.TrimSpace(name))
		q := 1.0
		if k, v, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.TrimSpace(k) == "q" {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				q = f
			}
		}
		switch name {
		case coding:
			return q > 0
		case "*":
			star = q > 0
		}
	}
	return star
}

// etagMatches reports whether an If-None-Match header names tag, weakly
// compared, or is "*".
func etagMatches(header, tag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == tag {
			return true
		}
	}
	return false
}

// brandCSS is the style sheet that sets --brand to #hex and --brand-fg to
// white or near-black, whichever contrasts more with it.
func brandCSS(hex string) []byte {
	fg := "#fff"
	if l := luminance(hex); (l+0.05)/(0.0056+0.05) > 1.05/(l+0.05) {
		fg = "#111"
	}
	return []byte(":root{--brand:#" + hex + ";--brand-fg:" + fg + "}\n")
}

// luminance is the WCAG relative luminance of a colour #hex (rrggbb).
func luminance(hex string) float64 {
	var l float64
	for i, w := range []float64{0.2126, 0.7152, 0.0722} {
		v, _ := strconv.ParseUint(hex[2*i:2*i+2], 16, 8)
		c := float64(v) / 255
		if c <= 0.04045 {
			c /= 12.92
		} else {
			c = math.Pow((c+0.055)/1.055, 2.4)
		}
		l += w * c
	}
	return l
}

// hexColour matches a brand colour as pages take it.
var hexColour = regexp.MustCompile(`^#([0-9a-fA-F]{6})$`)

// brandURL is the path of the style sheet for the brand colour c
// ("#0a66c2"), or empty when c is empty or not such a colour.
func brandURL(c string) string {
	m := hexColour.FindStringSubmatch(c)
	if m == nil {
		return ""
	}
	return StaticPrefix + "brand." + strings.ToLower(m[1]) + ".css"
}
