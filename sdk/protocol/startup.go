package protocol

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// Startup is what a host does once a plugin has answered the handshake:
// Describe, the checks of the description, the routes, the migrations,
// the Host service on the broker, then Configure. The host's supervisor
// and the test harness both run it, so a plugin starts the same way under
// test as in production.
type Startup struct {
	// Name, when set, is the name the plugin must describe itself with.
	Name string
	// Described takes the description, its protocol version and name
	// checked, before the migrations and the Host service; the caller
	// checks and installs the routes here. An error it returns ends the
	// start-up unwrapped.
	Described func(desc *pluginv1.DescribeResponse) error
	// Migrate, when set, applies the plugin's migrations before Configure.
	Migrate func(ctx context.Context, files []*pluginv1.Migration) error
	// Host is the Host service the plugin reaches over the broker.
	Host pluginv1.HostServer
	// Configure builds the Configure request for the description; Run
	// fills in the broker id of the Host service and the host's
	// capabilities.
	Configure func(desc *pluginv1.DescribeResponse) (*pluginv1.ConfigureRequest, error)
}

// Started is a plugin Startup.Run has configured.
type Started struct {
	Describe   *pluginv1.DescribeResponse
	Configured *pluginv1.ConfigureResponse
	// HostServer receives the server of the Host service once the plugin
	// has connected to it.
	HostServer <-chan *grpc.Server
}

// MismatchError is a plugin that is not the one the host runs: it speaks
// another protocol version or describes itself under another name.
// Starting it again cannot help.
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
	if err := s.Described(desc); err != nil {
		return nil, err
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
	req.HostBrokerId = hostID
	req.HostCapabilities = HostCapabilities()
	resp, err := pc.Configure(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("configure: %w", err)
	}
	return &Started{Describe: desc, Configured: resp, HostServer: served}, nil
}
