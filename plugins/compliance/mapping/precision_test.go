package mapping

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/compliance/frameworks"
)

// minPrecision is the share of keyword matches the labels must agree with in
// every built-in framework.
const minPrecision = 0.9

// labelled is one row of testdata/precision/<framework>.tsv: a real Azure
// policy and what the framework's regulatory-compliance initiative says
// about it.
type labelled struct {
	id, name string
	// controls and categories are those the initiative's group names name
	// (after the tier-1 normalisation); both empty for a policy outside the
	// initiative, which is labelled as mapping to no control.
	controls, categories map[string]bool
}

// readLabels reads a framework's labelled policies. Lines starting with #
// name the sources; the first other line is the header.
func readLabels(t *testing.T, fw *frameworks.Framework) []labelled {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "precision", fw.ID+".tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []labelled
	header := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		if !header {
			header = true
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 3 {
			t.Fatalf("%s: %q: want 3 columns", fw.ID, line)
		}
		row := labelled{id: cols[0], name: cols[1], controls: map[string]bool{}, categories: map[string]bool{}}
		for _, g := range strings.Split(cols[2], ";") {
			if g == "" {
				continue
			}
			if c, ok := fw.ControlForGroup(g); ok {
				row.controls[c.ID] = true
			} else if cat, ok := categoryForGroup(fw, g); ok {
				row.categories[cat] = true
			}
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// categoryForGroup returns the category a group name names, as the CSF
// initiative's NIST_CSF_v2.0_DE.CM does.
func categoryForGroup(fw *frameworks.Framework, group string) (string, bool) {
	key := frameworks.Normalize(group)
	for _, g := range fw.GroupNames {
		rest, ok := strings.CutPrefix(key, frameworks.Normalize(g.Prefix)+".")
		if !ok {
			continue
		}
		for _, c := range fw.Categories {
			if frameworks.Normalize(c.ID) == rest {
				return c.ID, true
			}
		}
	}
	return "", false
}

// TestKeywordPrecision measures the keyword tier against Azure's own
// regulatory-compliance initiatives. Every labelled policy is mapped by its
// name alone, without group names, through the shipped Rego and framework
// data; each keyword match is then checked against the label. A match
// agrees when the initiative groups the policy under that control or under
// the control's category; any other match, and any match of a policy
// outside the initiative, is a false positive. Precision is agreeing
// matches over all keyword matches. A framework without keyword sets maps
// by group names alone and has nothing to measure.
func TestKeywordPrecision(t *testing.T) {
	set, err := frameworks.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	m := newMapper(t, set)
	var measured []string
	for _, fw := range set.All() {
		if !hasKeywordSets(fw) {
			continue
		}
		measured = append(measured, fw.ID)
		t.Run(fw.ID, func(t *testing.T) {
			rows := readLabels(t, fw)
			if len(rows) < 200 {
				t.Fatalf("%d labelled policies, want at least 200", len(rows))
			}
			list := make([]Policy, len(rows))
			byID := make(map[string]labelled, len(rows))
			for i, r := range rows {
				list[i] = Policy{ID: r.id, Name: r.name}
				byID[r.id] = r
			}
			mapping, err := m.Map(context.Background(), list)
			if err != nil {
				t.Fatal(err)
			}
			var matches, agree int
			var wrong []string
			for _, c := range fw.Controls {
				for id, match := range mapping.Matches(fw.ID, c.ID) {
					if match.Tier != 2 {
						t.Fatalf("%s: tier %d for a policy without group names", id, match.Tier)
					}
					matches++
					r := byID[id]
					if r.controls[c.ID] || r.categories[c.Category] {
						agree++
						continue
					}
					wrong = append(wrong, fmt.Sprintf("%s %v: %s", c.ID, match.Keywords, r.name))
				}
			}
			if matches == 0 {
				t.Fatal("no keyword matches")
			}
			precision := float64(agree) / float64(matches)
			t.Logf("%s: precision %.3f (%d of %d keyword matches agree), %d policies", fw.ID, precision, agree, matches, len(rows))
			if precision < minPrecision {
				sort.Strings(wrong)
				t.Errorf("precision %.3f below %.2f; false positives:\n%s", precision, minPrecision, strings.Join(wrong, "\n"))
			}
		})
	}
	if want := []string{"cis_azure", "iso27001", "nist_csf", "soc2"}; !slices.Equal(measured, want) {
		t.Errorf("measured %v, want %v", measured, want)
	}
}

// hasKeywordSets reports whether any control of the framework has a keyword
// set or an override, that is whether tier 2 can map a policy to it.
func hasKeywordSets(fw *frameworks.Framework) bool {
	for _, c := range fw.Controls {
		if len(c.Keywords) > 0 || len(c.Overrides) > 0 {
			return true
		}
	}
	return false
}
