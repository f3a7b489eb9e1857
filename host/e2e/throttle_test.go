package e2e

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
)

// throttleDomains are the sync routes and data domains a throttled cloud
// stops: every domain Steward reads from Resource Manager or Graph.
var throttleDomains = []string{"costs", "compliance", "resources", "identity"}

// throttleStaleAfter is every job's stale_after in the throttling test: long
// enough for the first syncs and the reads that follow them, short enough
// to see the data grow stale while the cloud throttles.
const throttleStaleAfter = 20 * time.Second

// throttleWorld has two tenants with a little of everything the four
// domains read: costs, policy states, resources, quotas and users.
func throttleWorld(t *testing.T) string {
	subA, subB := "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000001"
	on := true
	today := time.Now().UTC()
	w := world.World{
		Tenants: []world.Tenant{
			{Name: "Brand B", DirectoryTenantID: identityDirB, Subscriptions: []world.Subscription{{ID: subB, Name: "B prod"}}, AccessGroups: []string{"grp-b"}},
			{Name: "Brand A", DirectoryTenantID: identityDirA, Subscriptions: []world.Subscription{{ID: subA, Name: "A prod"}}, AccessGroups: []string{"grp-a"}, Delegated: true},
		},
		PolicyStates: []world.PolicyState{
			policyState(subA, "private-link", "Storage accounts should use private link", "Storage", "High", "Microsoft.Storage/storageAccounts/sa", "NonCompliant"),
			policyState(subB, "private-link", "Storage accounts should use private link", "Storage", "High", "Microsoft.Storage/storageAccounts/sb", "Compliant"),
		},
		Quotas: []world.Quota{
			{SubscriptionID: subA, Location: "eastus", Provider: "compute", Name: "cores", CurrentValue: 80, Limit: 100},
			{SubscriptionID: subB, Location: "eastus", Provider: "compute", Name: "cores", CurrentValue: 10, Limit: 100},
		},
		Users: []world.User{
			{Email: "ada@brand-a.example", Name: "Ada A", DirectoryTenantID: identityDirA, UserType: "Member", AccountEnabled: &on,
				MFARegistered: true, MFAMethods: []string{"microsoftAuthenticator"}, LastSignIn: today.Format(time.DateOnly)},
			{Email: "bob@brand-b.example", Name: "Bob B", DirectoryTenantID: identityDirB, UserType: "Member", AccountEnabled: &on,
				IsPrivileged: true, LastSignIn: today.Format(time.DateOnly)},
		},
	}
	for _, sub := range []string{subA, subB} {
		w.Resources = append(w.Resources, world.Resource{SubscriptionID: sub, ID: "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm",
			Name: "vm", Type: "Microsoft.Compute/virtualMachines", Location: "eastus", Tags: map[string]string{"env": "prod"}})
		for d := -6; d <= 0; d++ {
			w.Costs = append(w.Costs, world.Cost{SubscriptionID: sub, Date: today.AddDate(0, 0, d).Format(time.DateOnly), Service: "Virtual Machines",
				ResourceGroup: "rg", Cost: float64(10 - d), Currency: "USD"})
		}
	}
	return writeWorld(t, w)
}

// throttlePlugins declares the four plugins, each job stale after
// throttleStaleAfter.
func throttlePlugins() string {
	var b strings.Builder
	for _, p := range []struct{ name, config, jobs string }{
		{"cost", "backfill_days = 7", `"costs"`},
		{"compliance", "", `"compliance"`},
		{"resources", `locations = ["eastus"]`, `"quotas", "inventory"`},
		{"identity", "", `"identity"`},
	} {
		fmt.Fprintf(&b, "plugin %q {\n  binary = %q\n  cloud_credential = true\n  config {\n    %s\n  }\n", p.name, filepath.Join(binDir, "plugins", p.name), p.config)
		for _, job := range strings.Split(p.jobs, ", ") {
			fmt.Fprintf(&b, "  job %s {\n    stale_after = %q\n  }\n", job, throttleStaleAfter)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// throttleReads are read routes of the four domains, whose answers must not
// change while the cloud throttles.
var throttleReads = []string{
	"/api/v1/costs/summary",
	"/api/v1/compliance/summary",
	"/api/v1/compliance/scores",
	"/api/v1/resources/quotas",
	"/api/v1/resources/inventory?sort_by=name",
	"/api/v1/identity/summary",
	"/api/v1/identity/users/without-mfa",
}

// tenantFreshness is one tenant's entry of /api/v1/health/data as an admin
// reads it.
type tenantFreshness struct {
	synced   map[string]string
	stale    bool
	problems map[string]string
}

func readFreshness(t *testing.T, h *host, admin string) map[string]tenantFreshness {
	t.Helper()
	var raw map[string]map[string]any
	h.get("/api/v1/health/data", admin).json(t, &raw)
	out := map[string]tenantFreshness{}
	for tenant, members := range raw {
		tf := tenantFreshness{synced: map[string]string{}, problems: map[string]string{}}
		for _, d := range throttleDomains {
			if at, ok := members[d].(string); ok {
				tf.synced[d] = at
			}
		}
		tf.stale, _ = members["stale"].(bool)
		if problems, ok := members["problems"].(map[string]any); ok {
			for d, p := range problems {
				tf.problems[d], _ = p.(string)
			}
		}
		out[tenant] = tf
	}
	return out
}

// TestCloudThrottlesEverySync: after a first sync of every domain, Resource
// Manager and Graph answer 429 with a Retry-After to every request. Each
// domain's sync then fails, after the clients' retries, with an error
// naming the throttling and an alert; the data synced before stays
// readable and unchanged, its sync times stay, an admin is told of each
// failure, and the tenants turn stale once the data outlives its
// threshold. When the throttling lifts, a sync succeeds and the problems
// clear.
func TestCloudThrottlesEverySync(t *testing.T) {
	// Most of its time is spent waiting for a threshold to pass.
	t.Parallel()
	h := startHost(t, hostOpts{pluginsHCL: throttlePlugins(), env: map[string]string{
		"STEWARD_SIM_WORLD": throttleWorld(t), "STEWARD_SIM_BOOTSTRAP": "true", "STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}})
	admin := h.login()
	f := &fixture{h: h, admin: admin}
	for _, d := range throttleDomains {
		waitStartupSync(t, h, admin, d)
	}
	// The resources sync's second job may still run: wait for every run.
	for _, r := range h.runsSince(t, admin, nil) {
		if r.Status != "completed" {
			t.Fatalf("start-up %s sync: %+v", r.JobType, r)
		}
	}
	var before map[string]tenantFreshness
	h.waitFor("every domain of both tenants synced", time.Minute, func() bool {
		before = readFreshness(t, h, admin)
		for _, tf := range before {
			if len(tf.synced) != len(throttleDomains) {
				return false
			}
		}
		return len(before) == 2
	})
	for tenant, tf := range before {
		if tf.stale || len(tf.problems) > 0 {
			t.Fatalf("%s after the first syncs: stale %t, problems %v", tenant, tf.stale, tf.problems)
		}
	}
	reads := map[string][]byte{}
	for _, path := range throttleReads {
		r := h.get(path, admin)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		reads[path] = r.body
	}

	// The whole cloud throttles.
	sim := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the simulator's own CA, on loopback
	for _, svc := range []string{"resource_manager", "graph"} {
		base := regexp.MustCompile(svc + `=(https://\S+)`).FindStringSubmatch(h.logs.String())
		if base == nil {
			t.Fatalf("the host did not log the simulated %s's address", svc)
		}
		fault := fmt.Sprintf(`{"prefix": "/", "status": 429, "retry_after": %d}`, time.Second)
		resp, err := sim.Post(base[1]+"/_sim/faults", "application/json", strings.NewReader(fault))
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("throttling %s: %v %v", svc, resp, err)
		}
		resp.Body.Close()
	}
	seen := h.runIDs(t, admin)
	start := time.Now()
	for _, d := range throttleDomains {
		f.trigger(t, d)
	}
	failed := h.runsSince(t, admin, seen)
	// The resources sync is two jobs, quotas and inventory.
	if len(failed) != len(throttleDomains)+1 {
		t.Fatalf("%d runs for the %d throttled syncs: %+v", len(failed), len(throttleDomains), failed)
	}
	for _, r := range failed {
		if r.Status != "failed" || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "429 Too Many Requests") {
			t.Fatalf("throttled %s sync: %+v, want failed naming the 429", r.JobType, r)
		}
		// The clients retried each request three times, waiting the
		// second Retry-After asks each time, before giving up.
		if took := r.CompletedAt.Sub(*r.StartedAt); took < 3*time.Second {
			t.Errorf("the throttled %s run failed after %s, before three retries a second apart", r.JobType, took)
		}
	}
	t.Logf("the throttled syncs all failed within %s", time.Since(start).Round(time.Millisecond))

	var alerts struct {
		Alerts []struct {
			JobID   string `json:"job_id"`
			Message string `json:"message"`
		} `json:"alerts"`
	}
	h.get("/api/v1/sync/alerts", admin).json(t, &alerts)
	for _, r := range failed {
		raised := false
		for _, a := range alerts.Alerts {
			raised = raised || (a.JobID == r.JobID && strings.Contains(a.Message, "429"))
		}
		if !raised {
			t.Errorf("no alert names the throttling for the failed %s run %s: %+v", r.JobType, r.JobID, alerts.Alerts)
		}
	}
	for _, path := range throttleReads {
		if r := h.get(path, admin); r.status != http.StatusOK || !bytes.Equal(r.body, reads[path]) {
			t.Errorf("GET %s while throttled: %d\n%s\nwant the answer of before:\n%s", path, r.status, r.body, reads[path])
		}
	}
	during := readFreshness(t, h, admin)
	for tenant, tf := range during {
		for _, d := range throttleDomains {
			if tf.synced[d] != before[tenant].synced[d] {
				t.Errorf("%s %s synced_at moved from %s to %s on a failed sync", tenant, d, before[tenant].synced[d], tf.synced[d])
			}
			if !strings.Contains(tf.problems[d], "the last sync failed") || !strings.Contains(tf.problems[d], "429") {
				t.Errorf("%s %s problem %q, want the failed sync and its 429", tenant, d, tf.problems[d])
			}
		}
	}

	// Once the oldest data outlives its threshold, both tenants are stale,
	// and each domain's problem says so beside the failure.
	newest := time.Time{}
	for _, tf := range before {
		for _, at := range tf.synced {
			if ts := syncedAt(t, at); ts.After(newest) {
				newest = ts
			}
		}
	}
	time.Sleep(time.Until(newest.Add(throttleStaleAfter + time.Second)))
	for tenant, tf := range readFreshness(t, h, admin) {
		if !tf.stale {
			t.Errorf("%s past the threshold is not stale: %v", tenant, tf.problems)
		}
		for _, d := range throttleDomains {
			if !strings.Contains(tf.problems[d], "longer ago than "+throttleStaleAfter.String()) || !strings.Contains(tf.problems[d], "429") {
				t.Errorf("%s %s past the threshold: problem %q, want too old and the failed sync", tenant, d, tf.problems[d])
			}
		}
	}
	var counts struct {
		Fresh int `json:"fresh"`
		Stale int `json:"stale"`
	}
	h.get("/api/v1/health/data", "").json(t, &counts)
	if counts.Stale != 2 || counts.Fresh != 0 {
		t.Errorf("anonymous counts %+v, want both tenants stale", counts)
	}

	// The throttling lifts (one call clears the faults of every service):
	// the next syncs complete and the problems clear.
	base := regexp.MustCompile(`resource_manager=(https://\S+)`).FindStringSubmatch(h.logs.String())
	req, err := http.NewRequest(http.MethodDelete, base[1]+"/_sim/faults", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := sim.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("lifting the throttling: %v %v", resp, err)
	}
	resp.Body.Close()
	seen = h.runIDs(t, admin)
	for _, d := range throttleDomains {
		f.trigger(t, d)
	}
	for _, r := range h.runsSince(t, admin, seen) {
		if r.Status != "completed" {
			t.Fatalf("%s sync after the throttling lifted: %+v", r.JobType, r)
		}
	}
	for tenant, tf := range readFreshness(t, h, admin) {
		if tf.stale || len(tf.problems) > 0 {
			t.Errorf("%s after the throttling lifted: stale %t, problems %v", tenant, tf.stale, tf.problems)
		}
		for _, d := range throttleDomains {
			if !syncedAt(t, tf.synced[d]).After(syncedAt(t, before[tenant].synced[d])) {
				t.Errorf("%s %s synced_at %s, want later than %s", tenant, d, tf.synced[d], before[tenant].synced[d])
			}
		}
	}
}

func syncedAt(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("synced_at %q: %v", s, err)
	}
	return at
}

// runIDs is the ids of the runs in the sync history.
func (h *host) runIDs(t *testing.T, admin string) map[string]bool {
	t.Helper()
	var hist struct {
		Logs []run `json:"logs"`
	}
	h.get("/api/v1/sync/history?limit=100", admin).json(t, &hist)
	ids := map[string]bool{}
	for _, r := range hist.Logs {
		ids[r.JobID] = true
	}
	return ids
}

// runsSince waits until every run of the history not in seen has ended,
// and returns those runs.
func (h *host) runsSince(t *testing.T, admin string, seen map[string]bool) []run {
	t.Helper()
	var runs []run
	h.waitFor("the triggered runs", time.Minute, func() bool {
		var hist struct {
			Logs []run `json:"logs"`
		}
		h.get("/api/v1/sync/history?limit=100", admin).json(t, &hist)
		runs = runs[:0]
		for _, r := range hist.Logs {
			if seen[r.JobID] {
				continue
			}
			if r.Status != "completed" && r.Status != "failed" {
				return false
			}
			runs = append(runs, r)
		}
		return len(runs) > 0
	})
	return runs
}
