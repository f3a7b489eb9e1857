package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

func dmarcPlugins(config string) string {
	return fmt.Sprintf("plugin \"dmarc\" {\n  binary = %q\n  cloud_credential = true\n  config {\n%s\n  }\n}\n", filepath.Join(binDir, "plugins", "dmarc"), config)
}

// dmarcKey is a DKIM key record of a real 2048-bit RSA key.
func dmarcKey(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der)
}

// dmarcWorld: Brand A's brand-a.example is strong (DMARC p=reject, SPF
// -all, a DKIM key at selector1) and its mail-a.example weak (p=none, SPF
// ~all, no DKIM); Brand B's brand-b.example publishes nothing. With
// relaxed, brand-a.example's policy is relaxed to none (its subdomains'
// kept at reject) and its DKIM key removed.
func dmarcWorld(t *testing.T, key string, relaxed bool) string {
	policy := "v=DMARC1; p=reject; rua=mailto:dmarc@brand-a.example"
	dns := []world.DNSRecord{
		{Name: "brand-a.example", Type: "TXT", Value: "v=spf1 include:spf.protection.outlook.com -all"},
		{Name: "mail-a.example", Type: "TXT", Value: "v=spf1 ip4:192.0.2.10 ~all"},
		{Name: "_dmarc.mail-a.example", Type: "TXT", Value: "v=DMARC1; p=none"},
	}
	if relaxed {
		policy = "v=DMARC1; p=none; sp=reject; rua=mailto:dmarc@brand-a.example"
	} else {
		dns = append(dns, world.DNSRecord{Name: "selector1._domainkey.brand-a.example", Type: "TXT", Value: key})
	}
	dns = append(dns, world.DNSRecord{Name: "_dmarc.brand-a.example", Type: "TXT", Value: policy})
	return writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Brand B", DirectoryTenantID: identityDirB, Subscriptions: []world.Subscription{{ID: "bbbbbbbb-0000-0000-0000-000000000001", Name: "B prod"}},
				AccessGroups: []string{"grp-b"}, Domains: []string{"brand-b.example"}},
			{Name: "Brand A", DirectoryTenantID: identityDirA, Subscriptions: []world.Subscription{{ID: "aaaaaaaa-0000-0000-0000-000000000001", Name: "A prod"}},
				AccessGroups: []string{"grp-a"}, Delegated: true, Domains: []string{"brand-a.example", "mail-a.example"}},
		},
		DNS: dns,
	})
}

type dmarcDomain struct {
	ID          string  `json:"id"`
	TenantID    string  `json:"tenant_id"`
	TenantName  string  `json:"tenant_name"`
	Domain      string  `json:"domain"`
	Source      string  `json:"source"`
	Score       *int    `json:"score"`
	Grade       *string `json:"grade"`
	DMARCPolicy *string `json:"dmarc_policy"`
	DKIMPresent *int    `json:"dkim_present"`
	DNSError    string  `json:"dns_error"`
}

type dmarcDomains struct {
	Items []dmarcDomain `json:"items"`
	Total int           `json:"total"`
}

func (l dmarcDomains) byName() map[string]dmarcDomain {
	out := map[string]dmarcDomain{}
	for _, d := range l.Items {
		out[d.Domain] = d
	}
	return out
}

// TestDMARCThroughTheHost: the world's tenant domains reach the dmarc
// routes through Graph, the simulated DNS, the plugin's sync job and its
// tables, on both databases; a standard user of Brand A sees Brand A's
// domains only, on the API and in the DMARC page's fragments, and another
// tenant's domain is 404 to it; an admin adds a domain; after the world's
// DNS weakens and the host restarts, a sync raises the weakenings as sync
// alerts and events.
func TestDMARCThroughTheHost(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testDMARCThroughTheHost(t, dialect) })
	}
}

func testDMARCThroughTheHost(t *testing.T, dialect string) {
	key := dmarcKey(t)
	o := hostOpts{dataDir: t.TempDir(), pluginsHCL: dmarcPlugins(""), env: map[string]string{"STEWARD_SIM_WORLD": dmarcWorld(t, key, false), "STEWARD_SIM_BOOTSTRAP": "true"}}
	if dialect == store.DialectPostgres {
		o.databaseURL = storetest.PostgresURL(t)
	}
	h := startHost(t, o)
	admin := h.login()
	waitStartupSync(t, h, admin, "dmarc")
	f := &fixture{h: h, admin: admin}
	if r := f.waitRun(t, f.trigger(t, "dmarc")); r.Status != "completed" || r.RecordsProcessed != 3 {
		t.Fatalf("dmarc sync %+v, want 3 domains", r)
	}
	if n, err := h.pluginDB("dmarc").NewSelect().Table("dmarc_domains").Count(context.Background()); err != nil || n != 3 {
		t.Fatalf("the plugin's domains table on %s holds %d rows (%v), want 3", dialect, n, err)
	}

	var l dmarcDomains
	h.get("/api/v1/dmarc/domains", admin).json(t, &l)
	byName := l.byName()
	strong, weak, missing := byName["brand-a.example"], byName["mail-a.example"], byName["brand-b.example"]
	if l.Total != 3 || strong.TenantName != "Brand A" || missing.TenantName != "Brand B" || strong.Source != "graph" ||
		strong.Score == nil || weak.Score == nil || missing.Score == nil {
		t.Fatalf("domains %s", h.get("/api/v1/dmarc/domains", admin).body)
	}
	if *strong.DMARCPolicy != "reject" || *strong.DKIMPresent != 1 || *weak.DMARCPolicy != "none" || *missing.DMARCPolicy != "" || *missing.Grade != "F" ||
		!(*strong.Score > *weak.Score && *weak.Score > *missing.Score) {
		t.Errorf("posture: strong %+v, weak %+v, missing %+v", strong, weak, missing)
	}
	var sum struct {
		Domains int64   `json:"domains"`
		Checked int64   `json:"checked"`
		Reject  int64   `json:"p_reject"`
		DKIM    float64 `json:"dkim_coverage_percentage"`
		Tenants []struct {
			TenantName string `json:"tenant_name"`
		} `json:"tenants"`
	}
	h.get("/api/v1/dmarc/summary", admin).json(t, &sum)
	if sum.Domains != 3 || sum.Checked != 3 || sum.Reject != 1 || sum.DKIM != 33.33 || len(sum.Tenants) != 2 {
		t.Errorf("summary %+v", sum)
	}
	expectInvalid(t, h.get("/api/v1/dmarc/domains?limit=501", admin), "query.limit")
	expectInvalid(t, h.get("/api/v1/dmarc/domains?min_score=90&max_score=10", admin), "query.max_score")
	expectInvalid(t, h.get("/api/v1/dmarc/events?days=0", admin), "query.days")

	// A standard user of Brand A sees Brand A only.
	u := tenancy.User{DirectoryTenantID: "brand-a-directory", Subject: "oid-dmarc-a", Email: "dmarc-a@brand-a.example", Name: "A user", Groups: []string{"grp-a"}}
	if err := tenancy.New(h.db()).UpsertUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	tokA := h.tokenFor(u)
	h.get("/api/v1/dmarc/domains", tokA).json(t, &l)
	var mine []string
	for _, d := range l.Items {
		mine = append(mine, d.Domain)
	}
	if slices.Sort(mine); !slices.Equal(mine, []string{"brand-a.example", "mail-a.example"}) {
		t.Errorf("brand A's user sees %v", mine)
	}
	for _, path := range []string{"/api/v1/dmarc/domains/" + missing.ID, "/api/v1/dmarc/domains/" + missing.ID + "/history"} {
		if r := h.get(path, tokA); r.status != http.StatusNotFound || strings.Contains(string(r.body), "brand-b.example") {
			t.Errorf("%s (brand B's domain) for brand A's user: %d %s", path, r.status, r.body)
		}
	}
	if r := h.get("/api/v1/dmarc/domains/"+strong.ID, tokA); r.status != http.StatusOK || !strings.Contains(string(r.body), `"posture"`) {
		t.Errorf("brand A's domain for its user: %d %s", r.status, r.body)
	}
	if r := h.get("/api/v1/dmarc/domains?tenant_ids="+missing.TenantID, tokA); r.status != http.StatusForbidden {
		t.Errorf("brand B's domains for brand A's user: %d %s", r.status, r.body)
	}
	// The DMARC page places the plugin's fragments; they show Brand A's
	// domains only, and the dashboard has the plugin's card.
	if r := h.do(http.MethodGet, "/dmarc", tokA, nil, "Accept", "text/html"); r.status != http.StatusOK ||
		!strings.Contains(string(r.body), `hx-get="/partials/dmarc-domains`) || !strings.Contains(string(r.body), `hx-get="/partials/dmarc-posture`) {
		t.Errorf("the DMARC page for brand A's user: %d %s", r.status, r.body)
	}
	htmx := []string{"HX-Request", "true"}
	if r := h.do(http.MethodGet, "/partials/dmarc-domains", tokA, nil, htmx...); r.status != http.StatusOK || !strings.Contains(string(r.body), "brand-a.example") ||
		strings.Contains(string(r.body), "brand-b.example") || strings.Contains(string(r.body), "Brand B") {
		t.Errorf("the domains fragment for brand A's user: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodGet, "/partials/dmarc-domains?tenant_id="+missing.TenantID, tokA, nil, htmx...); r.status != http.StatusForbidden ||
		strings.Contains(string(r.body), "brand-b.example") {
		t.Errorf("brand B's domains fragment for brand A's user: %d %s", r.status, r.body)
	}
	if r := h.get("/partials/dmarc-stats", tokA); r.status != http.StatusOK || !strings.Contains(string(r.body), "DMARC p=reject") {
		t.Errorf("the dashboard card for brand A's user: %d %s", r.status, r.body)
	}

	// An admin adds a domain; a standard user may not.
	add := `{"tenant_id": "` + strong.TenantID + `", "domain": "Extra-A.example", "dkim_selectors": ["s1"]}`
	if r := h.do(http.MethodPost, "/api/v1/dmarc/domains", tokA, strings.NewReader(add), "Content-Type", "application/json"); r.status != http.StatusForbidden {
		t.Errorf("a standard user's add: %d %s", r.status, r.body)
	}
	r := h.do(http.MethodPost, "/api/v1/dmarc/domains", admin, strings.NewReader(add), "Content-Type", "application/json")
	if r.status != http.StatusCreated || !strings.Contains(string(r.body), `"domain":"extra-a.example"`) {
		t.Fatalf("add: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodPost, "/api/v1/dmarc/domains", admin, strings.NewReader(add), "Content-Type", "application/json"); r.status != http.StatusConflict {
		t.Errorf("adding it again: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodDelete, "/api/v1/dmarc/domains/"+strong.ID, admin, nil); r.status != http.StatusConflict {
		t.Errorf("deleting a directory domain: %d %s", r.status, r.body)
	}

	// The world's DNS weakens; on the restarted host the next sync raises
	// the weakenings.
	h.stop(syscall.SIGTERM)
	o.env = map[string]string{"STEWARD_SIM_WORLD": dmarcWorld(t, key, true), "STEWARD_SIM_BOOTSTRAP": "false"}
	h = startHost(t, o)
	admin = h.login()
	f = &fixture{h: h, admin: admin}
	if r := f.waitRun(t, f.trigger(t, "dmarc")); r.Status != "completed" || r.RecordsProcessed != 4 {
		t.Fatalf("dmarc sync after the change %+v, want 4 domains", r)
	}
	var alerts struct {
		Alerts []struct {
			JobType  string `json:"job_type"`
			Severity string `json:"severity"`
			Title    string `json:"title"`
			Message  string `json:"message"`
		} `json:"alerts"`
	}
	h.get("/api/v1/sync/alerts", admin).json(t, &alerts)
	var raised []string
	for _, a := range alerts.Alerts {
		if a.JobType == "dmarc" {
			raised = append(raised, a.Severity+": "+a.Message)
			if a.Title != "Mail authentication weakened: brand-a.example" {
				t.Errorf("alert title %q", a.Title)
			}
		}
	}
	slices.Sort(raised)
	want := []string{"error: brand-a.example (Brand A): The DKIM key of selector selector1 was removed.",
		"error: brand-a.example (Brand A): The DMARC policy was relaxed from reject to none."}
	if !slices.Equal(raised, want) {
		t.Errorf("dmarc alerts %q, want %q", raised, want)
	}
	var events struct {
		Items []struct {
			Code   string `json:"code"`
			Domain string `json:"domain"`
		} `json:"items"`
		Total int `json:"total"`
	}
	h.get("/api/v1/dmarc/events", tokA).json(t, &events)
	if events.Total != 2 || events.Items[0].Domain != "brand-a.example" {
		t.Errorf("brand A's events %+v", events)
	}
	h.get("/api/v1/dmarc/events?tenant_ids="+strong.TenantID, admin).json(t, &events)
	if events.Total != 2 {
		t.Errorf("brand A's events for the admin %+v", events)
	}
}
