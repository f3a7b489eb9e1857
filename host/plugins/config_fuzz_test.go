package plugins

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stewardhq/steward/sdk/protocol"
)

// FuzzParse reads arbitrary plugins.hcl source, seeded with the
// repository's own. It answers declarations or an error, never panics, and
// a declaration it answers is one the supervisor can run as it stands:
// a name declared once, an absolute binary, a known data plane, positive
// limits and durations, a config block that is a JSON object each of whose
// keys has a position to name in an error.
func FuzzParse(f *testing.F) {
	repo, err := os.ReadFile(filepath.Join("..", "..", "plugins.hcl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(repo),
		pluginBlock("full", `binary = "/opt/full"`, `enabled = false`, `sha256 = "ab12"`, `start_timeout = "30s"`, `data_plane = "grpc"`,
			`max_response_bytes = 1048576`, `cloud_credential = true`, `request_timeout = "2m"`, `drain_timeout = "90s"`, `memory_limit = "512MiB"`,
			`database_url = "postgres://full:secret@db:5432/steward"`, `restart { max_crashes = 2`, `window = "1m" }`,
			`config { days = 30`, `nested = { a = [1, "two", { b = null }] }`, `"quoted key" = true }`, `job "sync" { schedule = "@every 5m"`, `stale_after = "3h" }`),
		pluginBlock("a", `binary = "bin/a"`, `memory_limit = "31MiB"`),
		pluginBlock("a", `binary = "bin/a"`, `config { x = var.y }`),
		pluginBlock("a", `binary = "bin/a"`, `config { block {} }`),
		pluginBlock("a", `binary = "bin/a"`) + pluginBlock("a", `binary = "bin/b"`),
		`plugin "a" "b" { binary = "x" }`,
		`plugin { binary = "x" }`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		decls, err := Parse("plugins.hcl", src, "/srv/steward")
		if err != nil {
			if decls != nil {
				t.Fatal("declarations with an error")
			}
			return
		}
		seen := map[string]bool{}
		for _, d := range decls {
			if seen[d.Name] {
				t.Fatalf("plugin %q declared twice", d.Name)
			}
			seen[d.Name] = true
			if !filepath.IsAbs(d.Binary) || (d.DataPlane != "socket" && d.DataPlane != "grpc") || d.MaxResponseBytes < 1 ||
				d.StartTimeout <= 0 || d.RequestTimeout <= 0 || d.DrainTimeout <= 0 || (d.MemoryLimit != 0 && d.MemoryLimit < minMemoryLimit) ||
				d.Restart.MaxCrashes < 1 || d.Restart.Window <= 0 || d.Restart.BackoffInitial <= 0 || d.Restart.BackoffMax <= 0 {
				t.Fatalf("declaration %+v", d)
			}
			for job, after := range d.StaleAfter {
				if after <= 0 {
					t.Fatalf("plugin %q job %q: stale_after %v", d.Name, job, after)
				}
			}
			var config map[string]json.RawMessage
			if err := json.Unmarshal(d.Config, &config); err != nil || config == nil {
				t.Fatalf("plugin %q: config %s is no JSON object: %v", d.Name, d.Config, err)
			}
			for key := range config {
				if _, ok := d.source.pos("/" + protocol.EscapePointer(key)); !ok {
					t.Fatalf("plugin %q: config key %q has no position", d.Name, key)
				}
			}
		}
	})
}
