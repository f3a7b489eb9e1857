package protocol

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"google.golang.org/grpc"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// Startup is what a host does once a plugin has answered the handshake:
// Describe, the checks of the description and of the config block against
// the plugin's schema, the routes, the migrations, the Host service on the
// broker, then Configure. The host's supervisor and the test harness both
// run it, so a plugin starts the same way under test as in production.
type Startup struct {
	// Name, when set, is the name the plugin must describe itself with.
	Name string
	// Config is the plugin's config block as a JSON object ({} when
	// empty). It is checked against the schema the plugin describes and
	// sent in Configure.
	Config json.RawMessage
	// ConfigRefused, when set, turns the problems of a config block the
	// schema refuses into the error Run returns; by default it is a
	// *ConfigError.
	ConfigRefused func(problems []ConfigProblem) error
	// Described takes the description, its protocol version, name and
	// config checked; the caller checks and installs the routes here. It
	// runs before the migrations and the Host service, except for a plugin
	// with CapabilityConfigureDeclarations, which knows what it serves only
	// once configured: for one, it runs after Configure with the
	// declarations of Configure's answer in the description. An error it
	// returns ends the start-up unwrapped.
	Described func(desc *pluginv1.DescribeResponse) error
	// Migrate, when set, applies the plugin's migrations before Configure.
	Migrate func(ctx context.Context, files []*pluginv1.Migration) error
	// Host is the Host service the plugin reaches over the broker.
	Host pluginv1.HostServer
	// Configure builds the Configure request for the description; Run
	// fills in the config, the broker id of the Host service and the
	// host's capabilities.
	Configure func(desc *pluginv1.DescribeResponse) (*pluginv1.ConfigureRequest, error)
}

// Started is a plugin Startup.Run has configured.
type Started struct {
	// Describe is the plugin's description, with the declarations of
	// Configure's answer for a plugin with CapabilityConfigureDeclarations.
	Describe   *pluginv1.DescribeResponse
	Configured *pluginv1.ConfigureResponse
	// HostServer receives the server of the Host service once the plugin
	// has connected to it.
	HostServer <-chan *grpc.Server
}

// MismatchError is a plugin the host cannot run as it is: it speaks
// another protocol version, describes itself under another name, or
// describes a config schema that is not one. Starting it again cannot
// help.
type MismatchError struct{ msg string }

func (e *MismatchError) Error() string { return e.msg }

// Run starts the plugin behind pc. Each call is bounded by ctx.
func (s *Startup) Run(ctx context.Context, pc *Client) (*Started, error) {
	desc, err := pc.Describe(ctx, &pluginv1.DescribeRequest{})
	if err != nil {
		return nil, fmt.Errorf("describe: %w", err)
	}
	if desc.ProtocolVersion != Version {
		return nil, &MismatchError{fmt.Sprintf("plugin speaks protocol %d, host speaks %d", desc.ProtocolVersion, Version)}
	}
	if s.Name != "" && desc.Name != s.Name {
		return nil, &MismatchError{fmt.Sprintf("binary describes itself as %q, declared as %q", desc.Name, s.Name)}
	}
	config := s.Config
	if len(config) == 0 {
		config = json.RawMessage("{}")
	}
	problems, err := CheckConfig(desc.ConfigSchema, config)
	if err != nil {
		return nil, &MismatchError{err.Error()}
	}
	if len(problems) > 0 {
		if s.ConfigRefused != nil {
			return nil, s.ConfigRefused(problems)
		}
		return nil, &ConfigError{Problems: problems}
	}
	declares := slices.Contains(desc.Capabilities, CapabilityConfigureDeclarations)
	if !declares {
		if err := s.Described(desc); err != nil {
			return nil, err
		}
	}
	if s.Migrate != nil && len(desc.Migrations) > 0 {
		if err := s.Migrate(ctx, desc.Migrations); err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
	}
	hostID := pc.Broker.NextId()
	served := make(chan *grpc.Server, 1)
	go pc.Broker.AcceptAndServe(hostID, func(opts []grpc.ServerOption) *grpc.Server {
		srv := grpc.NewServer(opts...)
		pluginv1.RegisterHostServer(srv, s.Host)
		served <- srv
		return srv
	})
	req, err := s.Configure(desc)
	if err != nil {
		return nil, err
	}
	req.Config = config
	req.HostBrokerId = hostID
	req.HostCapabilities = HostCapabilities()
	resp, err := pc.Configure(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("configure: %w", err)
	}
	if declares {
		desc.Routes, desc.Fragments, desc.Pages = resp.Routes, resp.Fragments, resp.Pages
		desc.Nav, desc.Jobs, desc.Datasets, desc.EventTypes = resp.Nav, resp.Jobs, resp.Datasets, resp.EventTypes
		if err := s.Described(desc); err != nil {
			return nil, err
		}
	}
	return &Started{Describe: desc, Configured: resp, HostServer: served}, nil
}
