package ui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	kit "github.com/stewardhq/steward/sdk/ui"
)

// files are the templates and static assets; static/vendor holds htmx
// once make has copied it in, and a README that keeps the folder in a
// clean clone.
//
//go:embed templates static
var files embed.FS

// ContentSecurityPolicy is the policy the pages are written for, which
// UI's methods set on each response: this origin only, no inline script
// or style, no framing.
const ContentSecurityPolicy = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// CSRFField is the form field that carries the CSRF token in the UI's
// forms (sign-in, sign-out); app.js sends the same token in the CSRFHeader
// of htmx's requests.
const (
	CSRFField  = "csrf_token"
	CSRFHeader = "X-CSRF-Token"
)

// Options configure the UI for the life of the process.
type Options struct {
	// ProductName is shown in the header and titles; "Steward" when empty.
	ProductName string
	// Version is shown in the footer.
	Version string
	// Environment is the deployment's ("development", "staging",
	// "production"). Any but production is shown as a badge in the
	// header, and only development shows the login page's
	// username/password form.
	Environment string
	// HomePath is the dashboard's path; "/" when empty.
	HomePath string
	// SignInPath receives the login page's "Sign in with your identity
	// provider" form (POST: next, csrf_token); "/auth/login" when empty.
	SignInPath string
	// DevSignInPath receives the development username/password form
	// (POST: username, password, next, csrf_token); "/auth/dev-login"
	// when empty.
	DevSignInPath string
	// SignOutPath receives the user menu's sign-out form (POST:
	// csrf_token); "/auth/logout" when empty.
	SignOutPath string
}

// User is the signed-in user as the header shows it.
type User struct {
	Name  string
	Email string
	Admin bool
}

// Tenant is one entry of the tenant picker.
type Tenant struct {
	ID   string
	Name string
}

// Brand is a group of tenants the user may pick as one.
type Brand struct {
	ID   string
	Name string
}

// NavEntry is a navigation link: the host's own and the plugins'
// (sdk.NavEntry). Entries are shown by ascending Order, ties in the order
// given.
type NavEntry struct {
	Label string
	Path  string
	Order int
}

// Slot is a place on a page that loads a fragment (sdk.Fragment) with
// htmx: Path is requested with the selected tenant as tenant_id when the
// page loads, and again every RefreshSeconds when that is positive. Path
// must be an absolute path on this origin.
type Slot struct {
	Title          string
	Path           string
	RefreshSeconds int
	// Main marks the slot that holds a whole page's content, such as a
	// plugin's page: the page's heading names it, so that the page has
	// one heading and not the same one twice; its Title still names it
	// while it loads or is unavailable.
	Main bool
	// Wide makes the slot span the whole row of the page's grid, for a
	// table of many columns that a half-width card would squeeze.
	Wide bool
}

// PageData is what a page of the signed-in UI shows.
type PageData struct {
	// Title is the page's heading and the document title's first part.
	Title string
	// Description is an optional line under the heading.
	Description string
	// Path is the request's path: it marks the active nav entry and is
	// where the tenant picker submits.
	Path string
	User User
	// Tenants are the tenants the user may pick; TenantID is the selected
	// one, which slots pass to their fragments as tenant_id.
	Tenants  []Tenant
	TenantID string
	// Brands are the brands the user may pick, offered above the tenants;
	// BrandID is the selected one (then TenantID is empty), which slots
	// pass to their fragments as brand_id.
	Brands  []Brand
	BrandID string
	Nav     []NavEntry
	// Content is HTML the host trusts, such as a plugin's page, shown
	// under the heading; Slots follow it in a grid.
	Content template.HTML
	Slots   []Slot
	// CSRFToken is the session's, for the sign-out form and htmx's
	// requests.
	CSRFToken string
	// BrandColor is the tenant's colour as "#rrggbb", used for the header
	// accent, the active nav entry and primary buttons; anything else
	// keeps the default.
	BrandColor string
}

// LoginData is what the login page shows.
type LoginData struct {
	// Next is the local path to return to after signing in; anything but
	// an absolute path on this origin becomes "/".
	Next string
	// Error is shown above the sign-in buttons when not empty.
	Error     string
	CSRFToken string
	// BrandColor is as in PageData.
	BrandColor string
}

// UI renders the pages. It is safe for concurrent use.
type UI struct {
	opts   Options
	assets *Assets
	pages  map[string]*template.Template
}

// embeddedAssets are the embedded assets, hashed and compressed once per
// process however many UIs it makes.
var embeddedAssets = sync.OnceValues(func() (*Assets, error) { return newAssets(files) })

// New parses the templates and prepares the assets.
func New(opts Options) (*UI, error) {
	assets, err := embeddedAssets()
	if err != nil {
		return nil, err
	}
	return newUI(opts, files, assets)
}

// newUI makes a UI of the templates in fsys and the assets.
func newUI(opts Options, fsys fs.FS, assets *Assets) (*UI, error) {
	if opts.ProductName == "" {
		opts.ProductName = "Steward"
	}
	for p, def := range map[*string]string{&opts.HomePath: "/", &opts.SignInPath: "/auth/login", &opts.DevSignInPath: "/auth/dev-login", &opts.SignOutPath: "/auth/logout"} {
		if *p == "" {
			*p = def
		}
	}
	u := &UI{opts: opts, assets: assets, pages: map[string]*template.Template{}}
	funcs := template.FuncMap{
		"asset":       u.assetURL,
		"unavailable": kit.Unavailable,
		"loading":     kit.Loading,
		"initial":     initial,
	}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(fsys, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	for _, page := range []string{"page", "login", "error", "design"} {
		t, err := base.Clone()
		if err == nil {
			t, err = t.ParseFS(fsys, "templates/"+page+".html")
		}
		if err != nil {
			return nil, err
		}
		u.pages[page] = t
	}
	return u, nil
}

// Assets is the handler of the static assets, to mount at StaticPrefix.
func (u *UI) Assets() *Assets { return u.assets }

// assetURL is the template func asset: the hashed URL of a required
// asset, an error for an unknown one, and empty for an optional asset
// this build lacks.
func (u *UI) assetURL(name string) (string, error) {
	if p, ok := u.assets.URL(name); ok {
		return p, nil
	}
	for _, f := range assetFiles {
		if f.name == name && f.optional {
			return "", nil
		}
	}
	return "", fmt.Errorf("no asset %q", name)
}

// layout is what the layout template renders around a page's main.
type layout struct {
	Opts      Options
	Title     string
	Bare      bool
	NotProd   bool
	BrandCSS  string
	CSRFToken string
	User      User
	Path      string
	Tenants   []Tenant
	TenantID  string
	Brands    []Brand
	BrandID   string
	// BrandValue prefixes a brand's id in the picker's options.
	BrandValue  string
	Nav         []navLink
	Description string
	Content     template.HTML
	Slots       []slotView
	Login       LoginData
	Status      int
	Message     string
	Design      designSystem
}

// navLink is a nav entry as the layout links it: Href carries the
// selected tenant, so the next page opens scoped as this one is.
type navLink struct {
	NavEntry
	Href   string
	Active bool
}

type slotView struct {
	Slot
	ID, URL, Trigger string
}

// Page writes a page of the signed-in UI with status 200.
func (u *UI) Page(w http.ResponseWriter, d PageData) error {
	v, err := u.pageView(d)
	if err != nil {
		return err
	}
	return u.write(w, http.StatusOK, "page", v)
}

// DesignSystem writes the design-system page: every component of sdk/ui
// in every state, from fixed sample data, inside the layout d describes
// (its Title, Content and Slots are replaced).
func (u *UI) DesignSystem(w http.ResponseWriter, d PageData) error {
	d.Title, d.Description, d.Content, d.Slots = "Design system", "Every component of the UI kit in every state, from sample data.", "", nil
	v, err := u.pageView(d)
	if err != nil {
		return err
	}
	v.Design = sampleDesign()
	return u.write(w, http.StatusOK, "design", v)
}

// Login writes the login page with status 200.
func (u *UI) Login(w http.ResponseWriter, d LoginData) error {
	if !localPath(d.Next) {
		d.Next = "/"
	}
	return u.write(w, http.StatusOK, "login", layout{Opts: u.opts, Title: "Sign in", Bare: true, NotProd: u.notProd(),
		BrandCSS: brandURL(d.BrandColor), CSRFToken: d.CSRFToken, Login: d})
}

// Error writes an error page with the status and a message for the user.
func (u *UI) Error(w http.ResponseWriter, status int, message string) error {
	return u.write(w, status, "error", layout{Opts: u.opts, Title: http.StatusText(status), Bare: true, NotProd: u.notProd(),
		Status: status, Message: message})
}

func (u *UI) notProd() bool {
	return u.opts.Environment != "" && u.opts.Environment != "production"
}

// pageView checks d and prepares it for the layout.
func (u *UI) pageView(d PageData) (layout, error) {
	v := layout{Opts: u.opts, Title: d.Title, NotProd: u.notProd(), BrandCSS: brandURL(d.BrandColor), CSRFToken: d.CSRFToken,
		User: d.User, Path: d.Path, Tenants: d.Tenants, TenantID: d.TenantID, Brands: d.Brands, BrandID: d.BrandID, BrandValue: BrandOption,
		Description: d.Description, Content: d.Content}
	nav := slices.Clone(d.Nav)
	slices.SortStableFunc(nav, func(a, b NavEntry) int { return a.Order - b.Order })
	active := -1
	for i, e := range nav {
		if matchesPath(d.Path, e.Path) && (active < 0 || len(e.Path) > len(nav[active].Path)) {
			active = i
		}
	}
	for i, e := range nav {
		v.Nav = append(v.Nav, navLink{NavEntry: e, Href: withScope(e.Path, d.TenantID, d.BrandID), Active: i == active})
	}
	for i, s := range d.Slots {
		if !localPath(s.Path) {
			return v, fmt.Errorf("slot %q: path %q is not an absolute path on this origin", s.Title, s.Path)
		}
		sv := slotView{Slot: s, ID: "slot-" + strconv.Itoa(i+1), URL: withScope(s.Path, d.TenantID, d.BrandID), Trigger: "load"}
		if s.RefreshSeconds > 0 {
			sv.Trigger += ", every " + strconv.Itoa(s.RefreshSeconds) + "s"
		}
		sv.Trigger += ", retry"
		v.Slots = append(v.Slots, sv)
	}
	return v, nil
}

// write renders a page into a buffer, so that a failing template leaves
// the response untouched, then writes it.
func (u *UI) write(w http.ResponseWriter, status int, page string, v layout) error {
	var b bytes.Buffer
	if err := u.pages[page].ExecuteTemplate(&b, "layout.html", v); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	_, err := w.Write(b.Bytes())
	return err
}

// matchesPath reports whether the request path p is at the nav entry's
// path or below it; "/" matches only itself.
func matchesPath(p, entry string) bool {
	if p == entry {
		return true
	}
	return entry != "/" && strings.HasPrefix(p, strings.TrimSuffix(entry, "/")+"/")
}

// localPath reports whether p is an absolute path on this origin, not a
// scheme-relative or backslash path a browser would take elsewhere.
func localPath(p string) bool {
	return strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "/\\") && !strings.ContainsAny(p, "\r\n\t")
}

// BrandOption prefixes a brand's id in the value of the picker's option,
// whose select is tenant_id: the host sends a page asked for with
// tenant_id=brand:<id> to brand_id=<id> (websession.BrandScope).
const BrandOption = "brand:"

// withScope adds the selected tenant_id, or brand_id, to a path.
func withScope(p, tenantID, brandID string) string {
	name, id := "tenant_id", tenantID
	if brandID != "" {
		name, id = "brand_id", brandID
	}
	if id == "" {
		return p
	}
	sep := "?"
	if strings.Contains(p, "?") {
		sep = "&"
	}
	return p + sep + name + "=" + url.QueryEscape(id)
}

// initial is the upper-case first letter of the user's name or e-mail
// address, for the avatar.
func initial(u User) string {
	for _, s := range []string{u.Name, u.Email} {
		if r, _ := utf8.DecodeRuneInString(strings.TrimSpace(s)); r != utf8.RuneError {
			return string(unicode.ToUpper(r))
		}
	}
	return "?"
}
