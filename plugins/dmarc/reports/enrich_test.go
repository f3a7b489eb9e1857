package reports

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim/simdns"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// TestSendingOrg: known answers for well-known senders' reverse names,
// the registrable domain (by the public suffix list) of others.
func TestSendingOrg(t *testing.T) {
	for ptr, want := range map[string]string{
		"mail-sor-f41.google.com":                             "Google",
		"mail-yw1-f170.googlemail.com.":                       "Google",
		"mail-db8eur05on2091.outbound.protection.outlook.com": "Microsoft",
		"MAIL-AM6EUR05ON2041.OUTBOUND.PROTECTION.OUTLOOK.COM": "Microsoft",
		"a27-33.smtp-out.eu-west-1.amazonses.com":             "Amazon SES",
		"o1.ptr2638.mail.sendgrid.net":                        "SendGrid",
		"mail180-17.suw21.mcsv.net":                           "Mailchimp",
		"mail.contoso-retail.example":                         "contoso-retail.example",
		"smtp.mail.example.co.uk":                             "example.co.uk",
		"host.github.io":                                      "host.github.io",
		"":                                                    "",
		"co.uk":                                               "",
	} {
		if got := SendingOrg(ptr); got != want {
			t.Errorf("SendingOrg(%q) = %q, want %q", ptr, got, want)
		}
	}
}

// countingResolver counts the lookups that reach the DNS.
type countingResolver struct {
	r *cloud.Resolver
	n atomic.Int64
}

func (c *countingResolver) LookupPTR(ctx context.Context, ip string) ([]string, error) {
	c.n.Add(1)
	return c.r.LookupPTR(ctx, ip)
}

// ptrWorld answers the reverse names of the samples' Microsoft sources;
// 203.0.113.45 and the rest have none.
func ptrWorld() *world.World {
	return &world.World{Tenants: []world.Tenant{{Name: "Contoso", Domains: []string{"contoso-retail.example"}}}, DNS: []world.DNSRecord{
		{Name: "40.107.22.91", Type: "PTR", Value: "mail-db8eur05on2091.outbound.protection.outlook.com"},
		{Name: "2a01:111:f400:7e1b::50b", Type: "PTR", Value: "mail-am6eur05on2050b.outbound.protection.outlook.com"},
		{Name: "198.51.100.7", Type: "PTR", Value: "o1.ptr2638.mail.sendgrid.net"},
		{Name: "198.51.100.7", Type: "PTR", Value: "a.second.example"},
	}}
}

// TestEnrichBoundedAndCached looks up a tenant's sources through the
// simulated DNS: at most the cap a run, the rest on the next; each
// address once, its answer cached; an address without a reverse name is
// done too, and a failed lookup leaves its records for later. Another
// tenant's records are untouched.
func TestEnrichBoundedAndCached(t *testing.T) {
	each(t, func(t *testing.T, st *Store) {
		seed(t, st)
		ctx := context.Background()
		srv, err := simdns.Start(ptrWorld(), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		res := &countingResolver{r: cloud.NewResolver(srv.Addr())}
		at := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
		e := &Enricher{Resolver: res, MaxLookups: 2, Concurrency: 2, Now: func() time.Time { return at }}
		got, err := e.Enrich(ctx, st, tenantContoso)
		if err != nil || got.Addresses != 2 || got.Left != 3 || got.Failed != 0 {
			t.Fatalf("first run %+v %v, want 2 addresses and 3 left", got, err)
		}
		e.MaxLookups = 0
		if got, err = e.Enrich(ctx, st, tenantContoso); err != nil || got.Addresses != 3 || got.Left != 0 {
			t.Fatalf("second run %+v %v", got, err)
		}
		if got, err = e.Enrich(ctx, st, tenantContoso); err != nil || got.Addresses != 0 || got.Records != 0 {
			t.Fatalf("third run %+v %v, want nothing left", got, err)
		}
		if n := res.n.Load(); n != 5 {
			t.Errorf("%d lookups for 5 addresses", n)
		}
		var recs []StoredRecord
		if err := st.DB.NewSelect().Model(&recs).Where("tenant_id = ?", tenantContoso).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		want := map[string][2]string{
			"40.107.22.91":            {"mail-db8eur05on2091.outbound.protection.outlook.com", "Microsoft"},
			"2a01:111:f400:7e1b::50b": {"mail-am6eur05on2050b.outbound.protection.outlook.com", "Microsoft"},
			"198.51.100.7":            {"a.second.example", "second.example"},
			"203.0.113.45":            {"", ""},
		}
		for _, r := range recs {
			if r.EnrichedAt.IsZero() {
				t.Errorf("%s not looked up", r.SourceIP)
			}
			if w, ok := want[r.SourceIP]; ok && (r.SourcePTR != w[0] || r.SourceOrg != w[1]) {
				t.Errorf("%s: %q %q, want %q", r.SourceIP, r.SourcePTR, r.SourceOrg, w)
			}
		}
		var left int64
		if left, err = st.DB.NewSelect().Model((*StoredRecord)(nil)).Where("tenant_id = ? AND enriched_at IS NULL", tenantFabrikam).Count(ctx); err != nil || left != 3 {
			t.Errorf("Fabrikam's records looked up: %d left, %v", left, err)
		}

		// The cache answers an address again without the DNS.
		if src, ok := e.Lookup(ctx, "40.107.22.91"); !ok || src.Org != "Microsoft" || res.n.Load() != 5 {
			t.Errorf("cached lookup %+v %v after %d lookups", src, ok, res.n.Load())
		}
		// A resolver that does not answer: the lookups fail within their
		// timeout and the records wait.
		srv.Close()
		dead := &Enricher{Resolver: cloud.NewResolver(srv.Addr()), Timeout: 200 * time.Millisecond}
		start := time.Now()
		if got, err = dead.Enrich(ctx, st, tenantFabrikam); err != nil || got.Failed != 3 || got.Addresses != 0 {
			t.Fatalf("dead resolver %+v %v, want 3 failed", got, err)
		}
		if time.Since(start) > 3*time.Second {
			t.Errorf("failed lookups took %s", time.Since(start))
		}
		if left, _ = st.DB.NewSelect().Model((*StoredRecord)(nil)).Where("tenant_id = ? AND enriched_at IS NULL", tenantFabrikam).Count(ctx); left != 3 {
			t.Errorf("after failed lookups %d records wait, want 3", left)
		}
	})
}
