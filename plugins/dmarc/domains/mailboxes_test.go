package domains

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/dmarc/posture"
)

// TestMailtoAddress reads the address of a rua URI: mailto only, its
// size limit left out, lower case.
func TestMailtoAddress(t *testing.T) {
	for uri, want := range map[string]string{
		"mailto:DMARC@Contoso.example":        "dmarc@contoso.example",
		"MAILTO:dmarc@contoso.example!10m":    "dmarc@contoso.example",
		"mailto:reports@dmarc.service.test":   "reports@dmarc.service.test",
		"https://reports.contoso.example/rua": "",
		"mailto:":                             "",
		"mailto:not an address":               "",
	} {
		got, ok := mailtoAddress(uri)
		if got != want || ok != (want != "") {
			t.Errorf("mailtoAddress(%q) = %q, %v; want %q", uri, got, ok, want)
		}
	}
}

// TestReportMailboxes: a tenant's report mailboxes are its domains' rua
// addresses at its own domains, each once; a reporting service's
// address, another tenant's domain and an unchecked domain give none.
func TestReportMailboxes(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(ctx, db, Migrations(), "dmarc_migrations"); err != nil {
				t.Fatal(err)
			}
			s := &Store{DB: db}
			result := func(rua ...string) *string {
				b, err := json.Marshal(posture.Result{DMARC: posture.DMARCResult{Present: true, Record: &posture.DMARCRecord{Policy: "reject", RUA: rua}}})
				if err != nil {
					t.Fatal(err)
				}
				r := string(b)
				return &r
			}
			for _, d := range []Domain{
				{TenantID: "t1", Domain: "contoso.example", Result: result("mailto:dmarc@contoso.example", "mailto:rua@reports.service.test", "mailto:DMARC@contoso.example!10m")},
				{TenantID: "t1", Domain: "contoso-shop.example", Result: result("mailto:dmarc@contoso.example", "mailto:rua@fabrikam.example")},
				{TenantID: "t1", Domain: "contoso-new.example"},
				{TenantID: "t2", Domain: "fabrikam.example", Result: result("mailto:rua@fabrikam.example")},
			} {
				if err := s.Add(ctx, &d); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.ReportMailboxes(ctx, "t1")
			if err != nil || !slices.Equal(got, []string{"dmarc@contoso.example"}) {
				t.Errorf("t1's mailboxes %v %v", got, err)
			}
			if got, err := s.ReportMailboxes(ctx, "t3"); err != nil || len(got) != 0 {
				t.Errorf("a tenant without domains: %v %v", got, err)
			}
		})
	}
}
