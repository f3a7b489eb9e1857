package frameworks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stewardhq/steward/plugins/compliance/frameworks/frameworkstest"
	"github.com/stewardhq/steward/plugins/compliance/policies"
)

func builtin(t *testing.T) *Set {
	t.Helper()
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func framework(t *testing.T, s *Set, id string) *Framework {
	t.Helper()
	f, ok := s.Get(id)
	if !ok {
		t.Fatalf("framework %q not loaded", id)
	}
	return f
}

// countBy counts controls by a function of the control.
func countBy(f *Framework, key func(Control) string) map[string]int {
	m := map[string]int{}
	for _, c := range f.Controls {
		m[key(c)]++
	}
	return m
}

func byCategory(c Control) string { return c.Category }

func TestBuiltinFrameworks(t *testing.T) {
	s := builtin(t)
	var ids []string
	for _, f := range s.All() {
		ids = append(ids, f.ID)
	}
	if want := []string{"cis_azure", "cis_azure_v3", "iso27001", "mcsb", "nis2", "nist_csf", "pci_dss", "soc2"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("frameworks = %v, want %v", ids, want)
	}
	// The frameworks whose keyword sets are measured against a labelled
	// set of policies (the policies README) have them; the others map by
	// group names alone.
	keywordTier := map[string]bool{"cis_azure": true, "iso27001": true, "nist_csf": true, "soc2": true}
	for _, f := range s.All() {
		sets := 0
		for _, c := range f.Controls {
			sets += len(c.Keywords)
		}
		if keywordTier[f.ID] && sets < len(f.Controls) {
			t.Errorf("%s has %d keyword sets for %d controls", f.ID, sets, len(f.Controls))
		}
		if !keywordTier[f.ID] && (sets > 0 || f.KeywordMatching != nil) {
			t.Errorf("%s has %d keyword sets without a measured precision", f.ID, sets)
		}
		if len(f.GroupNames) == 0 {
			t.Errorf("%s has no group-name prefix", f.ID)
		}
	}
}

// The 2017 Trust Services Criteria: CC1–CC9 hold 33 common criteria, and the
// availability, confidentiality, processing integrity and privacy series 28.
func TestSOC2Counts(t *testing.T) {
	f := framework(t, builtin(t), "soc2")
	want := map[string]int{
		"CC1": 5, "CC2": 3, "CC3": 4, "CC4": 2, "CC5": 3, "CC6": 8, "CC7": 5, "CC8": 1, "CC9": 2,
		"A1": 3, "C1": 2, "PI1": 5,
		"P1": 1, "P2": 1, "P3": 2, "P4": 3, "P5": 2, "P6": 7, "P7": 1, "P8": 1,
	}
	if len(f.Controls) != 61 {
		t.Errorf("controls = %d, want 61", len(f.Controls))
	}
	if len(f.Categories) != len(want) {
		t.Errorf("categories = %d, want %d", len(f.Categories), len(want))
	}
	if got := countBy(f, byCategory); !reflect.DeepEqual(got, want) {
		t.Errorf("controls per series = %v, want %v", got, want)
	}
	// Criteria are numbered 1..n within each series.
	for series, n := range want {
		for i := 1; i <= n; i++ {
			if _, ok := f.Control(fmt.Sprintf("%s.%d", series, i)); !ok {
				t.Errorf("missing %s.%d", series, i)
			}
		}
	}
}

// CSF 2.0 numbers subcategories with gaps where 1.1 outcomes were withdrawn
// or moved, so the ids are listed in full.
func TestNISTCSFCounts(t *testing.T) {
	f := framework(t, builtin(t), "nist_csf")
	ids := map[string]string{
		"GV.OC": "01 02 03 04 05", "GV.RM": "01 02 03 04 05 06 07", "GV.RR": "01 02 03 04",
		"GV.PO": "01 02", "GV.OV": "01 02 03", "GV.SC": "01 02 03 04 05 06 07 08 09 10",
		"ID.AM": "01 02 03 04 05 07 08", "ID.RA": "01 02 03 04 05 06 07 08 09 10", "ID.IM": "01 02 03 04",
		"PR.AA": "01 02 03 04 05 06", "PR.AT": "01 02", "PR.DS": "01 02 10 11",
		"PR.PS": "01 02 03 04 05 06", "PR.IR": "01 02 03 04",
		"DE.CM": "01 02 03 06 09", "DE.AE": "02 03 04 06 07 08",
		"RS.MA": "01 02 03 04 05", "RS.AN": "03 06 07 08", "RS.CO": "02 03", "RS.MI": "01 02",
		"RC.RP": "01 02 03 04 05 06", "RC.CO": "03 04",
	}
	var want []string
	for _, c := range f.Categories {
		for _, n := range strings.Fields(ids[c.ID]) {
			want = append(want, c.ID+"-"+n)
		}
	}
	var got []string
	for _, c := range f.Controls {
		got = append(got, c.ID)
	}
	if len(f.Domains) != 6 || len(f.Categories) != 22 || len(f.Controls) != 106 {
		t.Errorf("functions/categories/subcategories = %d/%d/%d, want 6/22/106",
			len(f.Domains), len(f.Categories), len(f.Controls))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("subcategory ids = %v\nwant %v", got, want)
	}
	perFunction := countBy(f, func(c Control) string { return c.Category[:2] })
	if w := map[string]int{"GV": 31, "ID": 21, "PR": 22, "DE": 11, "RS": 13, "RC": 8}; !reflect.DeepEqual(perFunction, w) {
		t.Errorf("subcategories per function = %v, want %v", perFunction, w)
	}
	for _, c := range f.Categories {
		if !strings.HasPrefix(c.ID, c.Domain+".") {
			t.Errorf("category %s is in function %s", c.ID, c.Domain)
		}
	}
}

// ISO/IEC 27001:2022 Annex A: 93 controls, numbered without gaps per theme.
func TestISO27001Counts(t *testing.T) {
	f := framework(t, builtin(t), "iso27001")
	want := map[string]int{"5": 37, "6": 8, "7": 14, "8": 34}
	if len(f.Controls) != 93 {
		t.Errorf("controls = %d, want 93", len(f.Controls))
	}
	if got := countBy(f, byCategory); !reflect.DeepEqual(got, want) {
		t.Errorf("controls per theme = %v, want %v", got, want)
	}
	i := 0
	for _, theme := range []string{"5", "6", "7", "8"} {
		for n := 1; n <= want[theme]; n++ {
			if id := fmt.Sprintf("%s.%d", theme, n); i >= len(f.Controls) || f.Controls[i].ID != id {
				t.Fatalf("control %d is not %s", i, id)
			}
			i++
		}
	}
}

// CIS Microsoft Azure Foundations Benchmark v2.0.0: 151 recommendations in
// ten sections.
func TestCISAzureCounts(t *testing.T) {
	f := framework(t, builtin(t), "cis_azure")
	if f.Version != "2.0.0" {
		t.Errorf("version = %q, want 2.0.0", f.Version)
	}
	want := map[string]int{"1": 33, "2": 23, "3": 15, "4": 26, "5": 20, "6": 7, "7": 7, "8": 8, "9": 11, "10": 1}
	if len(f.Controls) != 151 {
		t.Errorf("controls = %d, want 151", len(f.Controls))
	}
	if got := countBy(f, byCategory); !reflect.DeepEqual(got, want) {
		t.Errorf("recommendations per section = %v, want %v", got, want)
	}
	for _, c := range f.Controls {
		if !strings.HasPrefix(c.ID, c.Category+".") {
			t.Errorf("recommendation %s is in section %s", c.ID, c.Category)
		}
	}
}

// CIS Microsoft Azure Foundations Benchmark v3.0.0: 159 recommendations in
// nine sections numbered from 2, some nested four deep (3.1.3.1), with
// gaps where the benchmark has headings without recommendations (3.1.2).
func TestCISAzureV3Counts(t *testing.T) {
	f := framework(t, builtin(t), "cis_azure_v3")
	if f.Version != "3.0.0" || len(f.Controls) != 159 || len(f.Categories) != 9 {
		t.Errorf("version/recommendations/sections = %q/%d/%d, want 3.0.0/159/9", f.Version, len(f.Controls), len(f.Categories))
	}
	want := map[string]int{"2": 36, "3": 34, "4": 17, "5": 22, "6": 19, "7": 7, "8": 11, "9": 12, "10": 1}
	if got := countBy(f, byCategory); !reflect.DeepEqual(got, want) {
		t.Errorf("recommendations per section = %v, want %v", got, want)
	}
	for _, c := range f.Controls {
		if !strings.HasPrefix(c.ID, c.Category+".") {
			t.Errorf("recommendation %s is in section %s", c.ID, c.Category)
		}
	}
	for id, name := range map[string]string{
		"2.1.1":   "Ensure Security Defaults is enabled on Microsoft Entra ID",
		"3.1.3.1": "Ensure That Microsoft Defender for Servers Is Set to 'On'",
		"4.1":     "Ensure that 'Secure transfer required' is set to 'Enabled'",
		"10.1":    "Ensure that Resource Locks are set for Mission-Critical Azure Resources",
	} {
		if c, ok := f.Control(id); !ok || c.Name != name {
			t.Errorf("recommendation %s: %+v", id, c)
		}
	}
	if _, ok := f.Control("3.1.2"); ok {
		t.Error("3.1.2 is a heading, not a recommendation")
	}
}

// Microsoft cloud security benchmark v1: 85 controls in 12 domains,
// numbered without gaps.
func TestMCSBCounts(t *testing.T) {
	f := framework(t, builtin(t), "mcsb")
	want := map[string]int{"NS": 10, "IM": 9, "PA": 8, "DP": 8, "AM": 5, "LT": 7, "IR": 7, "PV": 7, "ES": 3, "BR": 4, "DS": 7, "GS": 10}
	if f.Version != "1.0" || len(f.Controls) != 85 || len(f.Categories) != 12 {
		t.Errorf("version/controls/domains = %q/%d/%d, want 1.0/85/12", f.Version, len(f.Controls), len(f.Categories))
	}
	if got := countBy(f, byCategory); !reflect.DeepEqual(got, want) {
		t.Errorf("controls per domain = %v, want %v", got, want)
	}
	i := 0
	for _, c := range f.Categories {
		for n := 1; n <= want[c.ID]; n++ {
			if id := fmt.Sprintf("%s-%d", c.ID, n); i >= len(f.Controls) || f.Controls[i].ID != id {
				t.Fatalf("control %d is not %s", i, id)
			}
			i++
		}
	}
	if c, _ := f.Control("NS-1"); c.Name != "Establish network segmentation boundaries" {
		t.Errorf("NS-1 is %q", c.Name)
	}
}

// PCI DSS v4.0: the 250 requirements of the 12 principal requirements in 63
// sections (the appendices are not included); a requirement's section is
// its first two numbers and its principal requirement the first.
func TestPCIDSSCounts(t *testing.T) {
	f := framework(t, builtin(t), "pci_dss")
	if f.Version != "4.0" || len(f.Domains) != 12 || len(f.Categories) != 63 || len(f.Controls) != 250 {
		t.Errorf("version/requirements/sections/controls = %q/%d/%d/%d, want 4.0/12/63/250",
			f.Version, len(f.Domains), len(f.Categories), len(f.Controls))
	}
	perRequirement := countBy(f, func(c Control) string { return strings.Split(c.ID, ".")[0] })
	want := map[string]int{"1": 19, "2": 11, "3": 29, "4": 6, "5": 13, "6": 19, "7": 12, "8": 29, "9": 27, "10": 27, "11": 21, "12": 37}
	if !reflect.DeepEqual(perRequirement, want) {
		t.Errorf("requirements per principal requirement = %v, want %v", perRequirement, want)
	}
	sections := map[string]string{}
	for _, c := range f.Categories {
		sections[c.ID] = c.Domain
	}
	for _, c := range f.Controls {
		parts := strings.Split(c.ID, ".")
		if len(parts) < 3 || c.Category != parts[0]+"."+parts[1] || sections[c.Category] != parts[0] {
			t.Errorf("requirement %s is in section %s of %s", c.ID, c.Category, sections[c.Category])
		}
	}
	for _, id := range []string{"1.2.1", "3.5.1.1", "8.4.2", "9.4.1.2", "9.5.1.2.1", "12.10.7"} {
		if _, ok := f.Control(id); !ok {
			t.Errorf("missing requirement %s", id)
		}
	}
}

// NIS2: the articles of Directive (EU) 2022/2555 that Azure's initiative
// files policies under, and Article 20, in three chapters.
func TestNIS2Counts(t *testing.T) {
	f := framework(t, builtin(t), "nis2")
	var ids []string
	for _, c := range f.Controls {
		ids = append(ids, c.ID)
	}
	if want := []string{"7", "9", "10", "11", "12", "13", "20", "21", "23", "29"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("articles = %v, want %v", ids, want)
	}
	if got, want := countBy(f, byCategory), map[string]int{"II": 6, "IV": 3, "VI": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("articles per chapter = %v, want %v", got, want)
	}
	if c, _ := f.Control("21"); c.Name != "Cybersecurity risk-management measures" {
		t.Errorf("article 21 is %q", c.Name)
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"PR.AA-01":                "PR.AA.01",
		"PR.AA_01":                "PR.AA.01",
		"PR_AA_01":                "PR.AA.01",
		"pr.aa-01":                "PR.AA.01",
		"CC6.1":                   "CC6.1",
		"SOC_2_CC6.1":             "SOC.2.CC6.1",
		"NIST_CSF_v2.0_PR.AA_01":  "NIST.CSF.V2.0.PR.AA.01",
		"  --CIS_Azure_2.0.0_3.1": "CIS.AZURE.2.0.0.3.1",
		"._-":                     "",
		"":                        "",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWords(t *testing.T) {
	got := Words("Accounts with owner permissions on Azure resources should be MFA-enabled (Preview)")
	want := []string{"accounts", "with", "owner", "permissions", "on", "azure", "resources", "should", "be", "mfa", "enabled", "preview"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Words = %v, want %v", got, want)
	}
}

func TestControlForGroup(t *testing.T) {
	s := builtin(t)
	for _, tc := range []struct {
		framework, group, want string
	}{
		{"soc2", "SOC_2_CC6.1", "CC6.1"},
		{"soc2", "soc_2_cc6_1", "CC6.1"},
		{"soc2", "SOC_2_PI1.5", "PI1.5"},
		{"nist_csf", "NIST_CSF_v2.0_PR.AA_01", "PR.AA-01"},
		{"nist_csf", "NIST_CSF_v2.0_PR_AA_01", "PR.AA-01"},
		{"nist_csf", "NIST_CSF_v2.0_DE.CM_09", "DE.CM-09"},
		{"iso27001", "ISO_IEC_27002_2022_8.24", "8.24"},
		{"iso27001", "ISO_IEC_27002_2022_5.1", "5.1"},
		{"cis_azure", "CIS_Azure_2.0.0_3.1", "3.1"},
		{"cis_azure", "CIS_Azure_2.0.0_2.1.10", "2.1.10"},
		{"cis_azure_v3", "CIS_Azure_Foundations_v3.0.0_4.1", "4.1"},
		{"cis_azure_v3", "CIS_Azure_Foundations_v3.0.0_3.1.7.2", "3.1.7.2"},
		{"mcsb", "Azure_Security_Benchmark_v3.0_NS-2", "NS-2"},
		{"mcsb", "Azure_Security_Benchmark_v3.0_GS-10", "GS-10"},
		{"pci_dss", "PCI_DSS_v4.0_1.2.1", "1.2.1"},
		{"pci_dss", "PCI_DSS_v4.0_8.3.10.1", "8.3.10.1"},
		// v4.0.1 keeps the numbering; its prefix extends the v4.0 one, so
		// the group is also read as v4.0 requirement 1.3.5.1.1, which does
		// not exist.
		{"pci_dss", "PCI_DSS_v4.0.1_3.5.1.1", "3.5.1.1"},
		{"pci_dss", "PCI_DSS_v4.0.1_1.2.1", "1.2.1"},
		{"nis2", "EU_2555_(NIS2)_2022_21", "21"},
		{"nis2", "EU_2555_NIS2_2022_23", "23"},
		// A category-level group, a control the framework lacks, another
		// version's prefix and the ISO 27001 clause groups map to nothing.
		{"nist_csf", "NIST_CSF_v2.0_PR.AA", ""},
		{"nist_csf", "NIST_CSF_v2.0_ID.AM_06", ""},
		{"cis_azure", "CIS_Azure_Foundations_v3.0.0_3.1.1", ""},
		{"cis_azure", "CIS_Azure_Foundations_v2.1.0_3.1", ""},
		{"cis_azure_v3", "CIS_Azure_2.0.0_3.1", ""},
		{"cis_azure_v3", "CIS_Azure_Foundations_v3.0.0_3.1.7", ""},
		{"mcsb", "Azure_Security_Benchmark_v3.0_NS", ""},
		{"mcsb", "Azure_Security_Benchmark_v3.0_NS-11", ""},
		{"pci_dss", "PCI_DSS_v4.0_1.2", ""},
		{"pci_dss", "PCI_DSS_v3.2.1_1.2.1", ""},
		{"nis2", "NIS2_IR._Incident_Response_2", ""},
		{"nis2", "EU_2555_(NIS2)_2022_8", ""},
		{"iso27001", "ISO_IEC_27001_2022_8.1", ""},
		{"soc2", "SOC_2023_1", ""},
		{"soc2", "CC6.1", ""},
		{"soc2", "", ""},
	} {
		c, ok := framework(t, s, tc.framework).ControlForGroup(tc.group)
		got := ""
		if ok {
			got = c.ID
		}
		if got != tc.want {
			t.Errorf("%s: ControlForGroup(%q) = %q, want %q", tc.framework, tc.group, got, tc.want)
		}
	}
}

// The files are already canonical: what OPA reads from them is what the
// loader hands over as data, and the hash does not depend on formatting.
func TestDataMatchesFiles(t *testing.T) {
	s := builtin(t)
	data := s.Data()
	names, err := fs.Glob(policies.FS, "frameworks/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != len(data) {
		t.Fatalf("%d files, %d frameworks", len(names), len(data))
	}
	for _, name := range names {
		raw, err := fs.ReadFile(policies.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		var fromFile, fromData any
		if err := json.Unmarshal(raw, &fromFile); err != nil {
			t.Fatal(err)
		}
		id := strings.TrimSuffix(filepath.Base(name), ".json")
		encoded, err := json.Marshal(map[string]any{id: data[id]})
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(encoded, &fromData); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromFile, fromData) {
			t.Errorf("%s: loaded data differs from the file", name)
		}

		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			t.Fatal(err)
		}
		again, err := Load(fstest.MapFS{id + ".json": {Data: compact.Bytes()}})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := framework(t, again, id).Hash(), data[id].Hash(); got != want {
			t.Errorf("%s: hash %s after reformatting, want %s", name, got, want)
		}
	}
}

// minimal is a valid definition that the error cases change one thing in.
const minimal = `{"acme": {
  "id": "acme", "name": "Acme controls", "version": "1", "description": "Controls of Acme.", "source": "Acme handbook",
  "group_names": [{"prefix": "ACME_", "example": "ACME_AC-1", "initiative": "Acme baseline"}],
  "categories": [{"id": "AC", "name": "Access"}],
  "controls": [
    {"id": "AC-1", "name": "MFA", "description": "Users sign in with MFA.", "category": "AC", "keywords": [["multi", "factor"], ["mfa"]]},
    {"id": "AC-2", "name": "Keys", "description": "Keys expire.", "category": "AC", "keywords": [["key", "expiration"]]}
  ]
}}`

func mutate(t *testing.T, old, new string) string {
	t.Helper()
	if !strings.Contains(minimal, old) {
		t.Fatalf("%q is not in the minimal definition", old)
	}
	return strings.Replace(minimal, old, new, 1)
}

func TestLoadMinimal(t *testing.T) {
	s, err := Load(fstest.MapFS{"acme.json": {Data: []byte(minimal)}, "README.md": {Data: []byte("not JSON")}})
	if err != nil {
		t.Fatal(err)
	}
	f := framework(t, s, "acme")
	if f.File() != "acme.json" || len(f.Controls) != 2 || len(f.Hash()) != 64 || len(s.Hash()) != 64 {
		t.Errorf("unexpected framework %+v, set hash %q", f, s.Hash())
	}
	if _, ok := s.Get("soc2"); ok {
		t.Error("Get found a framework that was not loaded")
	}
	if c, ok := f.ControlForGroup("ACME_AC_2"); !ok || c.ID != "AC-2" {
		t.Errorf("ControlForGroup(ACME_AC_2) = %v, %v", c, ok)
	}
}

// The keyword-tier tuning fields load, and a control may leave the keyword
// tier to group names with an empty list.
func TestLoadTuning(t *testing.T) {
	data := mutate(t, `"categories": [`, `"keyword_matching": {"stop_words": ["of", "the"], "min_score": 3}, "categories": [`)
	data = strings.Replace(data, `"keywords": [["key", "expiration"]]`, `"keywords": [], "negative_keywords": [["mfa"]], "overrides": [{"policy": "Keys should expire", "match": true, "reason": "Expiry is the control."}]`, 1)
	s, err := Load(fstest.MapFS{"acme.json": {Data: []byte(data)}})
	if err != nil {
		t.Fatal(err)
	}
	f := framework(t, s, "acme")
	c, _ := f.Control("AC-2")
	if f.KeywordMatching.MinScore != 3 || len(f.KeywordMatching.StopWords) != 2 || len(c.Keywords) != 0 || len(c.NegativeKeywords) != 1 || len(c.Overrides) != 1 {
		t.Errorf("tuning fields not loaded: %+v, %+v", f.KeywordMatching, c)
	}
	if sets, added := f.KeywordSets(c, "KEYS should expire!"); sets != nil || !added {
		t.Errorf("override by words: %v, %v", sets, added)
	}
}

func TestLoadRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, file, data, want string
	}{
		{"invalid JSON", "acme.json", `{"acme": {`, "acme.json: invalid JSON"},
		{"not UTF-8", "acme.json", "{\"acme\": \"\xff\"}", "acme.json: file is not valid UTF-8"},
		{"two frameworks in one file", "acme.json", `{"acme": {}, "other": {}}`, "want one top-level key, the framework id, found 2"},
		{"not an object", "acme.json", `[]`, "acme.json: invalid JSON"},
		{"key differs from file name", "other.json", minimal, `other.json: top-level key "acme" differs from the file name "other.json"`},
		{"bad framework id", "Acme.json", strings.ReplaceAll(minimal, `"acme"`, `"Acme"`), `Acme.json: top-level key "Acme" is not a framework id`},
		{"inner id differs", "acme.json", mutate(t, `"id": "acme"`, `"id": "acme2"`), `acme.json: id: "acme2" differs from the top-level key "acme"`},
		{"unknown top field", "acme.json", mutate(t, `"version": "1",`, `"version": "1", "owner": "x",`), `acme.json: owner: unknown field`},
		{"unknown control field", "acme.json", mutate(t, `"category": "AC", "keywords": [["key"`, `"category": "AC", "weight": 2, "keywords": [["key"`), `acme.json: controls[1].weight: unknown field`},
		{"field name in another case", "acme.json", mutate(t, `"version": "1",`, `"Version": "1",`), `acme.json: Version: unknown field; write "version"`},
		{"duplicate key", "acme.json", mutate(t, `"version": "1",`, `"version": "1", "version": "2",`), `acme.json: version: duplicate key`},
		{"duplicate key in a control", "acme.json", mutate(t, `"name": "Keys",`, `"name": "Keys", "name": "Keys",`), "acme.json: controls[1].name: duplicate key"},
		{"duplicate key in a group name", "acme.json", mutate(t, `"initiative": "Acme baseline"`, `"initiative": "Acme baseline", "prefix": "X_"`), "acme.json: group_names[0].prefix: duplicate key"},
		{"framework twice", "acme.json", `{"acme": {}, "acme": {}}`, `acme.json: duplicate top-level key "acme"`},
		{"trailing data", "acme.json", minimal + `{}`, "acme.json: invalid JSON"},
		{"missing name", "acme.json", mutate(t, `"name": "Acme controls"`, `"name": " "`), "acme.json: name: required"},
		{"line break in description", "acme.json", mutate(t, `Users sign in with MFA.`, `Users sign in\nwith MFA.`), "acme.json: controls[0].description: leading or trailing space or a line break"},
		{"control id format", "acme.json", mutate(t, `"id": "AC-2"`, `"id": "AC 2"`), `acme.json: controls[1].id: "AC 2" is not an id`},
		{"duplicate control id", "acme.json", mutate(t, `"id": "AC-2"`, `"id": "AC_1"`), `acme.json: controls[1].id: "AC_1" duplicates controls[0].id ("AC-1")`},
		{"control id equals category id", "acme.json", mutate(t, `"id": "AC-2"`, `"id": "AC"`), `controls[1].id: "AC" duplicates categories[0].id`},
		{"unknown category", "acme.json", mutate(t, `"category": "AC", "keywords": [["key"`, `"category": "AX", "keywords": [["key"`), `acme.json: controls[1].category: unknown category "AX"`},
		{"empty category", "acme.json", mutate(t, `{"id": "AC", "name": "Access"}`, `{"id": "AC", "name": "Access"}, {"id": "AU", "name": "Audit"}`), `acme.json: categories[1]: category "AU" has no controls`},
		{"no categories", "acme.json", mutate(t, `[{"id": "AC", "name": "Access"}]`, `[]`), "acme.json: categories: at least one category is required"},
		{"no controls", "acme.json", `{"acme": {"id": "acme", "name": "A", "version": "1", "description": "D.", "source": "S", "group_names": [], "categories": [{"id": "AC", "name": "Access"}], "controls": []}}`, "acme.json: controls: at least one control is required"},
		{"domain on a framework without domains", "acme.json", mutate(t, `"name": "Access"}`, `"name": "Access", "domain": "X"}`), "acme.json: categories[0].domain: the framework has no domains"},
		{"unknown domain", "acme.json", mutate(t, `"categories": [{"id": "AC", "name": "Access"}]`, `"domains": [{"id": "PR", "name": "Protect"}], "categories": [{"id": "AC", "name": "Access", "domain": "XX"}]`), `acme.json: categories[0].domain: unknown domain "XX"`},
		{"keywords missing", "acme.json", mutate(t, `, "keywords": [["key", "expiration"]]`, ``), "acme.json: controls[1].keywords: required; write [] for a control that only group names map"},
		{"generic negative set", "acme.json", mutate(t, `"keywords": [["key", "expiration"]]`, `"keywords": [["key", "expiration"]], "negative_keywords": [["azure"]]`), `acme.json: controls[1].negative_keywords[0]: ["azure"] matches nearly every policy name`},
		{"negative word not canonical", "acme.json", mutate(t, `"keywords": [["key", "expiration"]]`, `"keywords": [["key", "expiration"]], "negative_keywords": [["Multi-Factor"]]`), `acme.json: controls[1].negative_keywords[0][0]: "Multi-Factor" is not one canonical word; write "multi", "factor"`},
		{"empty negative keywords", "acme.json", mutate(t, `"keywords": [["key", "expiration"]]`, `"keywords": [["key", "expiration"]], "negative_keywords": []`), `acme.json: controls[1].negative_keywords: at least one keyword set is required when present`},
		{"override without reason", "acme.json", mutate(t, `"keywords": [["key", "expiration"]]`, `"keywords": [["key", "expiration"]], "overrides": [{"policy": "Keys should expire", "match": false}]`), `acme.json: controls[1].overrides[0].reason: required`},
		{"override without policy", "acme.json", mutate(t, `"keywords": [["key", "expiration"]]`, `"keywords": [["key", "expiration"]], "overrides": [{"policy": " ", "match": false, "reason": "R."}]`), `acme.json: controls[1].overrides[0].policy: required`},
		{"override naming a policy twice", "acme.json", mutate(t, `"keywords": [["key", "expiration"]]`, `"keywords": [["key", "expiration"]], "overrides": [{"policy": "Keys should expire", "match": false, "reason": "R."}, {"policy": "keys should EXPIRE.", "match": true, "reason": "R."}]`), `acme.json: controls[1].overrides[1].policy: names the same policy as controls[1].overrides[0]`},
		{"unknown override field", "acme.json", mutate(t, `"keywords": [["key", "expiration"]]`, `"keywords": [["key", "expiration"]], "overrides": [{"policy": "Keys should expire", "match": false, "reason": "R.", "weight": 1}]`), `acme.json: controls[1].overrides[0].weight: unknown field`},
		{"minimum score too high", "acme.json", mutate(t, `"categories": [`, `"keyword_matching": {"min_score": 7}, "categories": [`), `acme.json: keyword_matching.min_score: 7 is not between 1 and 4`},
		{"stop word not canonical", "acme.json", mutate(t, `"categories": [`, `"keyword_matching": {"stop_words": ["Of"]}, "categories": [`), `acme.json: keyword_matching.stop_words[0]: "Of" is not one canonical word`},
		{"stop word twice", "acme.json", mutate(t, `"categories": [`, `"keyword_matching": {"stop_words": ["of", "of"]}, "categories": [`), `acme.json: keyword_matching.stop_words[1]: "of" appears twice`},
		{"empty keyword set", "acme.json", mutate(t, `[["multi", "factor"], ["mfa"]]`, `[["multi", "factor"], []]`), "acme.json: controls[0].keywords[1]: empty keyword set"},
		{"word normalising to nothing", "acme.json", mutate(t, `["mfa"]`, `["mfa", "--"]`), `acme.json: controls[0].keywords[1][1]: "--" normalises to nothing`},
		{"empty word", "acme.json", mutate(t, `["mfa"]`, `[""]`), `acme.json: controls[0].keywords[1][0]: "" normalises to nothing`},
		{"word not canonical", "acme.json", mutate(t, `["multi", "factor"]`, `["Multi-Factor"]`), `acme.json: controls[0].keywords[0][0]: "Multi-Factor" is not one canonical word; write "multi", "factor"`},
		{"upper-case word", "acme.json", mutate(t, `["mfa"]`, `["MFA"]`), `controls[0].keywords[1][0]: "MFA" is not one canonical word; write "mfa"`},
		{"short word", "acme.json", mutate(t, `["mfa"]`, `["mfa", "x"]`), `controls[0].keywords[1][1]: "x" is shorter than 2 characters`},
		{"generic single word", "acme.json", mutate(t, `["mfa"]`, `["azure"]`), `acme.json: controls[0].keywords[1]: ["azure"] matches nearly every policy name`},
		{"generic words only", "acme.json", mutate(t, `["mfa"]`, `["should", "enable"]`), `controls[0].keywords[1]: ["should" "enable"] matches nearly every policy name`},
		{"repeated word", "acme.json", mutate(t, `["mfa"]`, `["mfa", "mfa"]`), "controls[0].keywords[1]: a word appears twice"},
		{"repeated set", "acme.json", mutate(t, `["mfa"]`, `["factor", "multi"]`), "acme.json: controls[0].keywords[1]: same words as controls[0].keywords[0]"},
		{"group example names no control", "acme.json", mutate(t, `"ACME_AC-1"`, `"ACME_AC-9"`), `acme.json: group_names[0].example: "ACME_AC-9" names no control of the framework`},
		{"group example without prefix", "acme.json", mutate(t, `"ACME_AC-1"`, `"OTHER_AC-1"`), `group_names[0].example: "OTHER_AC-1" does not start with the prefix "ACME_"`},
		{"bad prefix", "acme.json", mutate(t, `"prefix": "ACME_"`, `"prefix": "ACME__$"`), `acme.json: group_names[0].prefix: "ACME__$" is not a group-name prefix`},
		{"duplicate prefix", "acme.json", mutate(t, `"initiative": "Acme baseline"}`, `"initiative": "Acme baseline"}, {"prefix": "acme-", "example": "acme-AC-1", "initiative": "Other"}`), `group_names[1].prefix: "acme-" duplicates group_names[0]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Load(fstest.MapFS{tc.file: {Data: []byte(tc.data)}})
			if err == nil {
				t.Fatalf("loaded %v", s.All())
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\ndoes not contain %q", err, tc.want)
			}
			var ferr *Error
			if !errors.As(err, &ferr) || ferr.File != tc.file {
				t.Errorf("error %v does not name the file %s", err, tc.file)
			}
		})
	}
}

// All problems of all files are reported at once, and a bad file fails the
// whole load instead of being skipped.
func TestLoadReportsEveryProblem(t *testing.T) {
	bad := mutate(t, `"category": "AC", "keywords": [["key", "expiration"]]`, `"category": "AX", "keywords": [[]]`)
	_, err := Load(fstest.MapFS{
		"acme.json":  {Data: []byte(bad)},
		"other.json": {Data: []byte(`{`)},
		"good.json":  {Data: []byte(strings.ReplaceAll(minimal, `"acme"`, `"good"`))},
	})
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{
		`acme.json: controls[1].category: unknown category "AX"`,
		"acme.json: controls[1].keywords[0]: empty keyword set",
		"other.json: invalid JSON",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\ndoes not contain %q", err, want)
		}
	}
}

func TestLoadRefusesLargeFile(t *testing.T) {
	big := mutate(t, `"Controls of Acme."`, `"Controls of Acme.`+strings.Repeat(" ", maxFileSize)+`"`)
	_, err := Load(fstest.MapFS{"acme.json": {Data: []byte(big)}})
	if err == nil || !strings.Contains(err.Error(), "acme.json: file is larger than") {
		t.Fatalf("error = %v", err)
	}
}

func writeFile(t *testing.T, dir, name, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestWithDirAddsFrameworks(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "acme.json", minimal)
	writeFile(t, dir, "README.md", "# notes")
	if err := os.Mkdir(filepath.Join(dir, "old"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "old"), "broken.json", "{")

	s, err := WithDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.All()) != 9 {
		t.Fatalf("frameworks = %d, want the 8 built-ins and acme", len(s.All()))
	}
	f := framework(t, s, "acme")
	if want := filepath.Join(dir, "acme.json"); f.File() != want {
		t.Errorf("File = %q, want %q", f.File(), want)
	}
	if framework(t, s, "soc2").File() != "builtin:soc2.json" {
		t.Errorf("soc2 File = %q", framework(t, s, "soc2").File())
	}
	if s.Hash() == builtin(t).Hash() {
		t.Error("the set hash ignores the added framework")
	}

	// Changing a keyword set changes both hashes.
	writeFile(t, dir, "acme.json", mutate(t, `["mfa"]`, `["mfa", "required"]`))
	changed, err := WithDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if changed.Hash() == s.Hash() || framework(t, changed, "acme").Hash() == f.Hash() {
		t.Error("hash unchanged after a keyword edit")
	}
	if framework(t, changed, "soc2").Hash() != framework(t, s, "soc2").Hash() {
		t.Error("soc2 hash changed with another framework")
	}

	plain, err := WithDir("")
	if err != nil {
		t.Fatal(err)
	}
	if plain.Hash() != builtin(t).Hash() {
		t.Error("WithDir(\"\") differs from Builtin")
	}
}

// A deployment file cannot replace a built-in framework.
func TestWithDirRefusesBuiltinID(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "soc2.json", strings.ReplaceAll(minimal, `"acme"`, `"soc2"`))
	_, err := WithDir(dir)
	if err == nil {
		t.Fatal("a deployment file replaced the built-in soc2")
	}
	want := filepath.Join(dir, "soc2.json") + `: id: framework "soc2" is already defined by builtin:soc2.json; use another id`
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

func TestWithDirErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := WithDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing folder was accepted")
	}
	writeFile(t, dir, "file.json", minimal)
	if _, err := LoadDir(filepath.Join(dir, "file.json")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("LoadDir on a file: %v", err)
	}
	writeFile(t, dir, "bad.json", mutate(t, `["mfa"]`, `[]`))
	_, err := WithDir(dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "bad.json")+": controls[0].keywords[1]: empty keyword set") {
		t.Errorf("error %v does not name the deployment file and field", err)
	}
}

// Every group name that Azure's initiatives use names a control of the
// framework, or one of its categories or a heading above its controls (CIS
// v3.0.0's 3.1.7), which tier 1 does not map, and
// through one prefix only: PCI DSS's v4.0.1 prefix extends its v4.0 one, so
// PCI_DSS_v4.0.1_3.6.1.1 would map twice if 1.3.6.1.1 were a requirement.
func TestAzureGroupNames(t *testing.T) {
	s := builtin(t)
	mapped := map[string]int{}
	for _, g := range frameworkstest.AzureGroups(t) {
		id, group := g.Framework, g.Name
		f := framework(t, s, id)
		if n := prefixesNaming(f, group); n > 1 {
			t.Errorf("%s: group %s names a control through %d prefixes", id, group, n)
		}
		if _, ok := f.ControlForGroup(group); ok {
			mapped[id]++
			continue
		}
		if !namesHeading(f, group) {
			t.Errorf("%s: group %s names neither a control nor a category or heading", id, group)
		}
	}
	want := map[string]int{"soc2": 61, "nist_csf": 19, "iso27001": 23, "cis_azure": 85, "cis_azure_v3": 50, "mcsb": 85, "pci_dss": 249 + 85, "nis2": 9}
	if !reflect.DeepEqual(mapped, want) {
		t.Errorf("group names mapped to controls = %v, want %v", mapped, want)
	}
}

// prefixesNaming counts the framework's prefixes under which the group
// names a control.
func prefixesNaming(f *Framework, group string) int {
	n := 0
	for _, g := range f.GroupNames {
		if rest, ok := strings.CutPrefix(Normalize(group), Normalize(g.Prefix)+"."); ok {
			if _, ok := f.Control(rest); ok {
				n++
			}
		}
	}
	return n
}

// namesHeading reports whether the group is one of the framework's prefixes
// followed by a category id or by the leading numbers of a control id.
func namesHeading(f *Framework, group string) bool {
	for _, g := range f.GroupNames {
		rest, ok := strings.CutPrefix(Normalize(group), Normalize(g.Prefix)+".")
		if !ok {
			continue
		}
		for _, c := range f.Categories {
			if Normalize(c.ID) == rest {
				return true
			}
		}
		for _, c := range f.Controls {
			if strings.HasPrefix(Normalize(c.ID), rest+".") {
				return true
			}
		}
	}
	return false
}

// Real built-in policy names reach, through the keyword sets, the controls
// Azure's initiatives file them under (the sets are tuned against those, so
// a control the name is about but Azure files elsewhere is not reached), and
// a policy about something else reaches none of them.
func TestKeywordExamples(t *testing.T) {
	s := builtin(t)
	for _, tc := range []struct {
		policy string
		want   map[string][]string
	}{
		{"Accounts with owner permissions on Azure resources should be MFA enabled", map[string][]string{
			"soc2": {"CC6.1", "CC6.3"}, "iso27001": {"5.18", "8.2", "8.5"},
			"cis_azure": {"1.1.2"}}},
		{"Secure transfer to storage accounts should be enabled", map[string][]string{
			"soc2": {"CC6.7"}, "nist_csf": {"PR.DS-02"}, "cis_azure": {"3.1"}}},
		{"Key Vault secrets should have an expiration date", map[string][]string{
			"cis_azure": {"8.3", "8.4"}}},
		{"Azure Backup should be enabled for Virtual Machines", map[string][]string{
			"soc2": {"A1.2"}}},
		{"Network Watcher should be enabled", map[string][]string{
			"nist_csf": {"ID.AM-03", "DE.CM-01"}, "iso27001": {"8.16"}, "cis_azure": {"6.6"}}},
		{"Allowed virtual machine size SKUs", map[string][]string{}},
	} {
		for _, f := range s.All() {
			var got []string
			for i := range f.Controls {
				if sets, added := f.KeywordSets(&f.Controls[i], tc.policy); added || len(sets) > 0 {
					got = append(got, f.Controls[i].ID)
				}
			}
			if want := tc.want[f.ID]; !reflect.DeepEqual(got, want) {
				t.Errorf("%q in %s matches %v, want %v", tc.policy, f.ID, got, want)
			}
		}
	}
}

// Letters and numbers of any script count, as \pL and \pN do in Rego.
func TestWordsUnicode(t *testing.T) {
	if got, want := Words("Verschlüsselung²—Ⅻ_test"), []string{"verschlüsselung²", "ⅻ", "test"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Words = %q, want %q", got, want)
	}
}
