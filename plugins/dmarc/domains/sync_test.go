package domains_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/dmarc/domains"
	"github.com/stewardhq/steward/plugins/dmarc/posture"
)

func (f *fixture) points(t *testing.T, domainID string) []domains.Point {
	t.Helper()
	var out []domains.Point
	if err := f.store.DB.NewSelect().Model(&out).Where("domain_id = ?", domainID).Order("checked_at").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

func (f *fixture) events(t *testing.T) []domains.Event {
	t.Helper()
	var out []domains.Event
	if err := f.store.DB.NewSelect().Model(&out).Order("id").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func num(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// TestSyncChecksEveryDomain: one run lists each tenant's verified domains
// from Graph, checks each over DNS and stores its figures, findings and a
// history point; the domain whose DMARC lookup fails on DNS has that
// failure stored, not a domain without DMARC; both tenants are marked
// fresh and the progress counts the domains. A second run of an
// unchanged world adds history and raises nothing.
func TestSyncChecksEveryDomain(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, postureWorld())
		n, progress := f.mustRun(t)
		if n != 4 {
			t.Fatalf("run processed %d domains, want 4", n)
		}
		if last := progress[len(progress)-1]; last.Done != 4 || last.Total != 4 {
			t.Errorf("last progress %+v, want 4 of 4", last)
		}
		strong, weak, missing, broken := f.domain(t, "strong.example"), f.domain(t, "weak.example"), f.domain(t, "missing.example"), f.domain(t, "broken.example")
		for _, d := range []domains.Domain{strong, weak} {
			if d.TenantID != contoso.ID || d.Source != domains.SourceGraph {
				t.Errorf("%s stored as %s's %s domain", d.Domain, d.TenantID, d.Source)
			}
		}
		if !strong.IsDefault || weak.IsDefault {
			t.Errorf("default marks: strong %v, weak %v", strong.IsDefault, weak.IsDefault)
		}
		if str(strong.DMARCPolicy) != "reject" || num(strong.DKIMPresent) != 2 || num(strong.SPFLookups) != 1 || strong.DNSError != "" || !strong.CheckedAt.Equal(simNow) {
			t.Errorf("strong.example: policy %s, dkim %d, spf lookups %d, dns error %q, checked %v", str(strong.DMARCPolicy), num(strong.DKIMPresent),
				num(strong.SPFLookups), strong.DNSError, strong.CheckedAt)
		}
		if str(weak.DMARCPolicy) != "none" || num(weak.DKIMPresent) != 0 || num(weak.SPFLookups) != 0 {
			t.Errorf("weak.example: policy %s, dkim %d, spf lookups %d", str(weak.DMARCPolicy), num(weak.DKIMPresent), num(weak.SPFLookups))
		}
		if str(missing.DMARCPolicy) != "" || str(missing.Grade) != "F" || missing.DNSError != "" {
			t.Errorf("missing.example: policy %q, grade %s, dns error %q", str(missing.DMARCPolicy), str(missing.Grade), missing.DNSError)
		}
		if num(strong.Score) <= num(weak.Score) || num(weak.Score) <= num(missing.Score) {
			t.Errorf("scores strong %d, weak %d, missing %d: not strong > weak > missing", num(strong.Score), num(weak.Score), num(missing.Score))
		}
		// broken.example's DMARC lookup failed: the failure kept, and no
		// policy read from it, in the row and the history.
		if !strings.Contains(broken.DNSError, "DMARC") || broken.DMARCPolicy != nil || broken.Score == nil || !broken.CheckedAt.Equal(simNow) {
			t.Errorf("broken.example stored as %+v", broken)
		}
		if pts := f.points(t, broken.ID); len(pts) != 1 || pts[0].DNSError != broken.DNSError || pts[0].DMARCPolicy != nil {
			t.Errorf("broken.example's history %+v", pts)
		}
		var findings []domains.Finding
		if err := f.store.DB.NewSelect().Model(&findings).Where("domain_id = ?", missing.ID).Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(findings) == 0 {
			t.Error("missing.example has no findings")
		}
		var fresh []string
		for _, m := range f.harness.FreshMarks() {
			if m.Domain == "dmarc" {
				fresh = append(fresh, m.TenantID)
			}
		}
		slices.Sort(fresh)
		if !slices.Equal(fresh, []string{contoso.ID, fabrikam.ID}) {
			t.Errorf("fresh marks %v", fresh)
		}
		if tenant, ok, err := f.store.TenantOf(context.Background(), " Weak.Example. "); err != nil || !ok || tenant != contoso.ID {
			t.Errorf("TenantOf(weak.example) = %q, %v, %v", tenant, ok, err)
		}
		if _, ok, err := f.store.TenantOf(context.Background(), "nobody.example"); err != nil || ok {
			t.Errorf("TenantOf(nobody.example) = %v, %v", ok, err)
		}

		f.advance(t, 6*time.Hour)
		f.mustRun(t)
		if a := f.harness.Alerts(); len(a) != 0 {
			t.Errorf("an unchanged world raised %+v", a)
		}
		if e := f.events(t); len(e) != 0 {
			t.Errorf("an unchanged world left events %+v", e)
		}
		if pts := f.points(t, strong.ID); len(pts) != 2 || !pts[1].CheckedAt.Equal(simNow.Add(6*time.Hour)) {
			t.Errorf("strong.example's history %+v", pts)
		}
	})
}

// TestWeakeningRaisesAlerts: after strong.example's DMARC policy is
// relaxed, a DKIM key removed and SPF grown past ten lookups, the next
// run raises exactly those three alerts and keeps them as events; a
// later check whose DMARC lookup DNS fails raises none and keeps the
// policy as last known; when DNS answers again with the same records,
// nothing is raised either, and with the policy back at reject after the
// failure, nothing is raised for it: only a weakening is.
func TestWeakeningRaisesAlerts(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		w := postureWorld()
		f := start(t, dialect, w)
		f.mustRun(t)
		if a := f.harness.Alerts(); len(a) != 0 {
			t.Fatalf("the first run raised %+v", a)
		}
		before := f.domain(t, "strong.example")

		weak := weakened(w)
		f.serveDNS(t, weak)
		f.advance(t, 6*time.Hour)
		f.mustRun(t)
		alerts := f.harness.Alerts()
		events := f.events(t)
		if len(alerts) != 3 || len(events) != 3 {
			t.Fatalf("alerts %+v, events %+v; want three of each", alerts, events)
		}
		// The most severe first, each alert's severity the host's word for
		// the weakening's; each raised as a notification event with the
		// alert's severity, title and message.
		severities := map[string]string{"critical": "critical", "high": "error", "medium": "warning"}
		raised := f.harness.Events()
		if len(raised) != 3 {
			t.Fatalf("notification events %+v, want three", raised)
		}
		var codes []string
		for i, e := range events {
			codes = append(codes, e.Code)
			if e.Domain != "strong.example" || e.DomainID != before.ID || e.TenantID != contoso.ID || !e.OccurredAt.Equal(simNow.Add(6*time.Hour)) {
				t.Errorf("event %+v", e)
			}
			a := alerts[i]
			if a.Severity != severities[e.Severity] || a.Title != "Mail authentication weakened: strong.example" || a.Message != "strong.example (Contoso): "+e.Message {
				t.Errorf("alert %d %+v for event %+v", i, a, e)
			}
			n := raised[i]
			if n.Kind != domains.EventWeakening || n.Severity != a.Severity || n.Title != a.Title || n.Message != a.Message || n.TenantID != contoso.ID ||
				n.Link != "/dmarc?tenant_id="+contoso.ID || n.Details["code"] != e.Code || !n.OccurredAt.Equal(simNow.Add(6*time.Hour)) ||
				n.DedupeKey != contoso.ID+"/strong.example/"+e.Code+"/"+simNow.Add(6*time.Hour).Format(time.RFC3339Nano) {
				t.Errorf("notification event %d %+v for weakening %+v", i, n, e)
			}
		}
		if want := []string{"spf_over_limit", "dmarc_policy_relaxed", "dkim_key_removed"}; !slices.Equal(codes, want) {
			t.Errorf("weakenings %v, want %v", codes, want)
		}
		// The events on the API: newest first, filtered, of the caller's
		// tenants only.
		var list domains.EventList
		f.get(t, "/api/v1/dmarc/events?severity=critical", contosoer, &list)
		if list.Total != 1 || list.Items[0].Code != "spf_over_limit" || list.Items[0].DomainID != before.ID {
			t.Errorf("critical events %+v", list)
		}
		f.get(t, "/api/v1/dmarc/events?domain_id="+before.ID+"&limit=2&offset=1", admin, &list)
		if list.Total != 3 || len(list.Items) != 2 || list.Items[0].Code != "dmarc_policy_relaxed" {
			t.Errorf("strong.example's events, second page %+v", list)
		}
		f.get(t, "/api/v1/dmarc/events", fabrikamer, &list)
		if list.Total != 0 {
			t.Errorf("fabrikam's user sees contoso's events %+v", list)
		}
		var h domains.History
		f.get(t, "/api/v1/dmarc/domains/"+before.ID+"/history", contosoer, &h)
		if len(h.Points) != 2 || *h.Points[0].DMARCPolicy != "reject" || *h.Points[1].DMARCPolicy != "none" || *h.Points[1].Score >= *h.Points[0].Score {
			t.Errorf("strong.example's history %+v", h)
		}
		after := f.domain(t, "strong.example")
		if str(after.DMARCPolicy) != "none" || num(after.DKIMPresent) != 1 || num(after.SPFLookups) <= 10 || num(after.Score) >= num(before.Score) {
			t.Errorf("strong.example after: policy %s, dkim %d, spf lookups %d, score %d (was %d)", str(after.DMARCPolicy), num(after.DKIMPresent),
				num(after.SPFLookups), num(after.Score), num(before.Score))
		}

		// DNS fails for strong.example's DMARC: stored as such, the policy
		// as last known, nothing raised.
		failing := *weak
		failing.DNS = nil
		for _, r := range weak.DNS {
			if r.Name != "_dmarc.strong.example" {
				failing.DNS = append(failing.DNS, r)
			}
		}
		failing.DNS = append(failing.DNS, cname("_dmarc.strong.example", "loop.strong.example"), cname("loop.strong.example", "_dmarc.strong.example"))
		f.serveDNS(t, &failing)
		f.advance(t, 6*time.Hour)
		f.mustRun(t)
		if a := f.harness.Alerts(); len(a) != 0 {
			t.Errorf("a DNS failure raised %+v", a)
		}
		failed := f.domain(t, "strong.example")
		if !strings.Contains(failed.DNSError, "DMARC") || str(failed.DMARCPolicy) != "none" || num(failed.DKIMPresent) != 1 {
			t.Errorf("strong.example after a DNS failure: %+v", failed)
		}

		// DNS answers again with the weakened records: nothing new.
		f.serveDNS(t, weak)
		f.advance(t, 6*time.Hour)
		f.mustRun(t)
		if a := f.harness.Alerts(); len(a) != 0 {
			t.Errorf("DNS answering again raised %+v", a)
		}
		if e := f.events(t); len(e) != 3 {
			t.Errorf("%d events after DNS answered again, want 3", len(e))
		}
		if d := f.domain(t, "strong.example"); d.DNSError != "" || !d.CheckedAt.Equal(simNow.Add(18*time.Hour)) || str(d.DMARCPolicy) != "none" {
			t.Errorf("strong.example once DNS answers: %+v", d)
		}

		// DMARC fails again, and answers p=none meanwhile unchanged: the
		// comparison is with the last known policy, so a relaxing hidden
		// behind a failure is still found once DNS answers.
		f.serveDNS(t, &failing)
		f.advance(t, 6*time.Hour)
		f.mustRun(t)
		f.serveDNS(t, w)
		f.advance(t, 6*time.Hour)
		f.mustRun(t)
		if a := f.harness.Alerts(); len(a) != 0 {
			t.Errorf("strengthening raised %+v", a)
		}
		f.serveDNS(t, &failing)
		f.advance(t, 6*time.Hour)
		f.mustRun(t)
		f.serveDNS(t, weak)
		f.advance(t, 6*time.Hour)
		f.mustRun(t)
		if a := f.harness.Alerts(); len(a) != 3 {
			t.Errorf("weakening again behind a DNS failure raised %+v, want the three weakenings", a)
		}
		if n := f.harness.Events(); len(n) != 6 {
			t.Errorf("%d notification events after weakening again, want the first three and three new", len(n))
		}

		// The checks by day (UTC): Contoso's two domains at 12:00 and 18:00
		// on the first day, four runs on the second, two on the third.
		days, err := f.store.Trend(context.Background(), []string{contoso.ID}, simNow.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(days) != 3 || days[0].Day != "2026-12-15" || days[0].Checks != 4 || days[1].Day != "2026-12-16" || days[1].Checks != 8 ||
			days[2].Day != "2026-12-17" || days[2].Checks != 4 {
			t.Errorf("checks by day %+v", days)
		}
	})
}

// TestDirectoryDomains: the directory's domains follow Graph — a domain
// it stops listing goes with its history, one an admin added that it
// lists becomes the directory's — and a domain another tenant watches
// stays that tenant's.
func TestDirectoryDomains(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, postureWorld())
		f.mustRun(t)
		ctx := context.Background()
		added := &domains.Domain{TenantID: contoso.ID, Domain: "extra.example", CreatedAt: simNow}
		if err := f.store.Add(ctx, added); err != nil {
			t.Fatal(err)
		}
		if err := f.store.Add(ctx, &domains.Domain{TenantID: fabrikam.ID, Domain: "extra.example", CreatedAt: simNow}); err != domains.ErrDuplicate {
			t.Errorf("adding a watched domain for another tenant: %v", err)
		}
		weak := f.domain(t, "weak.example")
		elsewhere, err := f.store.SyncGraph(ctx, contoso.ID, []domains.GraphDomain{{Name: "strong.example", IsDefault: true},
			{Name: "extra.example"}, {Name: "missing.example"}}, simNow)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(elsewhere, []string{"missing.example"}) {
			t.Errorf("domains of another tenant: %v", elsewhere)
		}
		list, err := f.store.OfTenant(ctx, contoso.ID)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range list {
			names = append(names, d.Domain+":"+d.Source)
		}
		if !slices.Equal(names, []string{"extra.example:graph", "strong.example:graph"}) {
			t.Errorf("contoso's domains %v", names)
		}
		if pts := f.points(t, weak.ID); len(pts) != 0 {
			t.Errorf("weak.example's history outlived it: %+v", pts)
		}
		if d := f.domain(t, "missing.example"); d.TenantID != fabrikam.ID {
			t.Errorf("missing.example moved to %s", d.TenantID)
		}
		if _, err := f.store.Delete(ctx, &domains.Domain{ID: added.ID, Source: domains.SourceGraph}); err != domains.ErrFromGraph {
			t.Errorf("deleting a directory domain: %v", err)
		}
	})
}

// stopping is a resolver that stops the run at its first DMARC lookup.
type stopping struct {
	posture.Resolver
	stop func()
}

func (s stopping) DMARC(ctx context.Context, domain string) (string, error) {
	s.stop()
	return s.Resolver.DMARC(ctx, domain)
}

// TestStoppedRunStoresNoDNSFailures: a run stopped midway (the host
// shutting down) does not store its cut-short lookups as DNS failures: the
// stop ends the store's transactions too. Checks the plugin finished
// before the stop reached it (the cancellation crosses the process
// boundary a moment after the host's) may be stored, each whole.
func TestStoppedRunStoresNoDNSFailures(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, postureWorld())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f.syncer.Resolver = stopping{Resolver: f.syncer.Resolver, stop: cancel}
		if _, _, err := f.harness.RunJob(ctx, "dmarc"); err == nil {
			t.Error("a stopped run succeeded")
		}
		var n int
		err := f.store.DB.NewSelect().Model((*domains.Point)(nil)).ColumnExpr("COUNT(*)").
			Where("dns_error IS NOT NULL AND dns_error <> ''").Scan(context.Background(), &n)
		if err != nil || n != 0 {
			t.Errorf("a stopped run stored %d checks with DNS failures (%v)", n, err)
		}
	})
}
