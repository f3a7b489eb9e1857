package e2e

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsUnderMixedTraffic drives concurrent requests of every method
// over kept-alive connections, whose buffers fiber reuses, then scrapes
// /metrics with the Prometheus text parser: every label must be one the
// host wrote, not a view into a later request's bytes.
func TestMetricsUnderMixedTraffic(t *testing.T) {
	h := startHost(t, hostOpts{env: map[string]string{"STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}})
	admin := h.login()
	type call struct{ method, path, body string }
	calls := []call{
		{http.MethodGet, "/health", ""},
		{http.MethodPost, "/api/v1/auth/refresh", `{"refresh_token":"x"}`},
		{http.MethodDelete, "/api/v1/api-keys/00000000-0000-0000-0000-000000000000", ""},
		{http.MethodGet, "/api/v1/testplugin/items?limit=3", ""},
		{http.MethodPatch, "/api/v1/tenants/00000000-0000-0000-0000-000000000000", `{}`},
		{http.MethodPut, "/no/such/route/with/a/much/longer/path", ""},
		{http.MethodOptions, "/api/v1/health", ""},
		{http.MethodGet, "/api/v1/sync/history?limit=1", ""},
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				c := calls[(i+w)%len(calls)]
				req, err := http.NewRequest(c.method, h.url+c.path, strings.NewReader(c.body))
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("Authorization", "Bearer "+admin)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()

	r := h.get("/metrics", admin)
	if r.status != http.StatusOK {
		t.Fatalf("/metrics after mixed traffic: %d %s", r.status, r.body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	fam := families["steward_http_requests_total"]
	if fam == nil || len(fam.GetMetric()) == 0 {
		t.Fatal("/metrics has no steward_http_requests_total series")
	}
	valid := []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"}
	seen := map[string]bool{}
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "method":
				if !slices.Contains(valid, l.GetValue()) {
					t.Errorf("method label %q is not a method the host served", l.GetValue())
				}
				seen[l.GetValue()] = true
			case "route":
				if !strings.HasPrefix(l.GetValue(), "/") && l.GetValue() != "unmatched" {
					t.Errorf("route label %q is not a route template", l.GetValue())
				}
			}
		}
	}
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		if !seen[m] {
			t.Errorf("no series for %s among %v", m, seen)
		}
	}
}

// TestRequestIDFromClient: a client's X-Request-Id is kept only when it is
// a short token of safe characters; anything else is replaced, so logs and
// audit entries never carry what the client put there.
func TestRequestIDFromClient(t *testing.T) {
	h := startHost(t, hostOpts{})
	if got := h.do(http.MethodGet, "/health", "", nil, "X-Request-Id", "trace-0042").header.Get("X-Request-Id"); got != "trace-0042" {
		t.Errorf("a safe id came back as %q", got)
	}
	for _, bad := range []string{"<img src=x onerror=alert(1)>", strings.Repeat("x", 200), "a b", "x\"y"} {
		got := h.do(http.MethodGet, "/health", "", nil, "X-Request-Id", bad).header.Get("X-Request-Id")
		if got == bad || got == "" || strings.ContainsAny(got, "<> \"") || len(got) > 128 {
			t.Errorf("id %q came back as %q, want a generated one", bad, got)
		}
		if strings.Contains(h.logs.String(), bad) {
			t.Errorf("id %q reached the log", bad)
		}
	}
}
