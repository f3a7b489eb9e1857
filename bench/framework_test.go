package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/bench/stat"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/host/pluginstore"
)

// The world of BenchmarkFrameworkDetail: frameworkTenants tenants of one
// subscription each, every subscription with frameworkResources resources
// under frameworkPerResource policy definitions each (1,000 states a
// tenant), drawn from frameworkDefinitions real Azure built-in policies
// with the group names Azure's NIST CSF v2.0 and SOC 2 initiatives give
// them; a fifth of the states non-compliant.
const (
	frameworkTenants     = 100
	frameworkResources   = 200
	frameworkPerResource = 5
	frameworkDefinitions = 200
	// frameworkRequests is how many times each warm read is timed;
	// frameworkSyncs how many syncs of every tenant are each followed by
	// one timed read.
	frameworkRequests = 200
	frameworkSyncs    = 5
)

// frameworkPaths are the reads timed warm: the framework detail plain and
// with its policies explained, a control's resources, and /health, the
// host's own answer, as the in-run baseline.
var frameworkPaths = []string{
	"/health",
	"/api/v1/compliance/frameworks/nist_csf",
	"/api/v1/compliance/frameworks/nist_csf?include_policies=true&explain=true",
	"/api/v1/compliance/frameworks/nist_csf/controls/PR.DS-01",
	"/api/v1/compliance/frameworks",
}

// BenchmarkFrameworkDetail times the compliance framework detail through
// the host, as `make run` serves it (the real binary, the repository's
// plugins.hcl, the compliance plugin as its own process behind the host's
// proxy), over 100 tenants × 1,000 policy states synced from the simulated
// cloud, as the admin, who sees every tenant, on SQLite and on PostgreSQL.
// Each read is fetched frameworkRequests times in a row over one
// kept-alive connection after ten unmeasured ones; then the compliance
// sync of every tenant is triggered frameworkSyncs times and the first
// framework detail after each is timed: the read that finds its cached
// coverage outdated.
func BenchmarkFrameworkDetail(b *testing.B) {
	bin := binDir(b)
	worldFile := writeFrameworkWorld(b)
	for _, dialect := range []string{store.DialectSQLite, store.DialectPostgres} {
		b.Run(dialect, func(b *testing.B) {
			extra := []string{"STEWARD_ACCESS_LOG=false", "STEWARD_RATE_LIMIT_PER_MINUTE=1000000", "STEWARD_SIM_WORLD=" + worldFile}
			if dialect == store.DialectPostgres {
				extra = append(extra, "STEWARD_DATABASE_URL="+frameworkDatabase(b))
			}
			base, env := repoEnv(b, bin, extra...)
			s, err := serve(filepath.Join(bin, "steward"), env, base)
			if err != nil {
				b.Fatal(err)
			}
			defer s.stop()
			token, err := login(base)
			if err != nil {
				b.Fatal(err)
			}
			c := &frameworkClient{base: base, token: token, http: &http.Client{Timeout: 30 * time.Second}}
			want := frameworkTenants * frameworkResources * frameworkPerResource
			if err := c.waitForFindings(want, 5*time.Minute); err != nil {
				b.Fatalf("%v\nhost log:\n%s", err, tail(s.log.String(), 30))
			}
			b.ResetTimer()
			for _, path := range frameworkPaths {
				times := make([]time.Duration, 0, frameworkRequests)
				for i := range frameworkRequests + 10 {
					d, err := c.timed(path)
					if err != nil {
						b.Fatal(err)
					}
					if i >= 10 {
						times = append(times, d)
					}
				}
				report(b, strings.TrimPrefix(path, "/api/v1/compliance/"), times)
			}
			var afterSync []time.Duration
			for range frameworkSyncs {
				if err := c.resync(3 * time.Minute); err != nil {
					b.Fatal(err)
				}
				d, err := c.timed(frameworkPaths[1])
				if err != nil {
					b.Fatal(err)
				}
				afterSync = append(afterSync, d)
			}
			report(b, "after-sync", afterSync)
			b.ReportMetric(0, "ns/op")
		})
	}
}

func report(b *testing.B, name string, times []time.Duration) {
	slices.Sort(times)
	name = strings.NewReplacer("/", "-", "?", "-", "&", "-", "=", "-").Replace(strings.TrimPrefix(name, "/"))
	b.ReportMetric(ms(stat.Percentile(times, 0.50)), name+"-p50-ms")
	b.ReportMetric(ms(stat.Percentile(times, 0.95)), name+"-p95-ms")
	b.Logf("%-80s n %3d  p50 %8.2f ms  p95 %8.2f ms  max %8.2f ms", name, len(times), ms(stat.Percentile(times, 0.50)),
		ms(stat.Percentile(times, 0.95)), ms(times[len(times)-1]))
}

// frameworkClient is the admin's kept-alive connection to the host.
type frameworkClient struct {
	base, token string
	http        *http.Client
}

func (c *frameworkClient) do(method, path string) (int, []byte, error) {
	req, err := http.NewRequest(method, c.base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// timed is the time from sending a GET to reading its last byte; a status
// other than 200 is an error.
func (c *frameworkClient) timed(path string) (time.Duration, error) {
	t0 := time.Now()
	status, body, err := c.do(http.MethodGet, path)
	d := time.Since(t0)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("GET %s: %d %s", path, status, body)
	}
	return d, err
}

// waitForFindings waits until the findings route counts want findings.
func (c *frameworkClient) waitForFindings(want int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	total := -1
	for time.Now().Before(deadline) {
		status, body, err := c.do(http.MethodGet, "/api/v1/compliance/findings?limit=1")
		if err == nil && status == http.StatusOK {
			var page struct {
				Total int `json:"total"`
			}
			if json.Unmarshal(body, &page) == nil {
				if total = page.Total; total == want {
					return nil
				}
			}
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("the findings count %d after %s, want %d", total, limit, want)
}

// resync triggers the compliance sync of every tenant and waits until a
// run of it started after the trigger has completed for each.
func (c *frameworkClient) resync(limit time.Duration) error {
	since := time.Now().UTC().Add(-time.Second)
	status, body, err := c.do(http.MethodPost, "/api/v1/sync/compliance")
	if err != nil || status != http.StatusAccepted {
		return fmt.Errorf("trigger the compliance sync: %d %s %v", status, body, err)
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		status, body, err := c.do(http.MethodGet, "/api/v1/sync/history?limit=500")
		if err != nil || status != http.StatusOK {
			continue
		}
		var hist struct {
			Logs []struct {
				JobType  string    `json:"job_type"`
				Status   string    `json:"status"`
				QueuedAt time.Time `json:"queued_at"`
			} `json:"logs"`
		}
		if json.Unmarshal(body, &hist) != nil {
			continue
		}
		done, pending := 0, 0
		for _, r := range hist.Logs {
			if r.JobType != "compliance" || r.QueuedAt.Before(since) {
				continue
			}
			switch r.Status {
			case "completed":
				done++
			case "failed":
				return errors.New("a compliance sync failed")
			default:
				pending++
			}
		}
		if pending == 0 && done > 0 {
			return nil
		}
	}
	return fmt.Errorf("the compliance sync did not complete within %s", limit)
}

// frameworkDatabase creates a PostgreSQL database for one run and drops it,
// with the plugins' roles and schemas, when the benchmark ends.
func frameworkDatabase(b *testing.B) string {
	ctx := context.Background()
	base := os.Getenv("STEWARD_TEST_POSTGRES_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	admin, err := store.Open(ctx, base, store.Options{MaxOpenConns: 1})
	if err != nil {
		b.Skipf("PostgreSQL: %v", err)
	}
	defer admin.Close()
	name := fmt.Sprintf("bench_framework_%d", time.Now().UnixNano()%1_000_000_000)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE ?", bun.Ident(name)); err != nil {
		b.Fatalf("PostgreSQL: %v", err)
	}
	u := strings.Replace(base, "/test?", "/"+name+"?", 1)
	b.Cleanup(func() {
		if db, err := store.Open(ctx, u, store.Options{MaxOpenConns: 1}); err == nil {
			if err := pluginstore.Drop(ctx, db); err != nil {
				b.Logf("drop the plugins' roles: %v", err)
			}
			_ = db.Close()
		}
		if admin, err := store.Open(ctx, base, store.Options{MaxOpenConns: 1}); err == nil {
			if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS ? WITH (FORCE)", bun.Ident(name)); err != nil {
				b.Logf("drop %s: %v", name, err)
			}
			_ = admin.Close()
		}
	})
	return u
}

// frameworkPolicy is a real Azure built-in policy definition with the
// group names of Azure's initiatives.
type frameworkPolicy struct {
	id, name string
	groups   []string
}

// frameworkPolicies reads frameworkDefinitions policies with group names
// from the compliance plugin's labelled sets of Azure's NIST CSF v2.0 and
// SOC 2 initiatives, half from each.
func frameworkPolicies(b *testing.B) []frameworkPolicy {
	var out []frameworkPolicy
	seen := map[string]bool{}
	for _, set := range []string{"nist_csf", "soc2"} {
		f, err := os.Open(filepath.Join("..", "plugins", "compliance", "mapping", "testdata", "precision", set+".tsv"))
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		n := 0
		for sc.Scan() && n < frameworkDefinitions/2 {
			cols := strings.Split(sc.Text(), "\t")
			if len(cols) != 3 || !strings.HasPrefix(cols[0], "/providers/") || cols[2] == "" || seen[cols[0]] {
				continue
			}
			seen[cols[0]] = true
			out = append(out, frameworkPolicy{id: cols[0], name: cols[1], groups: strings.Split(cols[2], ";")})
			n++
		}
		f.Close()
		if err := sc.Err(); err != nil {
			b.Fatal(err)
		}
	}
	if len(out) != frameworkDefinitions {
		b.Fatalf("%d policies with group names, want %d", len(out), frameworkDefinitions)
	}
	return out
}

// writeFrameworkWorld writes the benchmark's world file and returns its
// path. The same world every run: ids and states come from fixed seeds.
func writeFrameworkWorld(b *testing.B) string {
	policies := frameworkPolicies(b)
	ns := uuid.MustParse("0b6f2c1e-3d4a-4e5f-8a9b-7c6d5e4f3a21")
	id := func(s string) string { return uuid.NewSHA1(ns, []byte(s)).String() }
	at := time.Now().UTC().Truncate(time.Hour).Format(time.RFC3339)
	w := &world.World{}
	for t := range frameworkTenants {
		sub := id(fmt.Sprintf("subscription/%d", t))
		w.Tenants = append(w.Tenants, world.Tenant{Name: fmt.Sprintf("Framework bench %03d", t+1), DirectoryTenantID: id(fmt.Sprintf("tenant/%d", t)),
			Subscriptions: []world.Subscription{{ID: sub, Name: fmt.Sprintf("bench-%03d", t+1)}}})
		for r := range frameworkResources {
			rid := fmt.Sprintf("/subscriptions/%s/resourceGroups/rg-bench/providers/Microsoft.Storage/storageAccounts/sa%03d%03d", sub, t, r)
			for k := range frameworkPerResource {
				// Each resource's definitions are distinct: consecutive
				// strides of the list, offset by tenant and resource.
				p := policies[(t*7+r*frameworkPerResource+k)%len(policies)]
				state := "Compliant"
				if (t+r+k)%5 == 0 {
					state = "NonCompliant"
				}
				w.PolicyStates = append(w.PolicyStates, world.PolicyState{SubscriptionID: sub, PolicyDefinitionID: p.id, PolicyName: p.name,
					Category: "General", GroupNames: p.groups, ComplianceState: state, ResourceID: rid, Severity: "Medium", Timestamp: at})
			}
		}
	}
	if err := w.Validate(); err != nil {
		b.Fatal(err)
	}
	raw, err := json.Marshal(w)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "world.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// tail is the last n lines of a log.
func tail(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
