package checks_test

import (
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/partner/catalogue"
	"github.com/stewardhq/steward/plugins/partner/checks"
)

func ptr(v float64) *float64 { return &v }

// TestAssess: statuses by check and evidence, and the maturity formula
// worked by hand (weights 4, 4, 3, 1 = 12).
func TestAssess(t *testing.T) {
	c := &catalogue.Catalogue{Requirements: []catalogue.Requirement{
		{ID: "a", Priority: catalogue.Critical, Check: &catalogue.Check{Metric: catalogue.MFACoverage, Target: 90}},
		{ID: "b", Priority: catalogue.Critical},
		{ID: "c", Priority: catalogue.High, Check: &catalogue.Check{Metric: catalogue.AdminMFA, Target: 100}},
		{ID: "d", Priority: catalogue.Low, Check: &catalogue.Check{Metric: catalogue.ComplianceScore, Target: 50}},
	}}
	values := map[catalogue.Metric]checks.Reading{
		catalogue.MFACoverage:     {Value: ptr(90)},
		catalogue.AdminMFA:        {Value: ptr(99.99)},
		catalogue.ComplianceScore: {Reason: "not synced"},
	}
	read := func(ch catalogue.Check) checks.Reading { return values[ch.Metric] }
	statuses := func(a checks.Assessment) []string {
		var out []string
		for _, r := range a.Results {
			out = append(out, r.Status+"/"+r.CheckStatus)
		}
		return out
	}

	a := checks.Assess(c, read, nil)
	want := []string{"met/met", "awaiting_evidence/none", "not_met/not_met", "unknown/unknown"}
	if got := statuses(a); len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	// 5 × 4/12 = 1.666… → 1.67.
	if a.Maturity != 1.67 || a.Met != 1 || a.NotMet != 1 || a.Unknown != 1 || a.AwaitingEvidence != 1 || a.Gaps != 3 || a.CriticalGaps != 1 {
		t.Fatalf("assessment %+v", a)
	}
	if a.Results[3].Reason != "not synced" || a.Results[0].Value == nil || *a.Results[0].Value != 90 {
		t.Errorf("results %+v", a.Results)
	}

	// Accepted evidence meets a requirement without a check and one whose
	// check is unknown, not one whose check has a value below target.
	a = checks.Assess(c, read, map[string]string{"b": "accepted", "c": "accepted", "d": "accepted"})
	want = []string{"met/met", "met/none", "not_met/not_met", "met/unknown"}
	if got := statuses(a); got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("statuses with evidence %v, want %v", got, want)
	}
	// 5 × 9/12 = 3.75.
	if a.Maturity != 3.75 || a.Gaps != 1 || a.CriticalGaps != 0 || a.Results[1].EvidenceStatus != "accepted" {
		t.Fatalf("assessment with evidence %+v", a)
	}
	// Evidence not accepted changes nothing.
	if a := checks.Assess(c, read, map[string]string{"b": "submitted"}); a.Results[1].Status != checks.StatusAwaitingEvidence || a.Maturity != 1.67 {
		t.Fatalf("submitted evidence %+v", a.Results[1])
	}
}

func TestDaysLeft(t *testing.T) {
	deadline := time.Date(2027, 3, 31, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		now  time.Time
		want int
	}{
		{time.Date(2027, 3, 31, 23, 59, 0, 0, time.UTC), 0},
		{time.Date(2027, 3, 30, 0, 0, 1, 0, time.UTC), 1},
		{time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC), 126},
		{time.Date(2027, 4, 2, 8, 0, 0, 0, time.UTC), -2},
		// A clock in another zone counts by its UTC day.
		{time.Date(2027, 3, 31, 1, 0, 0, 0, time.FixedZone("CEST", 2*3600)), 1},
	} {
		if got := checks.DaysLeft(deadline, tt.now); got != tt.want {
			t.Errorf("DaysLeft at %v = %d, want %d", tt.now, got, tt.want)
		}
	}
}
