package domains

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// TestAlertTitle: a title names the domain whole while it fits the
// host's bound, and shortened to the bound past it, which the host would
// refuse otherwise.
func TestAlertTitle(t *testing.T) {
	if got := alertTitle("brand-a.example"); got != "Mail authentication weakened: brand-a.example" {
		t.Errorf("title %q", got)
	}
	long := strings.Repeat("abcdefghi.", 25) + "example"
	got := alertTitle(long)
	if n := utf8.RuneCountInString(got); n > protocol.MaxAlertTitle || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "Mail authentication weakened: abcdefghi.") {
		t.Errorf("title of a %d-character domain: %q (%d characters)", len(long), got, n)
	}
	if err := protocol.CheckAlert(sdk.AlertError, got, "m"); err != nil {
		t.Errorf("the host refuses the title: %v", err)
	}
	for severity, want := range map[string]string{"critical": sdk.AlertCritical, "high": sdk.AlertError, "medium": sdk.AlertWarning, "low": sdk.AlertInfo, "info": sdk.AlertInfo} {
		if got := alertSeverity(severity); got != want {
			t.Errorf("alert severity of %s: %s, want %s", severity, got, want)
		}
	}
}
