package cloudsim

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
)

func startTestSim(t *testing.T) *Sim {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, &world.World{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Close() })
	items := make([]int, 250)
	for i := range items {
		items[i] = i
	}
	s.Handle(ARM, "GET /items", func(w http.ResponseWriter, r *http.Request) {
		p := PageOf(r, s.URLs[ARM], len(items), DefaultPageSize)
		body := map[string]any{"value": items[p.Start:p.End]}
		if p.NextLink != "" {
			body["nextLink"] = p.NextLink
		}
		WriteJSON(w, body)
	})
	return s
}

type page struct {
	Value    []int  `json:"value"`
	NextLink string `json:"nextLink"`
}

func get(t *testing.T, s *Sim, url string) (*http.Response, page) {
	t.Helper()
	resp, err := s.HTTPClient().Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p page
	if resp.StatusCode == 200 {
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
	}
	return resp, p
}

func TestPagingOverTLS(t *testing.T) {
	s := startTestSim(t)
	if !strings.HasPrefix(s.URLs[ARM], "https://127.0.0.1:") || s.URLs[ARM] == s.URLs[IdP] {
		t.Fatalf("urls %v", s.URLs)
	}
	var got []int
	url := s.URLs[ARM] + "/items?api-version=2024-01-01"
	pages := 0
	for url != "" {
		_, p := get(t, s, url)
		got = append(got, p.Value...)
		url = p.NextLink
		pages++
	}
	if pages != 3 || len(got) != 250 || got[249] != 249 {
		t.Fatalf("%d pages, %d items", pages, len(got))
	}
	_, p := get(t, s, s.URLs[ARM]+"/items?$top=10")
	if len(p.Value) != 10 || !strings.Contains(p.NextLink, "skiptoken=10") || !strings.Contains(p.NextLink, "top=10") {
		t.Fatalf("$top page %+v", p)
	}
	if s.Faults.Hits(ARM, "/items") != 4 {
		t.Fatalf("hits %d", s.Faults.Hits(ARM, "/items"))
	}
	if _, err := http.Get(s.URLs[ARM] + "/items"); err == nil {
		t.Fatal("a client that does not trust the simulator's CA connected")
	}
}

func TestFaults(t *testing.T) {
	s := startTestSim(t)
	s.Faults.Set(ARM, "/items", Fault{Status: 429, RetryAfter: 1500 * time.Millisecond, Times: 2})
	for i := 0; i < 2; i++ {
		resp, _ := get(t, s, s.URLs[ARM]+"/items")
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" {
			t.Fatalf("throttled request %d: %d Retry-After=%q", i, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	if resp, _ := get(t, s, s.URLs[ARM]+"/items"); resp.StatusCode != 200 {
		t.Fatalf("after the fault's times: %d", resp.StatusCode)
	}
	s.Faults.Set(ARM, "/items", Fault{Status: 503, Skip: 1, Times: 1})
	for i, want := range []int{200, 503, 200} {
		if resp, _ := get(t, s, s.URLs[ARM]+"/items"); resp.StatusCode != want {
			t.Fatalf("request %d with one skipped: %d, want %d", i, resp.StatusCode, want)
		}
	}
	s.Faults.Set(ARM, "/items", Fault{TruncatePages: true})
	if _, p := get(t, s, s.URLs[ARM]+"/items"); len(p.Value) != 100 || p.NextLink != "" {
		t.Fatalf("truncated page %d items next=%q", len(p.Value), p.NextLink)
	}
	s.Faults.Set(ARM, "/items", Fault{Latency: 150 * time.Millisecond})
	t0 := time.Now()
	get(t, s, s.URLs[ARM]+"/items")
	if time.Since(t0) < 150*time.Millisecond {
		t.Fatal("latency not applied")
	}
	s.Faults.Clear()

	body, _ := json.Marshal(map[string]any{"prefix": "/items", "status": 503, "times": 1})
	resp, err := s.HTTPClient().Post(s.URLs[ARM]+"/_sim/faults", "application/json", bytes.NewReader(body))
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("set fault over HTTP: %v %v", err, resp)
	}
	r503, _ := get(t, s, s.URLs[ARM]+"/items")
	var envelope struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if r503.StatusCode != 503 {
		t.Fatalf("fault over HTTP: %d", r503.StatusCode)
	}
	if r, _ := get(t, s, s.URLs[IdP]+"/items"); r.StatusCode != 404 {
		t.Fatalf("a fault of one service must not touch another: %d", r.StatusCode)
	}
	resp, err = s.HTTPClient().Post(s.URLs[ARM]+"/_sim/faults", "application/json", strings.NewReader(`{"status": 500}`))
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("fault without prefix: %v %v", err, resp.StatusCode)
	}
	_ = json.NewDecoder(resp.Body).Decode(&envelope)
	if envelope.Error.Code != "InvalidFault" {
		t.Fatalf("error envelope %+v", envelope)
	}
}
