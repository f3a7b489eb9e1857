// Package protocol is the go-plugin glue of the Steward plugin protocol: the
// handshake, the plugin map, the gRPC plugin that connects a host-side
// client to a plugin-side server, the runner that starts a plugin binary,
// and how route patterns match request paths. Host, plugins and the test
// harness all import it, so the whole contract lives in one place.
package protocol

import (
	"context"
	"errors"
	"io"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// Version is the protocol's major version; it matches the proto package.
const Version = 1

// PluginName is the key of the one plugin kind in the plugin map.
const PluginName = "steward"

// Handshake is shared by host and plugins. A binary started without the
// cookie refuses to run as a plugin, which stops a user running it by hand
// into a confusing hang.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  Version,
	MagicCookieKey:   "STEWARD_PLUGIN",
	MagicCookieValue: "7f1c0b52-9d4e-4c8e-a3b1-stewardhq-plugin-v1",
}

// GRPCPlugin connects the generated Plugin service to go-plugin. On the
// plugin side Impl is set; the host leaves it nil and calls GRPCClient.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl pluginv1.PluginServer
	// OnBroker, when set on the plugin side, receives the broker so the
	// plugin can dial the Host service whose id arrives in Configure.
	OnBroker func(*plugin.GRPCBroker)
}

// Client is what the host holds for one running plugin.
type Client struct {
	pluginv1.PluginClient
	Broker *plugin.GRPCBroker
	Conn   *grpc.ClientConn
}

// GRPCServer registers the plugin's service on the go-plugin gRPC server.
func (p *GRPCPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	if p.OnBroker != nil {
		p.OnBroker(broker)
	}
	pluginv1.RegisterPluginServer(s, p.Impl)
	return nil
}

// GRPCClient returns the host-side client.
func (p *GRPCPlugin) GRPCClient(_ context.Context, broker *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &Client{PluginClient: pluginv1.NewPluginClient(c), Broker: broker, Conn: c}, nil
}

// PluginMap is the go-plugin plugin set for a server or client.
func PluginMap(p *GRPCPlugin) map[string]plugin.Plugin {
	return map[string]plugin.Plugin{PluginName: p}
}

// Headers of the direct HTTP data plane (a unix socket the host offers in
// Configure). The host strips any such header a caller sent.
const (
	HeaderToken     = "X-Steward-Plugin-Token"
	HeaderPrincipal = "X-Steward-Principal"
	HeaderRequestID = "X-Request-Id"
	HeaderRoute     = "X-Steward-Route"
)

// InlineBody is the largest response body that crosses the data socket
// whole, with its length: the plugin holds back a body up to this size to
// send it in one piece, and the host reads one of known length up to this
// size before it answers. A longer body, or one the handler flushes,
// streams. It holds a page of a hundred resources with their tags and
// properties (about 95 kB), which the host then compresses once for every
// answer that repeats it rather than as a stream each time.
const InlineBody = 256 << 10

// EnvProfileDir names a directory in which a plugin built with the SDK
// writes a CPU profile of its run and, when the host stops it, an
// allocation profile. The host passes it on to its plugins; it is for
// measuring, and unset a plugin profiles nothing.
const EnvProfileDir = "STEWARD_PLUGIN_PROFILE_DIR"

// StrippedHeaders never reach a plugin: the host has already authenticated
// the caller, and a plugin must not see or replay credentials, nor a caller
// forge the headers the host sets on the data socket. The host and the test
// harness delete them from every request before it is passed on.
var StrippedHeaders = [...]string{
	"Authorization", "Cookie", "X-Api-Key",
	HeaderToken, HeaderPrincipal, HeaderRoute,
}

// Capabilities are how either side adds optional behaviour without a new
// protocol version: a plugin names what it supports in
// DescribeResponse.capabilities, the host what it offers in
// ConfigureRequest.host_capabilities, each side uses a feature only when
// the other names it, and a name either side does not know is ignored.
// A name, once released, keeps its meaning.

// CapabilityHTTPSocket announces that the plugin can serve HTTP on the unix
// socket the host offers, next to the HandleHTTP stream.
const CapabilityHTTPSocket = "http.socket"

// CapabilityConfigureDeclarations announces that the plugin builds what it
// serves from its config: its routes, fragments, pages, nav, jobs and
// datasets come in ConfigureResponse, and its DescribeResponse has none.
const CapabilityConfigureDeclarations = "configure.declarations"

// Capabilities a host offers a plugin.
const (
	// HostCapabilityDatasets: Host.ReadDataset relays the datasets other
	// plugins publish.
	HostCapabilityDatasets = "host.datasets"
	// HostCapabilityRequestTimeout: the host gives up on a request the
	// plugin has not answered within its request_timeout, and ends the
	// request's context in the plugin when it does.
	HostCapabilityRequestTimeout = "request.timeout"
	// HostCapabilityMemoryLimit: the plugin runs with GOMEMLIMIT below a
	// memory limit the host enforces by restarting it.
	HostCapabilityMemoryLimit = "memory.limit"
	// HostCapabilityIsolatedEnv: the plugin's environment holds none of the
	// host's settings; what it needs arrives in Configure.
	HostCapabilityIsolatedEnv = "env.isolated"
	// HostCapabilitySyncFailures: MarkFresh records a failure (its failure
	// field) rather than taking it for a success.
	HostCapabilitySyncFailures = "freshness.failures"
	// HostCapabilityEvents: Host.RaiseEvent notifies subscribers of the
	// events a plugin raises, of the types it declares.
	HostCapabilityEvents = "notifications.events"
)

// HostCapabilities are the capabilities of this version's host.
func HostCapabilities() []string {
	return []string{HostCapabilityDatasets, HostCapabilityRequestTimeout, HostCapabilityMemoryLimit, HostCapabilityIsolatedEnv, HostCapabilitySyncFailures, HostCapabilityEvents}
}

// RelayDataset streams a published dataset from the plugin that owns it to
// the plugin that asked the host for it; the host and the test harness's
// host both serve Host.ReadDataset with it.
func RelayDataset(owner pluginv1.PluginClient, req *pluginv1.ReadDatasetRequest, out pluginv1.Host_ReadDatasetServer) error {
	in, err := owner.ReadDataset(out.Context(), req)
	if err != nil {
		return err
	}
	for {
		chunk, err := in.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := out.Send(chunk); err != nil {
			return err
		}
	}
}
