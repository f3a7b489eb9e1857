package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

type testPolicy struct {
	name, category, severity string
	groups                   []string
}

// testPolicies: three in the regulatory initiative (with group names),
// two assigned alone.
var testPolicies = []testPolicy{
	{"Storage accounts should have the specified minimum TLS version", "Storage", "Medium", []string{"SOC_2_CC6.7", "NIST_CSF_v2.0_PR.DS_02"}},
	{"Secure transfer to storage accounts should be enabled", "Storage", "High", []string{"SOC_2_CC6.7"}},
	{"Azure Defender for servers should be enabled", "Security Center", "High", []string{"SOC_2_CC7.2"}},
	{"Audit diagnostic setting for selected resource types", "Monitoring", "Low", nil},
	{"Network Watcher should be enabled", "Network", "", nil},
}

func policyDefinitionID(i int) string {
	return fmt.Sprintf("/providers/Microsoft.Authorization/policyDefinitions/%08d-0000-4000-8000-000000000000", i)
}

// policyWorld gives subscription 0 500 resources, storage accounts and
// virtual machines in two regions, and each policy's state on each (2500)
// plus one on the subscription itself: three pages. The brand
// subscription has a state too, which must not show.
func policyWorld() *world.World {
	w := baseWorld()
	for r := 0; r < 500; r++ {
		res := world.Resource{SubscriptionID: subID(0), Location: []string{"westeurope", "eastus"}[r%2]}
		if r%2 == 0 {
			res.Type, res.Name = "microsoft.storage/storageaccounts", fmt.Sprintf("st%04d", r)
			res.ID = fmt.Sprintf("/subscriptions/%s/resourceGroups/rg-%02d/providers/Microsoft.Storage/storageAccounts/%s", subID(0), r%10, res.Name)
		} else {
			res.Type, res.Name = "microsoft.compute/virtualmachines", fmt.Sprintf("vm%04d", r)
			res.ID = fmt.Sprintf("/subscriptions/%s/resourceGroups/rg-%02d/providers/Microsoft.Compute/virtualMachines/%s", subID(0), r%10, res.Name)
		}
		w.Resources = append(w.Resources, res)
	}
	state := func(sub string, p int, resourceID string, n int) world.PolicyState {
		tp := testPolicies[p]
		compliance := "Compliant"
		if (n*7+p)%4 == 0 {
			compliance = "NonCompliant"
		}
		return world.PolicyState{SubscriptionID: sub, PolicyDefinitionID: policyDefinitionID(p), PolicyName: tp.name,
			Category: tp.category, GroupNames: tp.groups, ComplianceState: compliance, ResourceID: resourceID,
			Severity: tp.severity, Timestamp: fmt.Sprintf("2026-12-15T%02d:%02d:00Z", 2+n%3, n%60)}
	}
	for p := range testPolicies {
		for r, res := range w.Resources {
			w.PolicyStates = append(w.PolicyStates, state(subID(0), p, res.ID, r))
		}
	}
	w.PolicyStates = append(w.PolicyStates, state(subID(0), 2, "/subscriptions/"+subID(0), 4),
		state(subID(1), 0, "/subscriptions/"+subID(1), 0))
	return w
}

func listPolicyStates(c *cloud.Clients, sub, filter string) ([]cloud.PolicyState, error) {
	var out []cloud.PolicyState
	err := c.PolicyStates(context.Background(), sub, filter, func(s cloud.PolicyState) error {
		out = append(out, s)
		return nil
	})
	return out, err
}

// checkPolicyState compares a state field by field with the world's.
func checkPolicyState(t *testing.T, w *world.World, got cloud.PolicyState, want world.PolicyState) {
	t.Helper()
	location, typ, group := "", "Microsoft.Resources/subscriptions", ""
	for _, r := range w.Resources {
		if r.ID == want.ResourceID {
			location, group = r.Location, strings.Split(r.ID, "/")[4]
			typ = map[string]string{"microsoft.storage/storageaccounts": "Microsoft.Storage/storageAccounts",
				"microsoft.compute/virtualmachines": "Microsoft.Compute/virtualMachines"}[r.Type]
		}
	}
	setID, setCategory := "", ""
	if len(want.GroupNames) > 0 {
		setID, setCategory = "/providers/Microsoft.Authorization/policySetDefinitions/", "Regulatory Compliance"
	}
	ts, _ := time.Parse(time.RFC3339, want.Timestamp)
	if got.SubscriptionID != want.SubscriptionID || got.ResourceID != want.ResourceID || got.ResourceType != typ ||
		got.ResourceGroup != group || got.ResourceLocation != location || got.ComplianceState != want.ComplianceState ||
		got.PolicyAssignmentID != arm.PolicyAssignmentID(want.SubscriptionID, want) ||
		got.PolicyDefinitionID != want.PolicyDefinitionID || got.PolicyDefinitionName != want.PolicyDefinitionID[len(want.PolicyDefinitionID)-36:] ||
		got.DefinitionCategory != want.Category || !strings.HasPrefix(got.PolicySetDefinitionID, setID) || (setID == "") != (got.PolicySetDefinitionID == "") ||
		got.SetCategory != setCategory || !slices.Equal(got.GroupNames, want.GroupNames) ||
		got.DisplayName != want.PolicyName || got.Severity != want.Severity || !got.Timestamp.Equal(ts) {
		t.Fatalf("policy state\n got %+v\nwant %+v", got, want)
	}
}

func TestPolicyStatesPagesFieldByField(t *testing.T) {
	w := policyWorld()
	s, c := startSim(t, w)
	got, err := listPolicyStates(c, subID(0), "")
	if err != nil {
		t.Fatal(err)
	}
	want := w.PolicyStates[:len(w.PolicyStates)-1]
	if len(got) != len(want) {
		t.Fatalf("%d states, want %d", len(got), len(want))
	}
	for i := range want {
		checkPolicyState(t, w, got[i], want[i])
	}
	// 2501 states are three pages of 1000, each a POST.
	path := "/subscriptions/" + subID(0) + "/providers/Microsoft.PolicyInsights/policyStates/latest/queryResults"
	if hits := s.Faults.Hits(cloudsim.ARM, path); hits != 3 {
		t.Fatalf("%d requests, want 3 pages", hits)
	}

	nonCompliant, err := listPolicyStates(c, subID(0), cloud.PolicyFilterNonCompliant)
	if err != nil {
		t.Fatal(err)
	}
	var wantNC []world.PolicyState
	for _, ps := range want {
		if ps.ComplianceState == "NonCompliant" {
			wantNC = append(wantNC, ps)
		}
	}
	if len(nonCompliant) != len(wantNC) || len(wantNC) == 0 || len(wantNC) == len(want) {
		t.Fatalf("%d non-compliant states, want %d of %d", len(nonCompliant), len(wantNC), len(want))
	}
	for i := range wantNC {
		checkPolicyState(t, w, nonCompliant[i], wantNC[i])
	}

	storage, err := listPolicyStates(c, subID(0), "complianceState eq 'NonCompliant' and resourceType eq 'Microsoft.Storage/storageAccounts'")
	if err != nil || len(storage) == 0 || len(storage) >= len(nonCompliant) {
		t.Fatalf("non-compliant storage: %d states, %v", len(storage), err)
	}
	var e *cloud.Error
	if _, err := listPolicyStates(c, subID(0), "severity eq 'High'"); !errors.As(err, &e) || e.StatusCode != 400 {
		t.Fatalf("unsupported filter: %v, want a 400", err)
	}
	if _, err := listPolicyStates(c, "99999999-0000-4000-8000-000000000000", ""); !errors.Is(err, cloud.ErrNotFound) {
		t.Fatalf("unknown subscription: %v, want ErrNotFound", err)
	}
	stop := errors.New("stop")
	n := 0
	err = c.PolicyStates(context.Background(), subID(0), "", func(cloud.PolicyState) error {
		if n++; n == 1500 {
			return stop
		}
		return nil
	})
	if err != stop || n != 1500 {
		t.Fatalf("fn's error: %v after %d states, want it as is", err, n)
	}
}

func TestPolicyStatesRetriesServerErrors(t *testing.T) {
	s, c := startSim(t, policyWorld())
	path := "/subscriptions/" + subID(0) + "/providers/Microsoft.PolicyInsights/"
	s.Faults.Set(cloudsim.ARM, path, cloudsim.Fault{Status: 503, Times: 2})
	got, err := listPolicyStates(c, subID(0), "")
	if err != nil || len(got) != 2501 {
		t.Fatalf("after a 503 burst: %d states, %v", len(got), err)
	}
	if hits := s.Faults.Hits(cloudsim.ARM, path); hits != 5 {
		t.Fatalf("%d requests, want 2 refused and 3 pages", hits)
	}
	s.Faults.Set(cloudsim.ARM, path, cloudsim.Fault{Status: 500})
	if _, err := c.PolicySummary(context.Background(), subID(0)); !errors.Is(err, cloud.ErrUnavailable) {
		t.Fatalf("persistent 500: %v, want ErrUnavailable", err)
	}
}

func TestPolicySummary(t *testing.T) {
	w := policyWorld()
	_, c := startSim(t, w)
	sum, err := c.PolicySummary(context.Background(), subID(0))
	if err != nil {
		t.Fatal(err)
	}
	// Expected from the world: a resource or policy is non-compliant when
	// any of its states is.
	worstOf := func(keep func(world.PolicyState) bool, key func(world.PolicyState) string) (nonCompliant, total int) {
		state := map[string]bool{}
		for _, ps := range w.PolicyStates {
			if ps.SubscriptionID == subID(0) && keep(ps) {
				state[key(ps)] = state[key(ps)] || ps.ComplianceState == "NonCompliant"
			}
		}
		for _, nc := range state {
			if nc {
				nonCompliant++
			}
		}
		return nonCompliant, len(state)
	}
	all := func(world.PolicyState) bool { return true }
	byResource := func(ps world.PolicyState) string { return ps.ResourceID }
	byPolicy := func(ps world.PolicyState) string { return ps.PolicyDefinitionID }
	ncResources, resources := worstOf(all, byResource)
	ncPolicies, _ := worstOf(all, byPolicy)
	if sum.NonCompliantResources != ncResources || sum.NonCompliantPolicies != ncPolicies ||
		sum.Resources["noncompliant"] != ncResources || sum.Resources["compliant"] != resources-ncResources {
		t.Fatalf("summary %+v, want %d of %d resources and %d policies non-compliant", sum, ncResources, resources, ncPolicies)
	}
	if len(sum.Assignments) != 3 {
		t.Fatalf("%d assignments, want the initiative and two single policies", len(sum.Assignments))
	}
	for i, a := range sum.Assignments {
		if i > 0 && a.NonCompliantResources > sum.Assignments[i-1].NonCompliantResources {
			t.Fatalf("assignments not the most non-compliant first: %+v", sum.Assignments)
		}
		in := func(ps world.PolicyState) bool { return arm.PolicyAssignmentID(subID(0), ps) == a.PolicyAssignmentID }
		nc, _ := worstOf(in, byResource)
		ncp, _ := worstOf(in, byPolicy)
		if a.NonCompliantResources != nc || a.NonCompliantPolicies != ncp {
			t.Fatalf("assignment %s: %+v, want %d resources and %d policies", a.PolicyAssignmentID, a, nc, ncp)
		}
		initiative := strings.HasSuffix(a.PolicyAssignmentID, "/regulatory-compliance")
		if initiative != (a.PolicySetDefinitionID != "") || initiative != (len(a.Definitions) == 3) || (len(a.Groups) > 0) != initiative {
			t.Fatalf("assignment %+v", a)
		}
		for _, d := range a.Definitions {
			nc, _ := worstOf(func(ps world.PolicyState) bool { return in(ps) && ps.PolicyDefinitionID == d.PolicyDefinitionID }, byResource)
			if d.NonCompliantResources != nc || d.Effect != "audit" {
				t.Fatalf("definition %+v, want %d non-compliant resources", d, nc)
			}
		}
		for _, g := range a.Groups {
			nc, _ := worstOf(func(ps world.PolicyState) bool { return in(ps) && slices.Contains(ps.GroupNames, g.Name) }, byResource)
			if g.NonCompliantResources != nc {
				t.Fatalf("group %+v, want %d non-compliant resources", g, nc)
			}
		}
		if initiative && (len(a.Groups) != 3 || a.Groups[0].Name != "NIST_CSF_v2.0_PR.DS_02") {
			t.Fatalf("initiative groups %+v", a.Groups)
		}
	}
}
