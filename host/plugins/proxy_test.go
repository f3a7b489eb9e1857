package plugins

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// streamPlugin serves p as a plugin process does, over gRPC on a loopback
// listener, configured, and returns the client the supervisor would hold.
func streamPlugin(t *testing.T, p *sdk.Plugin) *protocol.Client {
	t.Helper()
	logger := hclog.NewNullLogger()
	gs := sdk.GRPCServer(logger)(nil)
	pluginv1.RegisterPluginServer(gs, sdk.NewGRPCPlugin(p, logger).Impl)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	c := &protocol.Client{PluginClient: pluginv1.NewPluginClient(conn), Conn: conn}
	if _, err := c.Configure(context.Background(), &pluginv1.ConfigureRequest{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// proxyApp proxies every POST to the plugin over the HandleHTTP stream and
// answers 503 with the error when the exchange breaks.
func proxyApp(rpc *protocol.Client) *fiber.App {
	app := fiber.New(fiber.Config{BodyLimit: 64 << 20})
	app.Post("/*", func(c *fiber.Ctx) error {
		// A stalled exchange fails the test in seconds, not in the
		// proxy's five minutes.
		ctx, cancel := context.WithTimeout(c.UserContext(), 20*time.Second)
		defer cancel()
		c.SetUserContext(ctx)
		r := &Route{Plugin: "p", Method: fiber.MethodPost, Pattern: c.Path()}
		if err := proxyStream(c, rpc, r, nil, nil, "req-1"); err != nil {
			return fiber.NewError(fiber.StatusServiceUnavailable, fmt.Sprintf("proxy: %v", err))
		}
		return nil
	})
	return app
}

// TestProxyStreamRelaysEarlyAnswers sends bodies far larger than gRPC's
// flow-control windows to handlers that answer before reading all of them.
// The plugin's answer must reach the caller, not a 503 for the rest of the
// body that could not be sent.
func TestProxyStreamRelaysEarlyAnswers(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /unread", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	})
	mux.HandleFunc("POST /partly", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.CopyN(io.Discard, r.Body, 1<<20)
		w.Header().Set("X-Read", strconv.FormatInt(n, 10))
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	})
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = io.Copy(w, r.Body)
	})
	rpc := streamPlugin(t, &sdk.Plugin{Name: "p", Handler: mux})

	app := proxyApp(rpc)

	payload := make([]byte, 10<<20)
	_, _ = rand.Read(payload)
	for _, tc := range []struct {
		path     string
		status   int
		body     []byte
		readHead string
	}{
		{path: "/unread", status: http.StatusRequestEntityTooLarge, body: []byte("too large\n")},
		{path: "/partly", status: http.StatusRequestEntityTooLarge, body: []byte("too large\n"), readHead: strconv.Itoa(1 << 20)},
		{path: "/echo", status: http.StatusOK, body: payload},
	} {
		t.Run(tc.path[1:], func(t *testing.T) {
			// Several times: whether the plugin's answer or the failed
			// send comes first is up to the scheduler.
			for i := range 5 {
				req := httptest.NewRequest(http.MethodPost, tc.path, bytes.NewReader(payload))
				resp, err := app.Test(req, -1)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status || !bytes.Equal(got, tc.body) {
					t.Fatalf("try %d: %d, %d bytes %.60q; want %d, %d bytes", i, resp.StatusCode, len(got), got, tc.status, len(tc.body))
				}
				if read := resp.Header.Get("X-Read"); read != tc.readHead {
					t.Errorf("try %d: the handler read %s bytes, want %s", i, read, tc.readHead)
				}
			}
		})
	}
}

// TestProxyStreamReportsBrokenExchanges keeps a failure a failure: a
// handler that panics answers nothing, which the proxy reports as an error
// (the caller's 503), whether or not it read the body.
func TestProxyStreamReportsBrokenExchanges(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /boom", func(http.ResponseWriter, *http.Request) { panic("handler bug") })
	rpc := streamPlugin(t, &sdk.Plugin{Name: "p", Handler: mux})
	app := proxyApp(rpc)
	for _, size := range []int{0, 10 << 20} {
		req := httptest.NewRequest(http.MethodPost, "/boom", bytes.NewReader(make([]byte, size)))
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(got, []byte("panic")) {
			t.Errorf("%d-byte body to a panicking handler: %d %q, want 503 with the plugin's error", size, resp.StatusCode, got)
		}
	}
}
