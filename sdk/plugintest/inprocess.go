package plugintest

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/internal/serving"
	"github.com/stewardhq/steward/sdk/protocol"
)

// New serves the plugin def and factory define in the test process, as
// sdk.Serve(def, factory) would, and returns it described and configured
// with opts.Config. The plugin is the server sdk.Serve runs, behind a real
// go-plugin gRPC server whose broker carries the Host service, so HTTP,
// jobs and Host calls cross the same protocol as in production, and with
// Options.DataSocket HTTP goes over the plugin's data socket; only the
// process boundary is missing. Everything is stopped when the test ends.
// A definition sdk.Serve refuses, a config block the plugin's schema
// refuses, a factory error and a plugin Validate rejects each fail the
// test, saying why.
func New[C any](t testing.TB, def sdk.Definition, factory func(ctx context.Context, cfg C, env *sdk.Env) (*sdk.Plugin, error), opts Options) *Harness {
	t.Helper()
	opts = withDefaults(t, opts)
	socketPath := dataSocketPath(t, opts)
	logger := newLogger(t, def.Name)
	gp, err := serving.NewGRPCPlugin(def, factory, logger)
	if err != nil {
		t.Fatalf("plugintest: plugin %q is not valid:\n%v", def.Name, err)
	}
	if c, ok := gp.Impl.(io.Closer); ok {
		// After the server has stopped, so that no Configure opens another.
		t.Cleanup(func() { _ = c.Close() })
	}

	ctx, stop := context.WithCancel(context.Background())
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	go plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: protocol.Handshake,
		Plugins:         protocol.PluginMap(gp),
		GRPCServer:      serving.GRPCServer(logger),
		Logger:          logger,
		Test:            &plugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed},
	})
	var rpcClient plugin.ClientProtocol
	t.Cleanup(func() {
		// A client reattached in test mode leaves the server running on
		// Kill; closing it shuts the server down through go-plugin's
		// controller service. Cancelling Serve's context too would stop the
		// server a second time, concurrently, which go-plugin does not
		// guard against; the context is the way out only for a server no
		// client reached or one that does not stop.
		if rpcClient != nil {
			_ = rpcClient.Close()
			select {
			case <-closed:
			case <-time.After(callTimeout):
			}
		}
		stop()
		<-closed
	})

	var cfg *plugin.ReattachConfig
	select {
	case cfg = <-reattach:
	case <-closed:
		t.Fatal("plugintest: the in-process plugin server did not start; see the log")
	case <-time.After(callTimeout):
		t.Fatal("plugintest: the in-process plugin server did not start in time")
	}
	cfg.ReattachFunc = func() (runner.AttachedRunner, error) { return attached{done: closed}, nil }
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  protocol.Handshake,
		Plugins:          protocol.PluginMap(&protocol.GRPCPlugin{}),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Reattach:         cfg,
		Logger:           logger,
	})
	c, err := client.Client()
	if err != nil {
		t.Fatalf("plugintest: connect to %s: %v", def.Name, err)
	}
	rpcClient = c
	raw, err := c.Dispense(protocol.PluginName)
	if err != nil {
		t.Fatalf("plugintest: dispense %s: %v", def.Name, err)
	}
	h, err := configure(t, raw.(*protocol.Client), opts, socketPath)
	if err != nil {
		t.Fatalf("plugintest: %s: %v", def.Name, err)
	}
	return h
}

// attached stands for the plugin "process" go-plugin reattaches to, which
// here is the Serve goroutine: it is done when Serve returns.
type attached struct{ done <-chan struct{} }

func (a attached) Wait(context.Context) error {
	<-a.done
	return nil
}

func (attached) Kill(context.Context) error { return nil }
func (attached) ID() string                 { return "in-process" }

func (attached) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (attached) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }
