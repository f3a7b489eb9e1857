package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stewardhq/steward/internal/browsertest"
)

// TestDocsInBrowser opens the API reference in a real browser: it renders
// the host's OpenAPI document with nothing from another origin and no
// error in the console.
func TestDocsInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	h := startHost(t, hostOpts{})
	tab := b.NewTab(h.url)
	tab.Open("/docs", "body")
	var text string
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(text, "Steward governance API") && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		tab.Run("read the page", chromedp.Text("body", &text, chromedp.ByQuery))
	}
	if !strings.Contains(text, "Steward governance API") || !strings.Contains(text, "ENDPOINTS") || !strings.Contains(text, "testplugin") {
		t.Errorf("the reference shows no API: %.500s", text)
	}
	if p := tab.Problems(); len(p) > 0 {
		t.Errorf("problems on /docs:\n%s", strings.Join(p, "\n"))
	}
}
