package plugintest

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/stewardhq/steward/sdk/protocol"
)

// Start runs the plugin binary as the host does — go-plugin's client with
// the Steward handshake, gRPC only, and the host's protocol.NewRunner — and
// returns it described and
// configured. The process is killed when the test ends; on Linux it is also
// killed if the test binary dies first.
func Start(t testing.TB, binary string, opts Options) *Harness {
	t.Helper()
	opts = withDefaults(t, opts)
	socketPath := dataSocketPath(t, opts)
	name := filepath.Base(binary)
	logger := newLogger(t, name)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  protocol.Handshake,
		Plugins:          protocol.PluginMap(&protocol.GRPCPlugin{}),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           logger,
		StartTimeout:     callTimeout,
		RunnerFunc: func(l hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			return protocol.NewRunner(l, spec, binary, nil, nil)
		},
		SyncStdout: protocol.LogWriter(logger, "stdout"),
		SyncStderr: protocol.LogWriter(logger, "stderr"),
	})
	t.Cleanup(client.Kill)
	rpcClient, err := client.Client()
	if err != nil {
		t.Fatalf("plugintest: start %s: %v", binary, err)
	}
	raw, err := rpcClient.Dispense(protocol.PluginName)
	if err != nil {
		t.Fatalf("plugintest: dispense %s: %v", name, err)
	}
	h, err := configure(t, raw.(*protocol.Client), opts, socketPath)
	if err != nil {
		t.Fatalf("plugintest: %s: %v", name, err)
	}
	return h
}

// newSocketClient reaches the plugin's data socket; the request's context
// bounds each exchange, as the test chooses.
func newSocketClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
}
