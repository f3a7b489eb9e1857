package frameworkstest_test

import (
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/compliance/frameworks/frameworkstest"
)

// TestAzureGroups: every line but the comments is a framework's group, in
// the file's order, and the names follow the groups.
func TestAzureGroups(t *testing.T) {
	groups := frameworkstest.AzureGroups(t)
	names := frameworkstest.AzureGroupNames(t)
	perFramework := map[string]int{}
	for i, g := range groups {
		if g.Framework == "" || g.Name == "" || strings.ContainsAny(g.Name, " #") || names[i] != g.Name {
			t.Fatalf("group %d: %+v, name %q", i, g, names[i])
		}
		perFramework[g.Framework]++
	}
	for _, id := range []string{"soc2", "nist_csf", "iso27001", "cis_azure", "cis_azure_v3", "mcsb", "pci_dss", "nis2"} {
		if perFramework[id] == 0 {
			t.Errorf("no groups of %s: %v", id, perFramework)
		}
	}
	if len(names) != len(groups) || groups[0].Framework != "soc2" {
		t.Errorf("%d names of %d groups, first %+v", len(names), len(groups), groups[0])
	}
}
