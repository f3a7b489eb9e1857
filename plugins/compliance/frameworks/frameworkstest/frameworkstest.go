// Package frameworkstest gives other packages' tests the frameworks
// package's test data: the group names Azure's built-in
// regulatory-compliance initiatives use.
package frameworkstest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// AzureGroup is a policy group name of one of Azure's built-in
// regulatory-compliance initiatives and the id of the framework whose
// initiative uses it.
type AzureGroup struct {
	Framework, Name string
}

// AzureGroups reads the frameworks package's testdata/azure_groups.txt,
// in its order.
func AzureGroups(tb testing.TB) []AzureGroup {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("frameworkstest: no source path to find the test data by")
	}
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "testdata", "azure_groups.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []AzureGroup
	for _, line := range strings.Split(string(raw), "\n") {
		if id, group, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
			out = append(out, AzureGroup{Framework: id, Name: group})
		}
	}
	return out
}

// AzureGroupNames is the names of AzureGroups.
func AzureGroupNames(tb testing.TB) []string {
	tb.Helper()
	groups := AzureGroups(tb)
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = g.Name
	}
	return names
}
