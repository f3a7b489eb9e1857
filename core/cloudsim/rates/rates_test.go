package rates_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/rates"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// TestServe: the Frankfurter time series of the range, against the world's
// base or, crossed, another currency; to= filters; a bad range is a 422,
// an unknown currency a 404; a world without rates answers none.
func TestServe(t *testing.T) {
	w := &world.World{ExchangeRates: &world.ExchangeRates{Base: "USD", Rates: map[string]map[string]float64{
		"2026-11-05": {"EUR": 0.8, "GBP": 0.5},
		"2026-11-06": {"EUR": 0.9, "GBP": 0.6},
		"2026-11-09": {"EUR": 0.75, "GBP": 0.5},
	}}}
	s, err := cloudsim.Start(t.Context(), w, cloudsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rates.Register(s)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := s.HTTPClient().Get(s.URLs[cloudsim.ARM] + rates.Path + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: not JSON: %s", path, b)
		}
		out, _ := json.Marshal(v)
		return resp.StatusCode, string(out)
	}
	for path, want := range map[string]string{
		"/2026-11-06..2026-11-09?from=USD": `{"amount":1,"base":"USD","end_date":"2026-11-09","rates":{"2026-11-06":{"EUR":0.9,"GBP":0.6},"2026-11-09":{"EUR":0.75,"GBP":0.5}},"start_date":"2026-11-06"}`,
		"/2026-11-06..?to=EUR":             `{"amount":1,"base":"USD","end_date":"2026-11-09","rates":{"2026-11-06":{"EUR":0.9},"2026-11-09":{"EUR":0.75}},"start_date":"2026-11-06"}`,
		"/2026-11-09..2026-11-09?base=EUR": `{"amount":1,"base":"EUR","end_date":"2026-11-09","rates":{"2026-11-09":{"GBP":0.666667,"USD":1.33333}},"start_date":"2026-11-09"}`,
		"/2026-11-07..2026-11-08?from=USD": `{"amount":1,"base":"USD","end_date":"2026-11-08","rates":{},"start_date":"2026-11-07"}`,
	} {
		if status, got := get(path); status != http.StatusOK || got != want {
			t.Errorf("%s: %d %s\nwant %s", path, status, got, want)
		}
	}
	for path, want := range map[string]int{
		"/2026-11-09..2026-11-06": http.StatusUnprocessableEntity,
		"/2026-11-06":             http.StatusUnprocessableEntity,
		"/2026-13-01..":           http.StatusUnprocessableEntity,
		"/2026-11-06..?from=CHF":  http.StatusNotFound,
	} {
		if status, body := get(path); status != want {
			t.Errorf("%s: %d %s, want %d", path, status, body, want)
		}
	}
	s.SetWorld(&world.World{})
	if status, got := get("/2026-11-06..2026-11-09?from=USD"); status != http.StatusOK || got != `{"amount":1,"base":"USD","end_date":"2026-11-09","rates":{},"start_date":"2026-11-06"}` {
		t.Errorf("a world without rates: %d %s", status, got)
	}
}
