package plugins

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/sdk/protocol"
)

// defaultDecl is what a block naming only its binary turns into.
func defaultDecl(name, binary string) Decl {
	return Decl{Name: name, Binary: binary, Enabled: true, DataPlane: "socket", StartTimeout: 10 * time.Second,
		MaxResponseBytes: 256 << 20, RequestTimeout: 30 * time.Second, DrainTimeout: 30 * time.Second, MemoryLimit: 1 << 30, Restart: DefaultRestart, Config: json.RawMessage("{}"), Schedules: map[string]string{}, StaleAfter: map[string]time.Duration{}}
}

// pluginBlock renders a plugin block with one line per body line, so an error's
// line number is that of the body line plus one.
func pluginBlock(name string, body ...string) string {
	return "plugin \"" + name + "\" {\n  " + strings.Join(body, "\n  ") + "\n}\n"
}

func TestParse(t *testing.T) {
	full := defaultDecl("full", "/opt/steward/full")
	full.Enabled = false
	full.SHA256 = "ab12"
	full.StartTimeout = 30 * time.Second
	full.DataPlane = "grpc"
	full.MaxResponseBytes = 1048576
	full.CloudCredential = true
	full.RequestTimeout = 2 * time.Minute
	full.DrainTimeout = 90 * time.Second
	full.MemoryLimit = 512 << 20
	full.DatabaseURL = "postgres://full:secret@db:5432/steward?search_path=full"
	full.Restart = RestartPolicy{MaxCrashes: 2, Window: time.Minute, BackoffInitial: time.Second, BackoffMax: 10 * time.Second}
	full.Schedules = map[string]string{"sync": "@every 5m", "prune": "0 3 * * *"}
	full.StaleAfter = map[string]time.Duration{"sync": 30 * time.Minute, "report": 48 * time.Hour}

	partial := defaultDecl("partial", "/srv/steward/bin/partial")
	partial.Restart.MaxCrashes = 3

	tests := []struct {
		name    string
		src     string
		baseDir string
		want    []Decl
	}{
		{
			name:    "empty file",
			src:     "# no plugins yet\n",
			baseDir: "/srv/steward",
			want:    nil,
		},
		{
			name:    "defaults and relative binary resolved against baseDir",
			src:     `plugin "a" { binary = "bin/a" }`,
			baseDir: "/srv/steward",
			want:    []Decl{defaultDecl("a", "/srv/steward/bin/a")},
		},
		{
			name:    "absolute binary kept",
			src:     `plugin "a" { binary = "/opt/a" }`,
			baseDir: "/srv/steward",
			want:    []Decl{defaultDecl("a", "/opt/a")},
		},
		{
			name:    "relative binary kept without baseDir",
			src:     `plugin "a" { binary = "bin/a" }`,
			baseDir: "",
			want:    []Decl{defaultDecl("a", "bin/a")},
		},
		{
			name: "every setting",
			src: `
plugin "full" {
  binary        = "/opt/steward/full"
  enabled       = false
  sha256        = "ab12"
  start_timeout = "30s"
  data_plane    = "grpc"
  max_response_bytes = 1048576
  cloud_credential = true
  request_timeout = "2m"
  drain_timeout = "90s"
  memory_limit = "512MiB"
  database_url = "postgres://full:secret@db:5432/steward?search_path=full"
  restart {
    max_crashes     = 2
    window          = "1m"
    backoff_initial = "1s"
    backoff_max     = "10s"
  }
  job "sync" {
    schedule    = "@every 5m"
    stale_after = "30m"
  }
  job "prune" { schedule = "0 3 * * *" }
  job "report" { stale_after = "48h" }
}`,
			baseDir: "/srv/steward",
			want:    []Decl{full},
		},
		{
			name:    "partial restart block keeps the other defaults",
			src:     pluginBlock("partial", `binary = "bin/partial"`, `restart { max_crashes = 3 }`),
			baseDir: "/srv/steward",
			want:    []Decl{partial},
		},
		{
			name:    "explicit socket data plane",
			src:     pluginBlock("a", `binary = "/a"`, `data_plane = "socket"`),
			baseDir: "",
			want:    []Decl{defaultDecl("a", "/a")},
		},
		{
			name:    "plugins kept in file order",
			src:     `plugin "b" { binary = "/b" }` + "\n" + `plugin "a" { binary = "/a" }`,
			baseDir: "",
			want:    []Decl{defaultDecl("b", "/b"), defaultDecl("a", "/a")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("plugins.hcl", []byte(tt.src), tt.baseDir)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !slices.EqualFunc(got, tt.want, sameDecl) {
				t.Errorf("Parse =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestParseConfigBlockAsJSON(t *testing.T) {
	tests := []struct {
		name   string
		config string
		want   string
	}{
		{name: "no config block", config: "", want: `{}`},
		{name: "empty config block", config: "config {}", want: `{}`},
		{name: "string", config: `config { region = "westeurope" }`, want: `{"region":"westeurope"}`},
		{name: "numbers", config: "config {\n  workers = 4\n  ratio = 0.25\n  offset = -3\n}", want: `{"workers":4,"ratio":0.25,"offset":-3}`},
		{name: "bools", config: "config {\n  dry_run = true\n  verbose = false\n}", want: `{"dry_run":true,"verbose":false}`},
		{name: "list", config: `config { regions = ["westeurope", "northeurope"] }`, want: `{"regions":["westeurope","northeurope"]}`},
		{name: "mixed list", config: `config { mixed = [1, "two", true] }`, want: `{"mixed":[1,"two",true]}`},
		{name: "object", config: `config { limits = { cpu = 2, name = "small", burst = false } }`, want: `{"limits":{"cpu":2,"name":"small","burst":false}}`},
		{
			name:   "list of objects",
			config: `config { rules = [{ name = "a", max = 1 }, { name = "b", tags = ["x"] }] }`,
			want:   `{"rules":[{"name":"a","max":1},{"name":"b","tags":["x"]}]}`,
		},
		{name: "null", config: `config { proxy = null }`, want: `{"proxy":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decls, err := Parse("plugins.hcl", []byte(pluginBlock("a", `binary = "/a"`, tt.config)), "")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(decls) != 1 {
				t.Fatalf("got %d decls, want 1", len(decls))
			}
			var got, want any
			if err := json.Unmarshal(decls[0].Config, &got); err != nil {
				t.Fatalf("config is not JSON: %v: %s", err, decls[0].Config)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatalf("bad want: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("config = %s, want %s", decls[0].Config, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		// want are substrings the error message must carry.
		want []string
	}{
		{
			name: "duplicate plugin",
			src:  `plugin "a" { binary = "/a" }` + "\n" + `plugin "a" { binary = "/b" }`,
			want: []string{"plugins.hcl", `plugin "a" declared twice`},
		},
		{
			name: "binary missing",
			src:  pluginBlock("a", "enabled = true"),
			want: []string{"plugins.hcl", `plugin "a"`, "binary is required"},
		},
		{
			name: "binary empty",
			src:  `plugin "a" { binary = "" }`,
			want: []string{"plugins.hcl", `plugin "a"`, "binary is required"},
		},
		{
			name: "bad data_plane",
			src:  pluginBlock("a", `binary = "/a"`, `data_plane = "http"`),
			want: []string{`plugin "a"`, `data_plane must be "socket" or "grpc", not "http"`},
		},
		{
			name: "zero max_response_bytes",
			src:  pluginBlock("a", `binary = "/a"`, `max_response_bytes = 0`),
			want: []string{`plugin "a"`, `max_response_bytes must be at least 1`},
		},
		{
			name: "unparseable start_timeout",
			src:  pluginBlock("a", `binary = "/a"`, `start_timeout = "soon"`),
			want: []string{`plugin "a"`, `start_timeout: "soon" is not a positive duration`},
		},
		{
			name: "database_url of an unknown kind",
			src:  pluginBlock("a", `binary = "/a"`, `database_url = "mysql://a:hunter2@db/a"`),
			want: []string{`plugin "a"`, `database_url must start with sqlite:// or postgres://`},
		},
		{
			name: "zero start_timeout",
			src:  pluginBlock("a", `binary = "/a"`, `start_timeout = "0s"`),
			want: []string{`plugin "a"`, `start_timeout: "0s" is not a positive duration`},
		},
		{
			name: "zero request_timeout",
			src:  pluginBlock("a", `binary = "/a"`, `request_timeout = "0s"`),
			want: []string{`plugin "a"`, `request_timeout: "0s" is not a positive duration`},
		},
		{
			name: "zero drain_timeout",
			src:  pluginBlock("a", `binary = "/a"`, `drain_timeout = "0s"`),
			want: []string{`plugin "a"`, `drain_timeout: "0s" is not a positive duration`},
		},
		{
			name: "unparseable request_timeout",
			src:  pluginBlock("a", `binary = "/a"`, `request_timeout = 30`),
			want: []string{`plugin "a"`, `request_timeout: "30" is not a positive duration`},
		},
		{
			name: "memory_limit in decimal units",
			src:  pluginBlock("a", `binary = "/a"`, `memory_limit = "512MB"`),
			want: []string{`plugin "a"`, `memory_limit: "512MB" is not a size such as "512MiB"`},
		},
		{
			name: "memory_limit without a unit",
			src:  pluginBlock("a", `binary = "/a"`, `memory_limit = 536870912`),
			want: []string{`plugin "a"`, `memory_limit: "536870912" is not a size`},
		},
		{
			name: "memory_limit too small to start",
			src:  pluginBlock("a", `binary = "/a"`, `memory_limit = "16MiB"`),
			want: []string{`plugin "a"`, "memory_limit must be at least 32MiB"},
		},
		{
			name: "memory_limit overflowing",
			src:  pluginBlock("a", `binary = "/a"`, `memory_limit = "99999999999TiB"`),
			want: []string{`plugin "a"`, `memory_limit: "99999999999TiB" is too large`},
		},
		{
			name: "negative restart window",
			src:  pluginBlock("a", `binary = "/a"`, `restart { window = "-5m" }`),
			want: []string{`plugin "a"`, `restart.window: "-5m" is not a positive duration`},
		},
		{
			name: "bad backoff_initial",
			src:  pluginBlock("a", `binary = "/a"`, `restart { backoff_initial = "5 minutes" }`),
			want: []string{`plugin "a"`, `restart.backoff_initial: "5 minutes" is not a positive duration`},
		},
		{
			name: "bad backoff_max",
			src:  pluginBlock("a", `binary = "/a"`, `restart { backoff_max = "1x" }`),
			want: []string{`plugin "a"`, `restart.backoff_max: "1x" is not a positive duration`},
		},
		{
			name: "bad stale_after",
			src:  pluginBlock("a", `binary = "/a"`, `job "sync" { stale_after = "a day" }`),
			want: []string{`plugin "a"`, `job sync.stale_after: "a day" is not a positive duration`},
		},
		{
			name: "max_crashes zero",
			src:  pluginBlock("a", `binary = "/a"`, `restart { max_crashes = 0 }`),
			want: []string{`plugin "a"`, "restart.max_crashes must be at least 1"},
		},
		{
			name: "max_crashes negative",
			src:  pluginBlock("a", `binary = "/a"`, `restart { max_crashes = -1 }`),
			want: []string{`plugin "a"`, "restart.max_crashes must be at least 1"},
		},
		{
			name: "nested block inside config",
			src:  pluginBlock("a", `binary = "/a"`, "config {", `  region = "x"`, "  limits { cpu = 2 }", "}"),
			want: []string{`plugin "a"`, "config:", "plugins.hcl:5,", `Unexpected "limits" block`},
		},
		{
			name: "variable in config",
			src:  pluginBlock("a", `binary = "/a"`, "config { region = var.region }"),
			want: []string{`plugin "a"`, "config:", "plugins.hcl:3,", "Variables not allowed"},
		},
		{
			name: "second plugin's error names that plugin",
			src:  `plugin "a" { binary = "/a" }` + "\n" + pluginBlock("b", `binary = "/b"`, `data_plane = "tcp"`),
			want: []string{`plugin "b"`, `not "tcp"`},
		},
		{
			name: "syntax error",
			src:  pluginBlock("a", `binary = "/a"`, "= 3"),
			want: []string{"plugins.hcl:3,", "Argument or block definition required"},
		},
		{
			name: "unclosed block",
			src:  "plugin \"a\" {\n  binary = \"/a\"\n",
			want: []string{"plugins.hcl:1,", "Unclosed configuration block"},
		},
		{
			name: "unknown attribute",
			src:  pluginBlock("a", `binary = "/a"`, `binnary = "/b"`),
			want: []string{"plugins.hcl:3,", `Unsupported argument; An argument named "binnary"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decls, err := Parse("plugins.hcl", []byte(tt.src), "/srv")
			if err == nil {
				t.Fatalf("Parse succeeded with %+v, want an error", decls)
			}
			if decls != nil {
				t.Errorf("Parse returned decls %+v along with its error", decls)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q quotes a password", err)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plugins.hcl")
	if err := os.WriteFile(path, []byte(`plugin "a" { binary = "bin/a" }`), 0o600); err != nil {
		t.Fatal(err)
	}
	decls, err := LoadFile(path, dir)
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if want := []Decl{defaultDecl("a", filepath.Join(dir, "bin", "a"))}; !slices.EqualFunc(decls, want, sameDecl) {
		t.Errorf("LoadFile = %+v, want %+v", decls, want)
	}

	if _, err := LoadFile(filepath.Join(dir, "missing.hcl"), dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadFile of a missing file: err = %v, want fs.ErrNotExist", err)
	}

	if err := os.WriteFile(path, []byte("plugin \"a\" {\n  binary = 1 +\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(path, dir); err == nil || !strings.Contains(err.Error(), path+":") {
		t.Errorf("LoadFile of a broken file: err = %v, want it to name %s", err, path)
	}
}

// A config block's problems are told at the line and column of the key
// in plugins.hcl: an unknown or mistyped attribute at the attribute, a
// member of an object or an element of a list where it is written, a
// missing key at the block that lacks it (the plugin's block when it has
// no config block), each on a line of its own in the file's order.
func TestConfigErrorPositions(t *testing.T) {
	const schema = `{"type": "object", "additionalProperties": false, "required": ["inventory"], "properties": {
  "inventory": {"type": "string"},
  "days": {"type": "integer", "minimum": 1},
  "locations": {"type": "array", "items": {"type": "string"}},
  "programme": {"type": "object", "additionalProperties": false, "required": ["partner"], "properties": {
    "partner": {"type": "string"}, "target": {"type": "number"}}}}}`
	src := `plugin "cost" {
  binary = "/opt/cost"
  config {
    inventory = "testplugin.items"
    dayz      = 30
    locations = ["eastus",
                 7]
    programme = {
      target  = "high"
      "owner" = "ops"
    }
  }
}

plugin "resources" {
  binary = "/opt/resources"
}
`
	decls, err := Parse("plugins.hcl", []byte(src), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		decl Decl
		want []string
	}{
		{decls[0], []string{
			`plugins.hcl:5,5: plugin "cost" config.dayz: unknown key; the keys are days, inventory, locations, programme`,
			`plugins.hcl:7,18: plugin "cost" config.locations[1]: expected string, but got number`,
			`plugins.hcl:8,5: plugin "cost" config.programme.partner: is required`,
			`plugins.hcl:9,7: plugin "cost" config.programme.target: expected number, but got string`,
			`plugins.hcl:10,7: plugin "cost" config.programme.owner: unknown key; the keys are partner, target`,
		}},
		{decls[1], []string{`plugins.hcl:15,1: plugin "resources" config.inventory: is required`}},
	} {
		problems, err := protocol.CheckConfig([]byte(schema), tc.decl.Config)
		if err != nil {
			t.Fatal(err)
		}
		got := tc.decl.configError(problems)
		if !slices.Equal(got.Lines, tc.want) {
			t.Errorf("plugin %s:\n%s\nwant\n%s", tc.decl.Name, got, strings.Join(tc.want, "\n"))
		}
	}

	// The config block itself, when a missing key has no object of its own.
	decls, err = Parse("conf/plugins.hcl", []byte("plugin \"cost\" {\n  binary = \"/opt/cost\"\n  config {\n  }\n}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	problems, _ := protocol.CheckConfig([]byte(schema), decls[0].Config)
	if got := decls[0].configError(problems).Error(); got != `conf/plugins.hcl:3,3: plugin "cost" config.inventory: is required` {
		t.Errorf("missing key of an empty block: %s", got)
	}
}

// Apply compares what plugins.hcl declares, not where: a block that only
// moved down the file is the same declaration.
func TestSameDeclIgnoresPositions(t *testing.T) {
	block := "plugin \"a\" {\n  binary = \"/a\"\n  config {\n    days = 3\n  }\n}\n"
	before, err := Parse("plugins.hcl", []byte(block), "")
	if err != nil {
		t.Fatal(err)
	}
	after, err := Parse("plugins.hcl", []byte("# a comment\n\n"+block), "")
	if err != nil {
		t.Fatal(err)
	}
	if !sameDecl(before[0], after[0]) || reflect.DeepEqual(before[0].source, after[0].source) {
		t.Errorf("moved block: same %v, positions %v and %v", sameDecl(before[0], after[0]), before[0].source, after[0].source)
	}
	if p, _ := after[0].source.pos("/days"); p.Line != 6 {
		t.Errorf("days is at line %d, want 6", p.Line)
	}
}
