package protocol

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-plugin"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// scripted is a plugin whose answers a test writes, and which records the
// calls it gets, in order, on a log it shares with the host's side.
type scripted struct {
	pluginv1.UnimplementedPluginServer
	desc      *pluginv1.DescribeResponse
	configure *pluginv1.ConfigureResponse
	log       *callLog
	config    []byte
}

type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(call string) {
	l.mu.Lock()
	l.calls = append(l.calls, call)
	l.mu.Unlock()
}

func (s *scripted) Describe(context.Context, *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	s.log.add("describe")
	return s.desc, nil
}

func (s *scripted) Configure(_ context.Context, req *pluginv1.ConfigureRequest) (*pluginv1.ConfigureResponse, error) {
	s.log.add("configure")
	s.config = req.Config
	return s.configure, nil
}

// startScripted runs Startup against p over a real go-plugin connection
// with a broker, as the host's supervisor and the harness do.
func startScripted(t *testing.T, p *scripted, config string) (*Started, []*pluginv1.Route, error) {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, PluginMap(&GRPCPlugin{Impl: p}))
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	var routes []*pluginv1.Route
	s := &Startup{
		Name:   "demo",
		Config: []byte(config),
		ConfigRefused: func(problems []ConfigProblem) error {
			p.log.add("refused " + problems[0].Key)
			return &ConfigError{Problems: problems}
		},
		Described: func(desc *pluginv1.DescribeResponse) error {
			p.log.add("described")
			routes = desc.Routes
			return nil
		},
		Migrate: func(context.Context, []*pluginv1.Migration) error {
			p.log.add("migrate")
			return nil
		},
		Host: pluginv1.UnimplementedHostServer{},
		Configure: func(*pluginv1.DescribeResponse) (*pluginv1.ConfigureRequest, error) {
			return &pluginv1.ConfigureRequest{}, nil
		},
	}
	started, err := s.Run(context.Background(), raw.(*Client))
	return started, routes, err
}

var (
	described  = &pluginv1.Route{Method: "GET", Path: "/api/v1/demo/described"}
	configured = &pluginv1.Route{Method: "GET", Path: "/api/v1/demo/configured"}
	migrations = []*pluginv1.Migration{{Name: "0001_demo.up.sql", Content: []byte("SELECT 1")}}
	daysSchema = []byte(`{"type": "object", "additionalProperties": false, "properties": {"days": {"type": "integer"}}}`)
)

// A plugin without CapabilityConfigureDeclarations has its routes checked
// from its description before anything is migrated; one with it is
// migrated and configured first, and its routes are those of Configure's
// answer. Either gets the config block, {} when it is empty.
func TestStartupInstallsDeclarationsOfEitherKind(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plugin *scripted
		config string
		calls  []string
		route  *pluginv1.Route
		sent   string
	}{
		{"declared in Describe", &scripted{
			desc:      &pluginv1.DescribeResponse{Name: "demo", ProtocolVersion: Version, Routes: []*pluginv1.Route{described}, Migrations: migrations},
			configure: &pluginv1.ConfigureResponse{},
		}, "", []string{"describe", "described", "migrate", "configure"}, described, "{}"},
		{"built from the config", &scripted{
			desc: &pluginv1.DescribeResponse{Name: "demo", ProtocolVersion: Version, Capabilities: []string{CapabilityConfigureDeclarations},
				ConfigSchema: daysSchema, Migrations: migrations},
			configure: &pluginv1.ConfigureResponse{Routes: []*pluginv1.Route{configured}},
		}, `{"days": 3}`, []string{"describe", "migrate", "configure", "described"}, configured, `{"days": 3}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.plugin.log = &callLog{}
			started, routes, err := startScripted(t, tc.plugin, tc.config)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tc.plugin.log.calls, tc.calls) {
				t.Errorf("calls %v, want %v", tc.plugin.log.calls, tc.calls)
			}
			if len(routes) != 1 || routes[0].Path != tc.route.Path || len(started.Describe.Routes) != 1 || started.Describe.Routes[0].Path != tc.route.Path {
				t.Errorf("described routes %v, started with %v; want %s", routes, started.Describe.Routes, tc.route.Path)
			}
			if string(tc.plugin.config) != tc.sent {
				t.Errorf("configured with %s, want %s", tc.plugin.config, tc.sent)
			}
		})
	}
}

// A block the schema refuses ends the start-up before anything is
// migrated or configured; a schema the host cannot use is a mismatch no
// restart cures.
func TestStartupRefusesTheConfigFirst(t *testing.T) {
	p := &scripted{log: &callLog{}, desc: &pluginv1.DescribeResponse{Name: "demo", ProtocolVersion: Version,
		Capabilities: []string{CapabilityConfigureDeclarations}, ConfigSchema: daysSchema, Migrations: migrations}}
	_, _, err := startScripted(t, p, `{"dayz": 3}`)
	var cfg *ConfigError
	if !errors.As(err, &cfg) || !slices.Equal(p.log.calls, []string{"describe", "refused dayz"}) {
		t.Errorf("refused block: %v after %v", err, p.log.calls)
	}

	p = &scripted{log: &callLog{}, desc: &pluginv1.DescribeResponse{Name: "demo", ProtocolVersion: Version, ConfigSchema: []byte(`{"$ref": "https://example.com/s.json"}`)}}
	_, _, err = startScripted(t, p, `{}`)
	var mismatch *MismatchError
	if !errors.As(err, &mismatch) || !strings.Contains(err.Error(), "$ref is not supported") || !slices.Equal(p.log.calls, []string{"describe"}) {
		t.Errorf("unusable schema: %v after %v", err, p.log.calls)
	}
}
