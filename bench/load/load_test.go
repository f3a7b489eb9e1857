package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestShare(t *testing.T) {
	for _, conns := range []int{10, 64, 100, 256} {
		got, err := share(classes, conns)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0
		for _, n := range got {
			if n < 1 {
				t.Errorf("%d connections: a class got %d", conns, n)
			}
			sum += n
		}
		if sum != conns {
			t.Errorf("%d connections: shares %v add up to %d", conns, got, sum)
		}
	}
	// The default weights are shares of 64 connections.
	got, _ := share(classes, 64)
	for i, c := range classes {
		if got[i] != c.weight {
			t.Errorf("%s: %d of 64 connections, want its weight %d", c.name, got[i], c.weight)
		}
	}
	if _, err := share(classes, len(classes)-1); err == nil {
		t.Error("fewer connections than classes were shared")
	}
}

func TestParseMix(t *testing.T) {
	mix, err := parseMix("health=1,quotas=0")
	if err != nil {
		t.Fatal(err)
	}
	if len(mix) != len(classes)-1 || mix[0].weight != 1 || slices.ContainsFunc(mix, func(c class) bool { return c.name == "quotas" }) {
		t.Errorf("mix %v", mix)
	}
	for _, bad := range []string{"nope=1", "health", "health=-1", "health=x"} {
		if _, err := parseMix(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFragmentsOf(t *testing.T) {
	page := `<div hx-get="/partials/a" hx-trigger="load"></div><div hx-get="/partials/b?x=1&amp;y=2"></div><p hx-get="/partials/a"></p>`
	if got, want := fragmentsOf(page), []string{"/partials/a", "/partials/b?x=1&y=2"}; !slices.Equal(got, want) {
		t.Errorf("fragments %v, want %v", got, want)
	}
}

// The scaled world is valid, and its copies are the demo's tenants under
// names, ids and domains of their own.
func TestScaledWorld(t *testing.T) {
	w, err := scaledWorld(7, 10, time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Tenants) != 7 {
		t.Fatalf("%d tenants", len(w.Tenants))
	}
	if a, b := w.Tenants[0], w.Tenants[5]; !strings.HasPrefix(b.Name, strings.TrimSuffix(a.Name, " 001")) ||
		a.DirectoryTenantID == b.DirectoryTenantID || a.Domains[0] == b.Domains[0] || b.BillingAccountID != nil {
		t.Errorf("tenant 6 is not a copy of tenant 1 of its own: %+v\n%+v", b, a)
	}
	days := map[string]bool{}
	for _, c := range w.Costs {
		days[c.Date] = true
	}
	if len(days) != 10 {
		t.Errorf("costs on %d days, want 10", len(days))
	}
}
