// Package plugins runs Steward's plugins: it reads plugins.hcl, starts each
// plugin as a supervised go-plugin subprocess, keeps the route table of what
// they serve, proxies HTTP to them and serves them the Host service.
// [AdminRoutes] show admins the plugins' state and upgrade one in place.
package plugins

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/stewardhq/steward/sdk/protocol"
)

// Decl is one plugin "name" { … } block of plugins.hcl.
type Decl struct {
	Name    string
	Binary  string
	Enabled bool
	// SHA256, when set, must match the binary or the plugin is not started.
	SHA256       string
	StartTimeout time.Duration
	// DataPlane is "socket" (HTTP over a private unix socket, the default) or
	// "grpc" (every request through the HandleHTTP stream).
	DataPlane string
	// MaxResponseBytes caps a response body the host relays from the
	// plugin; a body that goes past it is cut off.
	MaxResponseBytes int64
	// CloudCredential grants the plugin the host's cloud credential: its
	// Configure carries the client secret (or certificate, or token file)
	// and its environment the ambient credential's variables. Without it
	// the plugin gets the cloud's endpoints and ids only.
	CloudCredential bool
	// RequestTimeout bounds the wait for the plugin's answer to a request
	// (its status and headers); past it the caller gets a 504.
	RequestTimeout time.Duration
	// DrainTimeout bounds how long a reload waits for the old process's
	// requests, streams and jobs before it stops the process.
	DrainTimeout time.Duration
	// MemoryLimit is the most resident memory, in bytes, the plugin
	// process may hold before the supervisor restarts it; 0 sets none.
	MemoryLimit int64
	Restart     RestartPolicy
	// DatabaseURL, when set, is the plugin's database instead of the one
	// the host provisions for it (see pluginstore): for a deployment whose
	// database user may not create roles.
	DatabaseURL string
	// Config is the config {} block as JSON.
	Config json.RawMessage
	// Schedules override job default schedules, by job name.
	Schedules map[string]string
	// StaleAfter overrides how old the data a job keeps current may grow
	// before a tenant counts as stale, by job name.
	StaleAfter map[string]time.Duration
	// source locates the config block's keys in plugins.hcl. It is where
	// the declaration is written, not what it declares: Apply compares
	// declarations without it.
	source *configSource
}

// RestartPolicy says how a crashed plugin is restarted.
type RestartPolicy struct {
	// MaxCrashes within Window make the supervisor give up on the plugin.
	MaxCrashes     int
	Window         time.Duration
	BackoffInitial time.Duration
	BackoffMax     time.Duration
}

type fileSpec struct {
	Plugins []pluginSpec `hcl:"plugin,block"`
}

type pluginSpec struct {
	Name         string       `hcl:"name,label"`
	Binary       string       `hcl:"binary,optional"`
	Enabled      *bool        `hcl:"enabled,optional"`
	SHA256       string       `hcl:"sha256,optional"`
	StartTimeout string       `hcl:"start_timeout,optional"`
	DataPlane    string       `hcl:"data_plane,optional"`
	MaxResponse  *int64       `hcl:"max_response_bytes,optional"`
	CloudCred    bool         `hcl:"cloud_credential,optional"`
	RequestTO    string       `hcl:"request_timeout,optional"`
	DrainTO      string       `hcl:"drain_timeout,optional"`
	MemoryLimit  string       `hcl:"memory_limit,optional"`
	DatabaseURL  string       `hcl:"database_url,optional"`
	Restart      *restartSpec `hcl:"restart,block"`
	Config       *configSpec  `hcl:"config,block"`
	Jobs         []jobSpec    `hcl:"job,block"`
}

type restartSpec struct {
	MaxCrashes     *int   `hcl:"max_crashes,optional"`
	Window         string `hcl:"window,optional"`
	BackoffInitial string `hcl:"backoff_initial,optional"`
	BackoffMax     string `hcl:"backoff_max,optional"`
}

type configSpec struct {
	Body hcl.Body `hcl:",remain"`
}

type jobSpec struct {
	Name       string  `hcl:"name,label"`
	Schedule   *string `hcl:"schedule,optional"`
	StaleAfter string  `hcl:"stale_after,optional"`
}

// DefaultRestart is the restart policy of a plugin that declares none.
var DefaultRestart = RestartPolicy{MaxCrashes: 5, Window: 5 * time.Minute, BackoffInitial: 200 * time.Millisecond, BackoffMax: 30 * time.Second}

// DefaultMaxResponseBytes is the response body cap of a plugin that
// declares none: bodies stream through the host, so the cap bounds a
// runaway plugin rather than the host's memory.
const DefaultMaxResponseBytes int64 = 256 << 20

// DefaultRequestTimeout is how long the host waits for a plugin to answer
// a request when its block sets no request_timeout.
const DefaultRequestTimeout = 30 * time.Second

// DefaultDrainTimeout is how long a reload lets the old process finish its
// work when the plugin's block sets no drain_timeout.
const DefaultDrainTimeout = 30 * time.Second

// LoadFile reads plugins.hcl. Relative binary paths are resolved against
// baseDir (the working directory when empty).
func LoadFile(path, baseDir string) ([]Decl, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, src, baseDir)
}

// Parse reads plugins.hcl source; filename is used in error messages,
// those of a config block a plugin's schema refuses included.
func Parse(filename string, src []byte, baseDir string) ([]Decl, error) {
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	var spec fileSpec
	if diags := gohcl.DecodeBody(file.Body, nil, &spec); diags.HasErrors() {
		return nil, diags
	}
	blocks := map[string]*hclsyntax.Block{}
	for _, b := range file.Body.(*hclsyntax.Body).Blocks {
		if b.Type == "plugin" && len(b.Labels) == 1 {
			blocks[b.Labels[0]] = b
		}
	}
	seen := map[string]bool{}
	var out []Decl
	for _, p := range spec.Plugins {
		if seen[p.Name] {
			return nil, fmt.Errorf("%s: plugin %q declared twice", filename, p.Name)
		}
		seen[p.Name] = true
		d, err := p.decl(baseDir)
		if err != nil {
			return nil, fmt.Errorf("%s: plugin %q: %w", filename, p.Name, err)
		}
		d.source = locateConfig(filename, blocks[p.Name])
		out = append(out, d)
	}
	return out, nil
}

func (p pluginSpec) decl(baseDir string) (Decl, error) {
	d := Decl{Name: p.Name, Binary: p.Binary, Enabled: true, SHA256: p.SHA256, DataPlane: p.DataPlane, CloudCredential: p.CloudCred, DatabaseURL: p.DatabaseURL,
		StartTimeout: 10 * time.Second, MaxResponseBytes: DefaultMaxResponseBytes, RequestTimeout: DefaultRequestTimeout,
		DrainTimeout: DefaultDrainTimeout,
		MemoryLimit:  DefaultMemoryLimit, Restart: DefaultRestart,
		Config: json.RawMessage("{}"), Schedules: map[string]string{}, StaleAfter: map[string]time.Duration{}}
	if p.Enabled != nil {
		d.Enabled = *p.Enabled
	}
	if d.Binary == "" {
		return d, fmt.Errorf("binary is required")
	}
	if u := d.DatabaseURL; u != "" && !strings.HasPrefix(u, "sqlite://") && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		// The value itself may hold a password: the message leaves it out.
		return d, fmt.Errorf("database_url must start with sqlite:// or postgres://")
	}
	if !filepath.IsAbs(d.Binary) && baseDir != "" {
		d.Binary = filepath.Join(baseDir, d.Binary)
	}
	switch d.DataPlane {
	case "":
		d.DataPlane = "socket"
	case "socket", "grpc":
	default:
		return d, fmt.Errorf("data_plane must be \"socket\" or \"grpc\", not %q", d.DataPlane)
	}
	if p.MaxResponse != nil {
		if *p.MaxResponse < 1 {
			return d, fmt.Errorf("max_response_bytes must be at least 1")
		}
		d.MaxResponseBytes = *p.MaxResponse
	}
	var err error
	if d.StartTimeout, err = duration("start_timeout", p.StartTimeout, d.StartTimeout); err != nil {
		return d, err
	}
	if d.RequestTimeout, err = duration("request_timeout", p.RequestTO, d.RequestTimeout); err != nil {
		return d, err
	}
	if d.DrainTimeout, err = duration("drain_timeout", p.DrainTO, d.DrainTimeout); err != nil {
		return d, err
	}
	if p.MemoryLimit != "" {
		if d.MemoryLimit, err = parseSize("memory_limit", p.MemoryLimit); err != nil {
			return d, err
		}
		if d.MemoryLimit < minMemoryLimit {
			return d, fmt.Errorf("memory_limit must be at least %dMiB", minMemoryLimit>>20)
		}
	}
	if r := p.Restart; r != nil {
		if r.MaxCrashes != nil {
			if *r.MaxCrashes < 1 {
				return d, fmt.Errorf("restart.max_crashes must be at least 1")
			}
			d.Restart.MaxCrashes = *r.MaxCrashes
		}
		if d.Restart.Window, err = duration("restart.window", r.Window, d.Restart.Window); err != nil {
			return d, err
		}
		if d.Restart.BackoffInitial, err = duration("restart.backoff_initial", r.BackoffInitial, d.Restart.BackoffInitial); err != nil {
			return d, err
		}
		if d.Restart.BackoffMax, err = duration("restart.backoff_max", r.BackoffMax, d.Restart.BackoffMax); err != nil {
			return d, err
		}
	}
	if p.Config != nil {
		if d.Config, err = bodyJSON(p.Config.Body); err != nil {
			return d, fmt.Errorf("config: %w", err)
		}
	}
	for _, j := range p.Jobs {
		if j.Schedule != nil {
			d.Schedules[j.Name] = *j.Schedule
		}
		if j.StaleAfter != "" {
			if d.StaleAfter[j.Name], err = duration("job "+j.Name+".stale_after", j.StaleAfter, 0); err != nil {
				return d, err
			}
		}
	}
	return d, nil
}

func duration(name, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s: %q is not a positive duration", name, s)
	}
	return d, nil
}

// bodyJSON turns a config {} block into a JSON object. Only attributes are
// allowed, so the block maps onto the plugin's JSON config schema.
func bodyJSON(body hcl.Body) (json.RawMessage, error) {
	attrs, diags := body.JustAttributes()
	if diags.HasErrors() {
		return nil, diags
	}
	obj := make(map[string]json.RawMessage, len(attrs))
	for name, attr := range attrs {
		val, diags := attr.Expr.Value(nil)
		if diags.HasErrors() {
			return nil, diags
		}
		b, err := ctyjson.Marshal(val, val.Type())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		obj[name] = b
	}
	return json.Marshal(obj)
}

// configSource is where a plugin's config keys are written in plugins.hcl,
// by the JSON Pointer of each key in the block as the plugin receives it.
type configSource struct {
	file string
	// at holds the position of each attribute, object member and tuple
	// element; "" is the config block, or the plugin's block when it has
	// none.
	at map[string]hcl.Pos
}

// locateConfig records the positions of block's config keys; block is nil
// for a plugin the syntax tree does not show, whose keys have none.
func locateConfig(file string, block *hclsyntax.Block) *configSource {
	src := &configSource{file: file, at: map[string]hcl.Pos{}}
	if block == nil {
		return src
	}
	src.at[""] = block.DefRange().Start
	for _, b := range block.Body.Blocks {
		if b.Type != "config" {
			continue
		}
		src.at[""] = b.DefRange().Start
		for name, attr := range b.Body.Attributes {
			ptr := "/" + protocol.EscapePointer(name)
			src.at[ptr] = attr.SrcRange.Start
			src.locate(ptr, attr.Expr)
		}
	}
	return src
}

// locate records the positions of what expr holds: the members of an
// object, the elements of a tuple, and theirs.
func (c *configSource) locate(ptr string, expr hclsyntax.Expression) {
	switch e := expr.(type) {
	case *hclsyntax.ObjectConsExpr:
		for _, item := range e.Items {
			key, diags := item.KeyExpr.Value(nil)
			if diags.HasErrors() || !key.IsKnown() || key.IsNull() || !key.Type().Equals(cty.String) {
				continue
			}
			member := ptr + "/" + protocol.EscapePointer(key.AsString())
			c.at[member] = item.KeyExpr.Range().Start
			c.locate(member, item.ValueExpr)
		}
	case *hclsyntax.TupleConsExpr:
		for i, el := range e.Exprs {
			element := fmt.Sprintf("%s/%d", ptr, i)
			c.at[element] = el.Range().Start
			c.locate(element, el)
		}
	}
}

// pos is where the key at ptr is written, or, for a key the block does not
// have (a missing one), where the nearest object holding it is.
func (c *configSource) pos(ptr string) (hcl.Pos, bool) {
	for {
		if p, ok := c.at[ptr]; ok {
			return p, true
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return hcl.Pos{}, false
		}
		ptr = ptr[:i]
	}
}

// ConfigError is a plugin's config {} block that the schema the plugin
// describes refuses. Each line names a problem as
// `plugins.hcl:LINE,COL: plugin "acme" config.KEY: message`, at the key
// (a missing key: at the block that lacks it), in the order of the file.
// The plugin is not started; a reload leaves the running process serving
// with the config it has.
type ConfigError struct {
	Lines []string
}

func (e *ConfigError) Error() string { return strings.Join(e.Lines, "\n") }

// configError words the problems CheckConfig found in d's block.
func (d *Decl) configError(problems []protocol.ConfigProblem) *ConfigError {
	type line struct {
		pos  hcl.Pos
		text string
	}
	lines := make([]line, 0, len(problems))
	for _, p := range problems {
		text := fmt.Sprintf("plugin %q config.%s: %s", d.Name, p.Key, p.Message)
		var pos hcl.Pos
		if d.source != nil {
			var ok bool
			if pos, ok = d.source.pos(p.Pointer); ok {
				text = fmt.Sprintf("%s:%d,%d: %s", d.source.file, pos.Line, pos.Column, text)
			}
		}
		lines = append(lines, line{pos, text})
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.pos.Byte - b.pos.Byte })
	out := &ConfigError{}
	for _, l := range lines {
		out.Lines = append(out.Lines, l.text)
	}
	return out
}
