package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

type programme struct {
	Partner  string   `json:"partner" doc:"The partner imposing the requirements"`
	Maturity *float64 `json:"target_maturity,omitempty" minimum:"0" maximum:"5"`
}

type demoConfig struct {
	Inventory string    `json:"inventory" doc:"The dataset the job reads"`
	Locations []string  `json:"locations" minItems:"1"`
	Days      int       `json:"days,omitempty" minimum:"1" maximum:"31"`
	Timeout   Duration  `json:"timeout"`
	Mode      string    `json:"mode,omitempty" enum:"fast,careful"`
	Programme programme `json:"programme,omitzero"`
}

func (demoConfig) Defaults() demoConfig {
	return demoConfig{Locations: []string{"eastus", "westeurope"}, Timeout: Duration(30 * time.Second)}
}

func demoFactory(context.Context, demoConfig, *Env) (*Plugin, error) { return &Plugin{}, nil }

// The schema is C's: its keys and their constraints, nothing beyond them,
// a key required unless it is omitempty or has a default, the defaults of
// Defaults() shown, no value nullable.
func TestConfigSchemaIsDerivedFromTheType(t *testing.T) {
	b, err := bind(Definition{Name: "demo"}, demoFactory)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b.schema, &s); err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	prop := func(name string) map[string]any { return props[name].(map[string]any) }
	if s["additionalProperties"] != false || !reflect.DeepEqual(s["required"], []any{"inventory"}) {
		t.Errorf("top level: additionalProperties %v, required %v; want false and [inventory]", s["additionalProperties"], s["required"])
	}
	for _, c := range []struct {
		name, key string
		want      any
	}{
		{"inventory", "description", "The dataset the job reads"},
		{"locations", "default", []any{"eastus", "westeurope"}},
		{"locations", "type", "array"},
		{"locations", "minItems", 1.0},
		{"days", "maximum", 31.0},
		{"timeout", "type", "string"},
		{"timeout", "default", "30s"},
		{"mode", "enum", []any{"fast", "careful"}},
	} {
		if got := prop(c.name)[c.key]; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s.%s = %v, want %v", c.name, c.key, got, c.want)
		}
	}
	if _, ok := prop("days")["default"]; ok {
		t.Error("days has a default although Defaults() leaves it zero")
	}
	nested := prop("programme")
	if nested["additionalProperties"] != false || !reflect.DeepEqual(nested["required"], []any{"partner"}) {
		t.Errorf("programme: %v", nested)
	}
	if typ := nested["properties"].(map[string]any)["target_maturity"].(map[string]any)["type"]; typ != "number" {
		t.Errorf("a pointer is not nullable in a config: type %v", typ)
	}
}

// The block is decoded over Defaults(): what it leaves out keeps its
// default, what it gives replaces it, and a key C lacks is refused.
func TestConfigDecodesOverDefaults(t *testing.T) {
	b, err := bind(Definition{Name: "demo"}, demoFactory)
	if err != nil {
		t.Fatal(err)
	}
	v, err := b.decode(json.RawMessage(`{"inventory": "testplugin.items", "locations": ["northeurope"], "timeout": "1m30s"}`))
	if err != nil {
		t.Fatal(err)
	}
	got := v.Interface().(demoConfig)
	if got.Inventory != "testplugin.items" || !slices.Equal(got.Locations, []string{"northeurope"}) || time.Duration(got.Timeout) != 90*time.Second {
		t.Errorf("decoded %+v", got)
	}
	v, err = b.decode(json.RawMessage(`{"inventory": "x"}`))
	if err != nil || !slices.Equal(v.Interface().(demoConfig).Locations, []string{"eastus", "westeurope"}) {
		t.Errorf("defaults: %+v, %v", v, err)
	}
	for block, want := range map[string]string{
		`{"inventory": "x", "extra": 1}`: `config: json: unknown field "extra"`,
		`{"days": "many"}`:               `config.days: string is not a int`,
		`{"timeout": "-1s"}`:             `"-1s" is not a duration such as 30s`,
		`{"timeout": 30}`:                `a duration is a string such as 30s`,
		`{} {}`:                          `config: unexpected data after the object`,
	} {
		if _, err := b.decode(json.RawMessage(block)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", block, err, want)
		}
	}
}

func TestDurationJSON(t *testing.T) {
	var d Duration
	if err := json.Unmarshal([]byte(`"1h30m"`), &d); err != nil || time.Duration(d) != 90*time.Minute {
		t.Errorf("1h30m: %v, %v", time.Duration(d), err)
	}
	if b, err := json.Marshal(Duration(90 * time.Second)); err != nil || string(b) != `"1m30s"` {
		t.Errorf("marshal: %s, %v", b, err)
	}
}

// bind refuses every mistake of a definition at once.
func TestBindRefusesMistakes(t *testing.T) {
	type tagged struct {
		Days int `json:"days" default:"7"`
	}
	for _, tc := range []struct {
		name    string
		def     Definition
		factory any
		want    []string
	}{
		{"no name, bad migrations", Definition{Migrations: fstest.MapFS{"items.up.sql": {}, "sub/0002_x.up.sql": {}}}, demoFactory,
			[]string{"definition: Name is empty", "migration items.up.sql: name must",
				"migration sub/0002_x.up.sql: not in . with the first one; keep the migrations in one folder"}},
		{"migrations in two folders", Definition{Name: "x", Migrations: fstest.MapFS{"migrations/0001_a.up.sql": {}, "old/0002_b.up.sql": {}}}, demoFactory,
			[]string{"migration old/0002_b.up.sql: not in migrations with the first one"}},
		{"a default tag", Definition{Name: "x"}, func(context.Context, tagged, *Env) (*Plugin, error) { return nil, nil },
			[]string{"config type sdk.tagged: days: a default tag is not applied"}},
		{"not a struct", Definition{Name: "x"}, func(context.Context, []string, *Env) (*Plugin, error) { return nil, nil },
			[]string{"config type []string: a config type must be a struct"}},
		{"not a factory", Definition{Name: "x"}, func(context.Context, demoConfig) (*Plugin, error) { return nil, nil },
			[]string{"factory: func(context.Context, sdk.demoConfig) (*sdk.Plugin, error) is not a func(context.Context, C, *sdk.Env) (*sdk.Plugin, error)"}},
	} {
		_, err := bind(tc.def, tc.factory)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to say %q", tc.name, err, w)
			}
		}
	}
}

// Describe says what the plugin is and what its config takes, and nothing
// of what it serves, which only Configure's answer carries: the routes
// and jobs the factory built from the block.
func TestConfigureBuildsFromTheBlock(t *testing.T) {
	var seen demoConfig
	factory := func(_ context.Context, cfg demoConfig, env *Env) (*Plugin, error) {
		seen = cfg
		if cfg.Mode == "careful" {
			return nil, errors.New("careful mode needs a second opinion")
		}
		if cfg.Days == 13 {
			return &Plugin{Routes: []Route{{Method: "GET", Path: "/unlucky"}}}, nil
		}
		route := Route{Method: "GET", Path: "/api/v1/demo/" + cfg.Inventory, Handler: func(http.ResponseWriter, *http.Request) {}}
		return &Plugin{Routes: []Route{route}, Jobs: []Job{{Name: "sync", JobType: "demo", Schedule: "@every 1h",
			Run: func(context.Context, *JobRun) (int64, error) { return 0, nil }}}}, nil
	}
	c := serveServer(t, factory, nil)
	desc, err := c.Describe(context.Background(), &pluginv1.DescribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(desc.Capabilities, protocol.CapabilityConfigureDeclarations) || len(desc.Routes)+len(desc.Jobs) != 0 ||
		!strings.Contains(string(desc.ConfigSchema), `"inventory"`) {
		t.Errorf("describe: capabilities %v, %d routes, %d jobs, schema %s", desc.Capabilities, len(desc.Routes), len(desc.Jobs), desc.ConfigSchema)
	}

	resp, err := c.Configure(context.Background(), &pluginv1.ConfigureRequest{Config: []byte(`{"inventory": "items", "days": 5}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Routes) != 1 || resp.Routes[0].Path != "/api/v1/demo/items" || len(resp.Jobs) != 1 || resp.Jobs[0].DefaultSchedule != "@every 1h" {
		t.Errorf("configure answered %v", resp)
	}
	if seen.Days != 5 || !slices.Equal(seen.Locations, []string{"eastus", "westeurope"}) {
		t.Errorf("the factory saw %+v", seen)
	}
	if code, err := get(t, c, "/api/v1/demo/items"); err != nil || code != http.StatusOK {
		t.Errorf("the built route: %d, %v", code, err)
	}

	for _, tc := range []struct {
		block string
		code  codes.Code
		want  string
	}{
		{`{"inventory": "items", "dayz": 5}`, codes.InvalidArgument, "configure p: config.dayz: unknown key"},
		{`{"days": 5}`, codes.InvalidArgument, "configure p: config.inventory: is required"},
		{`{"inventory": "items", "mode": "careful"}`, codes.FailedPrecondition, "configure p: careful mode needs a second opinion"},
		{`{"inventory": "items", "days": 13}`, codes.FailedPrecondition, "the plugin it built is not valid:\nroute GET /unlucky: Handler is nil"},
	} {
		_, err := c.Configure(context.Background(), &pluginv1.ConfigureRequest{Config: []byte(tc.block)})
		if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.want) {
			t.Errorf("%s: %v, want %s saying %q", tc.block, err, tc.code, tc.want)
		}
	}
}
