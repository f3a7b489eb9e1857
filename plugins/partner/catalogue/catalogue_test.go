package catalogue_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/partner/catalogue"
)

func TestExampleLoads(t *testing.T) {
	c, err := catalogue.LoadFile(filepath.Join("..", "catalogue.example.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Programme
	if p.Partner != "Northwind Bank" || !p.Deadline.Equal(time.Date(2027, 3, 31, 0, 0, 0, 0, time.UTC)) || p.TargetMaturity != 3.5 {
		t.Fatalf("programme %+v", p)
	}
	if len(c.Requirements) != 12 {
		t.Fatalf("%d requirements, want 12", len(c.Requirements))
	}
	r, ok := c.Requirement("DP-03")
	if !ok || r.Priority != catalogue.Medium || r.Category != "data_protection" || r.Check == nil ||
		*r.Check != (catalogue.Check{Metric: catalogue.FrameworkCoverage, Framework: "soc2", Target: 60}) || len(r.Evidence) != 1 {
		t.Fatalf("DP-03 %+v", r)
	}
	if r, _ := c.Requirement("IR-01"); r.Check != nil || r.Evidence == nil {
		t.Fatalf("IR-01 %+v", r)
	}
	if got := strings.Join(c.Categories(), ","); got != "data_protection,identity,incident_response,logging" {
		t.Errorf("categories %s", got)
	}
}

func TestPriorityWeights(t *testing.T) {
	for p, want := range map[catalogue.Priority][2]int{catalogue.Critical: {1, 4}, catalogue.High: {2, 3}, catalogue.Medium: {3, 2}, catalogue.Low: {4, 1}, "urgent": {0, 5}} {
		if got := [2]int{p.Rank(), p.Weight()}; got != want {
			t.Errorf("%s: rank, weight %v, want %v", p, got, want)
		}
	}
}

const good = `programme {
  partner         = "Northwind"
  deadline        = "2027-03-31"
  target_maturity = 3
}
requirement "A-1" {
  title    = "First"
  category = "identity"
  priority = "high"
  check {
    metric = "mfa_coverage"
    target = 90
  }
}
requirement "A-2" {
  title    = "Second"
  category = "logging"
  priority = "low"
}
`

// TestBadFiles: each mistake stops the load with an error naming the file,
// the line (and column) and the field.
func TestBadFiles(t *testing.T) {
	for _, tt := range []struct {
		name, old, new string
		want           []string
	}{
		{"unknown field", `  category = "logging"`, "  category = \"logging\"\n  owner = \"x\"",
			[]string{"cat.hcl:18,3", `requirement "A-2".owner`, "Unsupported argument"}},
		{"unknown block", `requirement "A-2" {`, "extra {}\nrequirement \"A-2\" {", []string{"cat.hcl:15,1", `"extra"`}},
		{"missing id", `requirement "A-2" {`, `requirement {`, []string{"cat.hcl:15,", "requirement", "Missing id"}},
		{"empty id", `requirement "A-2" {`, `requirement "" {`, []string{"cat.hcl:15,13", `requirement "".id`, "is required"}},
		{"bad id", `requirement "A-2" {`, `requirement "A 2" {`, []string{"cat.hcl:15,13", `requirement "A 2".id`, "is not an id"}},
		{"duplicate id", `requirement "A-2" {`, `requirement "A-1" {`, []string{"cat.hcl:15,13", `requirement "A-1".id`, "earlier requirement"}},
		{"bad date", `"2027-03-31"`, `"31/03/2027"`, []string{"cat.hcl:3,3", "programme.deadline", `"31/03/2027" is not a date`}},
		{"impossible date", `"2027-03-31"`, `"2027-02-30"`, []string{"cat.hcl:3,3", "programme.deadline"}},
		{"maturity out of range", `target_maturity = 3`, `target_maturity = 6`, []string{"cat.hcl:4,3", "programme.target_maturity", "outside 0 to 5"}},
		{"missing partner", `  partner         = "Northwind"`, ``, []string{"cat.hcl:1,", `"partner" is required`}},
		{"blank partner", `"Northwind"`, `"  "`, []string{"cat.hcl:2,3", "programme.partner", "is required"}},
		{"unknown metric", `"mfa_coverage"`, `"mfa_percent"`, []string{"cat.hcl:11,5", `requirement "A-1".check.metric`, `"mfa_percent" is not a metric`}},
		{"target above range", `target = 90`, `target = 100.5`, []string{"cat.hcl:12,5", `requirement "A-1".check.target`, "outside 0 to 100"}},
		{"target below range", `target = 90`, `target = -1`, []string{"cat.hcl:12,5", `requirement "A-1".check.target`}},
		{"framework without its metric", `target = 90`, "target = 90\n    framework = \"soc2\"", []string{"cat.hcl:13,5", `requirement "A-1".check.framework`, "applies only"}},
		{"framework coverage without framework", `"mfa_coverage"`, `"framework_coverage"`, []string{"cat.hcl:10,3", `requirement "A-1".check.framework`, "is required"}},
		{"unknown priority", `"low"`, `"urgent"`, []string{"cat.hcl:18,3", `requirement "A-2".priority`, `"urgent" is not a priority`}},
		{"missing title", `  title    = "Second"`, ``, []string{"cat.hcl:15,", `"title" is required`}},
		{"wrong type", `target = 90`, `target = "high"`, []string{"cat.hcl:12,15", `requirement "A-1".check.target`, "a number is required"}},
		{"syntax", `priority = "low"`, `priority = `, []string{"cat.hcl:18,"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(good, tt.old, tt.new, 1)
			if src == good {
				t.Fatalf("%q is not in the good file", tt.old)
			}
			_, err := catalogue.Parse("cat.hcl", []byte(src))
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestNoRequirements(t *testing.T) {
	src := good[:strings.Index(good, "requirement")]
	_, err := catalogue.Parse("cat.hcl", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "cat.hcl:1,1: requirements: at least one requirement") {
		t.Fatalf("error %v", err)
	}
}

func TestFromConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cat.hcl")
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]string{"catalogue_file": path})
	c, err := catalogue.FromConfig(raw)
	if err != nil || len(c.Requirements) != 2 {
		t.Fatalf("%+v %v", c, err)
	}
	raw, _ = json.Marshal(map[string]string{"catalogue_file": filepath.Join(t.TempDir(), "missing.hcl")})
	if _, err := catalogue.FromConfig(raw); err == nil || !strings.Contains(err.Error(), "missing.hcl") {
		t.Fatalf("a missing file: %v", err)
	}
}

const inline = `{"programme": {"partner": "Northwind", "deadline": "2027-03-31", "target_maturity": 3},
 "requirements": [
  {"id": "A-1", "title": "First", "category": "identity", "priority": "high", "evidence": ["x"], "check": {"metric": "mfa_coverage", "target": 90}},
  {"id": "A-2", "title": "Second", "category": "logging", "priority": "low"}]}`

func TestFromConfigInline(t *testing.T) {
	c, err := catalogue.FromConfig(json.RawMessage(inline))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Requirements) != 2 || c.Requirements[0].Check.Target != 90 || c.Requirements[1].Check != nil || c.Programme.TargetMaturity != 3 {
		t.Fatalf("%+v", c)
	}
}

// TestBadConfig: every mistake of an inline catalogue is refused, named.
// An unknown or mistyped member is one the host refuses first, at its line
// in plugins.hcl, against the schema Source gives the plugin's config.
func TestBadConfig(t *testing.T) {
	for _, tt := range []struct {
		name, old, new string
		want           []string
	}{
		{"unknown top field", `{"programme"`, `{"owner": 1, "programme"`, []string{"plugins.hcl config: ", `unknown field "owner"`}},
		{"unknown requirement field", `"priority": "low"`, `"priority": "low", "owner": "x"`, []string{"plugins.hcl config: ", `unknown field "owner"`}},
		{"unknown check field", `"target": 90`, `"target": 90, "op": ">"`, []string{"plugins.hcl config: ", `unknown field "op"`}},
		{"unknown programme field", `"target_maturity": 3`, `"target_maturity": 3, "x": 1`, []string{"plugins.hcl config: ", `unknown field "x"`}},
		{"missing id", `"id": "A-2", `, ``, []string{"plugins.hcl config: requirements[1].id: is required"}},
		{"duplicate id", `"id": "A-2"`, `"id": "A-1"`, []string{"plugins.hcl config: requirements[1].id: \"A-1\" is used by an earlier requirement"}},
		{"bad date", `2027-03-31`, `2027-13-01`, []string{"plugins.hcl config: programme.deadline: "}},
		{"missing maturity", `, "target_maturity": 3`, ``, []string{"plugins.hcl config: programme.target_maturity: is required"}},
		{"unknown metric", `"mfa_coverage"`, `"uptime"`, []string{"plugins.hcl config: requirements[0].check.metric: \"uptime\" is not a metric"}},
		{"target out of range", `"target": 90`, `"target": 101`, []string{"plugins.hcl config: requirements[0].check.target: 101 is outside"}},
		{"missing target", `, "target": 90`, ``, []string{"plugins.hcl config: requirements[0].check.target: is required"}},
		{"unknown priority", `"priority": "low"`, `"priority": "LOW"`, []string{"plugins.hcl config: requirements[1].priority: \"LOW\" is not a priority"}},
		{"wrong type", `"target_maturity": 3`, `"target_maturity": "3"`, []string{"plugins.hcl config: ", `"programme.target_maturity"`}},
		{"file and inline", `{"programme"`, `{"catalogue_file": "x.hcl", "programme"`, []string{"plugins.hcl config: catalogue_file: "}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(inline, tt.old, tt.new, 1)
			if src == inline {
				t.Fatalf("%q is not in the good config", tt.old)
			}
			_, err := catalogue.FromConfig(json.RawMessage(src))
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	for _, raw := range []string{``, `{}`, `{"programme": {"partner": "x", "deadline": "2027-01-01", "target_maturity": 1}}`} {
		if _, err := catalogue.FromConfig(json.RawMessage(raw)); err == nil {
			t.Errorf("%q loaded", raw)
		}
	}
}
