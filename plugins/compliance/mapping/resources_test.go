package mapping

import "testing"

// The status rules over resources: a resource fails a control when any
// mapped policy finds it non-compliant, passes when the others found it
// compliant or exempt (exempt shown as such), and the control's result
// follows from its resources and its mapped policies.
func TestResultOverResources(t *testing.T) {
	r := NewResources()
	r.Add("enc", "vm1", EvidenceCompliant)
	r.Add("enc", "vm2", EvidenceCompliant)
	r.Add("backup", "vm2", EvidenceNonCompliant)
	r.Add("backup", "vm3", EvidenceExempt)
	r.Add("tags", "vm4", EvidenceExempt|EvidenceCompliant)
	// Only Unknown or Conflict: nothing recorded.
	r.Add("unknown", "vm5", 0)
	r.Add("mixed", "vm6", EvidenceCompliant|EvidenceNonCompliant)
	counter := r.Counter()
	cases := []struct {
		name     string
		policies []string
		want     ResourceCounts
		result   string
	}{
		{"no policy maps", nil, ResourceCounts{}, ResultManual},
		{"policies without states", []string{"unknown"}, ResourceCounts{}, ResultNotApplicable},
		{"all compliant", []string{"enc"}, ResourceCounts{Passed: 2}, ResultPassed},
		// vm2 is compliant under enc but fails under backup.
		{"one policy fails a resource", []string{"enc", "backup"}, ResourceCounts{Passed: 2, Failed: 1, Exempt: 1}, ResultFailed},
		{"exempt passes", []string{"backup", "tags"}, ResourceCounts{Passed: 2, Failed: 1, Exempt: 2}, ResultFailed},
		{"exempt alone passes", []string{"tags"}, ResourceCounts{Passed: 1, Exempt: 1}, ResultPassed},
		{"assignments disagree: the worst wins", []string{"mixed"}, ResourceCounts{Failed: 1}, ResultFailed},
	}
	for _, c := range cases {
		got := counter.Count(c.name, c.policies)
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		if res := Result(len(c.policies), got); res != c.result {
			t.Errorf("%s: result %s, want %s", c.name, res, c.result)
		}
	}
	// A key counted once is answered as counted.
	if got := counter.Count("all compliant", []string{"backup"}); got != (ResourceCounts{Passed: 2}) {
		t.Errorf("all compliant again: %+v", got)
	}
	if got := (*Resources)(nil).Counter().Count("enc", []string{"enc"}); got != (ResourceCounts{}) {
		t.Errorf("no resources: %+v", got)
	}
}
