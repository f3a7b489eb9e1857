// Package browsertest drives a real headless Chromium for the web UI's
// tests: it opens pages of a running host, records what a person's browser
// would show as wrong (console errors, uncaught exceptions, failed
// requests, requests to any other origin), scans pages with axe-core for
// accessibility violations, and saves screenshots.
//
// Chromium is Debian's `chromium` package (or $STEWARD_TEST_CHROMIUM);
// axe-core is the npm package that make installs under tools/axe
// ($STEWARD_TEST_AXE names its axe.min.js). A test without them is skipped,
// unless STEWARD_TEST_REQUIRE_SERVICES is set, as in CI, where it fails.
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Browser is one headless Chromium process; each Tab is a fresh incognito
// context of it, with cookies of its own.
type Browser struct {
	t       testing.TB
	alloc   context.Context
	axe     string
	timeout time.Duration
}

// Start launches Chromium for the test and stops it when the test ends.
func Start(t testing.TB) *Browser {
	t.Helper()
	path := os.Getenv("STEWARD_TEST_CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	axePath := os.Getenv("STEWARD_TEST_AXE")
	if path == "" || axePath == "" {
		if os.Getenv("STEWARD_TEST_REQUIRE_SERVICES") != "" {
			t.Fatalf("browser tests need Chromium (found %q) and axe-core (STEWARD_TEST_AXE=%q): run them through make test", path, axePath)
		}
		t.Skip("no Chromium or axe-core: run through make test with Debian's chromium installed")
	}
	axe, err := os.ReadFile(axePath)
	if err != nil {
		t.Fatalf("axe-core: %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-dev-shm-usage", true),
		// The simulated identity provider serves HTTPS on loopback with a
		// certificate authority of its own, made anew at every start.
		chromedp.Flag("ignore-certificate-errors", true),
	)
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	return &Browser{t: t, alloc: alloc, axe: string(axe), timeout: 30 * time.Second}
}

// Tab is a browser tab with its own cookie jar, recording what went wrong
// on the pages it opened.
type Tab struct {
	t      testing.TB
	ctx    context.Context
	b      *Browser
	origin string

	// scheme is the colour scheme ColorScheme last emulated; "" is the
	// browser's own (light).
	scheme string

	mu       sync.Mutex
	problems []string
	allowed  []string
}

// Allow lets the tab's pages reach another origin, such as the identity
// provider a sign-in goes through.
func (tab *Tab) Allow(origin string) {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	tab.allowed = append(tab.allowed, strings.TrimSuffix(origin, "/"))
}

func (tab *Tab) allows(origin string) bool {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return origin == tab.origin || slices.Contains(tab.allowed, origin)
}

// NewTab opens a tab whose pages belong to origin (e.g.
// "http://127.0.0.1:8000"); a request to any other origin is a problem.
func (b *Browser) NewTab(origin string) *Tab {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.alloc)
	b.t.Cleanup(cancel)
	tab := &Tab{t: b.t, ctx: ctx, b: b, origin: strings.TrimSuffix(origin, "/")}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, strings.Trim(string(a.Value), `"`)+a.Description)
				}
				tab.problem("console error: " + strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			tab.problem("uncaught exception: " + e.ExceptionDetails.Error())
		case *network.EventRequestWillBeSent:
			if u, err := url.Parse(e.Request.URL); err == nil && (u.Scheme == "http" || u.Scheme == "https") &&
				!tab.allows(u.Scheme+"://"+u.Host) {
				tab.problem("request to another origin: " + e.Request.URL)
			}
		case *network.EventLoadingFailed:
			if !e.Canceled {
				tab.problem("request failed: " + e.ErrorText)
			}
		}
	})
	if err := chromedp.Run(ctx, network.Enable(), runtime.Enable()); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
	return tab
}

func (tab *Tab) problem(s string) {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	tab.problems = append(tab.problems, s)
}

// Problems returns what went wrong on the tab's pages so far and forgets
// it: console errors, exceptions, failed requests and other origins.
func (tab *Tab) Problems() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	p := tab.problems
	tab.problems = nil
	return p
}

// Run runs browser actions with the tab's timeout, failing the test on an
// error.
func (tab *Tab) Run(what string, actions ...chromedp.Action) {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.ctx, tab.b.timeout)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		tab.t.Fatalf("browser, %s: %v", what, err)
	}
}

// Open navigates to a path of the tab's origin and waits for the selector
// to be visible.
func (tab *Tab) Open(path, waitFor string) {
	tab.t.Helper()
	tab.Run("open "+path, chromedp.Navigate(tab.origin+path), chromedp.WaitVisible(waitFor, chromedp.ByQuery))
}

// Location is the address of the tab's page.
func (tab *Tab) Location() string {
	tab.t.Helper()
	var loc string
	tab.Run("location", chromedp.Location(&loc))
	return loc
}

// ColorScheme emulates the system's light or dark preference.
func (tab *Tab) ColorScheme(scheme string) {
	tab.t.Helper()
	tab.Run("colour scheme "+scheme, emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}))
	tab.scheme = scheme
}

// Violation is an axe-core rule a page breaks.
type Violation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any  `json:"target"`
		HTML   string `json:"html"`
	} `json:"nodes"`
}

func (v Violation) String() string {
	var where []string
	for i, n := range v.Nodes {
		if i == 3 {
			where = append(where, fmt.Sprintf("and %d more", len(v.Nodes)-3))
			break
		}
		where = append(where, n.HTML)
	}
	return fmt.Sprintf("%s (%s): %s — %s", v.ID, v.Impact, v.Help, strings.Join(where, "; "))
}

// axeRules are the rules Axe runs: WCAG 2.x A and AA in the light scheme;
// in the dark scheme only those whose outcome depends on colours, since a
// page is scanned in both and every other rule's outcome is the light
// scan's. Scans of big pages take seconds, and each test scans many.
var axeRules = map[string]string{
	"":      `{type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}`,
	"light": `{type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}`,
	"dark":  `{type: "rule", values: ["color-contrast", "link-in-text-block"]}`,
}

// Axe scans the page with axe-core and returns the violations of serious
// or critical impact: every WCAG 2.x A and AA rule in the light colour
// scheme, and in the dark one (ColorScheme) the rules on colours, so a
// test that scans a page in dark scans it in light too.
func (tab *Tab) Axe() []Violation {
	tab.t.Helper()
	rules, ok := axeRules[tab.scheme]
	if !ok {
		tab.t.Fatalf("browser: no axe-core rules for the colour scheme %q", tab.scheme)
	}
	// A page keeps axe-core from an earlier scan until it navigates.
	var loaded bool
	tab.Run("look for axe-core", chromedp.Evaluate(`typeof axe !== "undefined"`, &loaded))
	if !loaded {
		tab.Run("load axe-core", chromedp.Evaluate(tab.b.axe, nil))
	}
	var raw string
	tab.Run("axe-core",
		chromedp.Evaluate(`axe.run(document, {runOnly: `+rules+`, resultTypes: ["violations"]}).then(r => JSON.stringify(r.violations))`,
			&raw, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
	)
	var all []Violation
	if err := json.Unmarshal([]byte(raw), &all); err != nil {
		tab.t.Fatalf("axe-core result: %v", err)
	}
	var out []Violation
	for _, v := range all {
		if v.Impact == "serious" || v.Impact == "critical" {
			out = append(out, v)
		}
	}
	return out
}

// Screenshot saves a PNG of the whole page as dir/name.png.
func (tab *Tab) Screenshot(dir, name string) {
	tab.t.Helper()
	var png []byte
	tab.Run("screenshot "+name, chromedp.FullScreenshot(&png, 100))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tab.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		tab.t.Fatal(err)
	}
}

// Click clicks the first element the selector matches, once visible.
func (tab *Tab) Click(sel string) {
	tab.t.Helper()
	tab.Run("click "+sel, chromedp.WaitVisible(sel, chromedp.ByQuery), chromedp.Click(sel, chromedp.ByQuery))
}

// Text is the visible text of the first element the selector matches.
func (tab *Tab) Text(sel string) string {
	tab.t.Helper()
	var s string
	tab.Run("text of "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

// WaitText waits until the element's text satisfies ok, and returns it;
// the test fails with the last text after the tab's timeout. Each look
// finds the element and reads its text in one evaluation, so an element
// htmx swaps out between the two is simply looked for again.
func (tab *Tab) WaitText(sel string, ok func(string) bool) string {
	tab.t.Helper()
	quoted, err := json.Marshal(sel)
	if err != nil {
		tab.t.Fatal(err)
	}
	look := fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e ? e.innerText : "" })()`, quoted)
	deadline := time.Now().Add(tab.b.timeout)
	var s string
	for {
		tab.Run("text of "+sel, chromedp.Evaluate(look, &s))
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			tab.t.Fatalf("browser: text of %s never came: %.400s", sel, s)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// Eval evaluates a script in the page, awaiting a promise it returns, and
// stores the result in out.
func (tab *Tab) Eval(script string, out any) {
	tab.t.Helper()
	tab.Run("evaluate", chromedp.Evaluate(script, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
}

// WaitVisible waits until the selector matches a visible element.
func (tab *Tab) WaitVisible(sel string) {
	tab.t.Helper()
	tab.Run("wait for "+sel, chromedp.WaitVisible(sel, chromedp.ByQuery))
}

// Settle waits until no element of the page is busy (aria-busy="true"),
// as a page's slots are while their fragments load, and htmx has no
// request, swap or settle under way: content htmx has just swapped in
// answers its triggers only once it has settled, so a test acts on it
// after Settle.
func (tab *Tab) Settle() {
	tab.t.Helper()
	deadline := time.Now().Add(tab.b.timeout)
	for {
		var busy int
		tab.Run("count busy elements", chromedp.Evaluate(`document.querySelectorAll('[aria-busy="true"], .htmx-request, .htmx-swapping, .htmx-settling, .htmx-added').length`, &busy))
		if busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			tab.t.Fatalf("browser: %d elements still busy", busy)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
