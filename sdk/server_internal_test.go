package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/internal/serving"
	"github.com/stewardhq/steward/sdk/protocol"
)

// static is the factory of a plugin that needs no config.
func static(p *Plugin) func(context.Context, struct{}, *Env) (*Plugin, error) {
	return func(context.Context, struct{}, *Env) (*Plugin, error) { return p, nil }
}

// serveServer runs the server Serve runs — same service, same interceptors
// — for plugin "p" built by factory on a loopback listener, without
// go-plugin around it, and configures it with cfg unless cfg is nil.
func serveServer(t *testing.T, factory any, cfg *pluginv1.ConfigureRequest) pluginv1.PluginClient {
	t.Helper()
	logger := hclog.NewNullLogger()
	b, err := bind(Definition{Name: "p"}, factory)
	if err != nil {
		t.Fatal(err)
	}
	gs := serving.GRPCServer(logger)(nil)
	pluginv1.RegisterPluginServer(gs, newServer(b, logger))
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
	c := pluginv1.NewPluginClient(conn)
	if cfg != nil {
		if _, err := c.Configure(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func get(t *testing.T, c pluginv1.PluginClient, path string) (int32, error) {
	t.Helper()
	stream, err := c.HandleHTTP(context.Background())
	if err != nil {
		return 0, err
	}
	head := &pluginv1.HTTPRequestHead{Method: "GET", Path: path}
	// A server that ends the stream at once (unconfigured, say) may do so
	// before the head is sent: Send then returns io.EOF, and the stream's
	// status is what Recv returns.
	if err := stream.Send(&pluginv1.HTTPRequestPart{Part: &pluginv1.HTTPRequestPart_Head{Head: head}}); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	if err := stream.CloseSend(); err != nil {
		return 0, err
	}
	var code int32
	for {
		part, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return code, nil
		}
		if err != nil {
			return 0, err
		}
		if h := part.GetHead(); h != nil {
			code = h.Status
		}
	}
}

func TestServerSurvivesPanics(t *testing.T) {
	c := serveServer(t, static(&Plugin{
		Routes: []Route{
			{Method: "GET", Path: "/boom", Handler: func(http.ResponseWriter, *http.Request) { panic("handler bug") }},
			{Method: "GET", Path: "/ok", Handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }},
		},
		Jobs:        []Job{{Name: "boom", JobType: "demo", Run: func(context.Context, *JobRun) (int64, error) { panic("job bug") }}},
		CheckHealth: func(context.Context) Health { panic("health bug") },
	}), &pluginv1.ConfigureRequest{})

	if _, err := get(t, c, "/boom"); status.Code(err) != codes.Internal {
		t.Errorf("panicking handler: %v, want Internal", err)
	}
	stream, err := c.RunJob(context.Background(), &pluginv1.RunJobRequest{Job: "boom"})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Internal {
		t.Errorf("panicking job: %v, want Internal", err)
	}
	if _, err := c.CheckHealth(context.Background(), &pluginv1.CheckHealthRequest{}); status.Code(err) != codes.Internal {
		t.Errorf("panicking unary call: %v, want Internal", err)
	}
	if code, err := get(t, c, "/ok"); err != nil || code != http.StatusNoContent {
		t.Errorf("after the panics: %d, %v", code, err)
	}
}

func TestServerStreamsDatasetsInBatches(t *testing.T) {
	c := serveServer(t, static(&Plugin{Datasets: []Dataset{{
		Name: "p.rows",
		Read: func(_ context.Context, req DatasetRequest, emit func(any) error) error {
			for i := range 700 {
				if err := emit(map[string]any{"i": i, "tenants": req.TenantIDs}); err != nil {
					return err
				}
			}
			return nil
		},
	}}}), &pluginv1.ConfigureRequest{})
	stream, err := c.ReadDataset(context.Background(), &pluginv1.ReadDatasetRequest{Dataset: "p.rows", TenantIds: []string{"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	var last []byte
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(chunk.Records))
		last = chunk.Records[len(chunk.Records)-1]
	}
	if !slices.Equal(sizes, []int{256, 256, 188}) || string(last) != `{"i":699,"tenants":["t1"]}` {
		t.Errorf("chunks %v, last record %s", sizes, last)
	}
}

func TestServerRefusesMalformedCalls(t *testing.T) {
	c := serveServer(t, static(&Plugin{}), &pluginv1.ConfigureRequest{})
	stream, err := c.HandleHTTP(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&pluginv1.HTTPRequestPart{Part: &pluginv1.HTTPRequestPart_Body{Body: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.InvalidArgument {
		t.Errorf("body before head: %v, want InvalidArgument", err)
	}
	if code, err := get(t, c, "/anything"); err != nil || code != http.StatusNotFound {
		t.Errorf("plugin without a handler: %d, %v; want 404", code, err)
	}
	stream2, err := c.RunJob(context.Background(), &pluginv1.RunJobRequest{Job: "nope"})
	if err == nil {
		_, err = stream2.Recv()
	}
	if status.Code(err) != codes.NotFound {
		t.Errorf("unknown job: %v, want NotFound", err)
	}
}

func TestServerNeedsConfigure(t *testing.T) {
	c := serveServer(t, static(&Plugin{Jobs: []Job{{Name: "j", Run: func(context.Context, *JobRun) (int64, error) { return 1, nil }}}}), nil)
	if _, err := get(t, c, "/x"); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("HTTP before Configure: %v, want FailedPrecondition", err)
	}
	stream, err := c.RunJob(context.Background(), &pluginv1.RunJobRequest{Job: "j"})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("job before Configure: %v, want FailedPrecondition", err)
	}
}

func TestDataSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "sdk-socket-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	handler := func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"info": Info(r.Context()), "token_seen": r.Header.Get(protocol.HeaderToken) != ""})
	}

	short := filepath.Join(dir, "short.sock")
	c := serveServer(t, static(&Plugin{Routes: []Route{{Method: "GET", Path: "/x", Handler: handler}}}), &pluginv1.ConfigureRequest{})
	resp, err := c.Configure(context.Background(), &pluginv1.ConfigureRequest{DataSocket: short, DataToken: "too-short"})
	if err != nil || resp.DataSocketReady {
		t.Errorf("short token: ready %v, %v; want the socket refused", resp.GetDataSocketReady(), err)
	}
	if _, err := os.Stat(short); err == nil {
		t.Error("a socket was opened for a short token")
	}

	sock := filepath.Join(dir, "data.sock")
	const token = "0123456789abcdef0123456789abcdef"
	if resp, err := c.Configure(context.Background(), &pluginv1.ConfigureRequest{DataSocket: sock, DataToken: token}); err != nil || !resp.DataSocketReady {
		t.Fatalf("configure with socket: %v, %v", resp, err)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode: %v, %v; want 0600", fi, err)
	}
	principal, err := protocol.EncodePrincipal(&pluginv1.Principal{Id: "u1", TenantIds: []string{"t1"}})
	if err != nil {
		t.Fatal(err)
	}

	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	t.Cleanup(client.CloseIdleConnections)
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
	}{
		{"no token", map[string]string{protocol.HeaderPrincipal: principal}, http.StatusUnauthorized},
		{"wrong token", map[string]string{protocol.HeaderToken: token[1:] + "x"}, http.StatusUnauthorized},
		{"bad principal", map[string]string{protocol.HeaderToken: token, protocol.HeaderPrincipal: "%%%"}, http.StatusBadRequest},
		{"right token", map[string]string{protocol.HeaderToken: token, protocol.HeaderPrincipal: principal, protocol.HeaderRequestID: "r1", protocol.HeaderRoute: "/x"}, http.StatusOK},
	} {
		r, _ := http.NewRequest("GET", "http://plugin/x", nil)
		for k, v := range tc.headers {
			r.Header.Set(k, v)
		}
		resp, err := client.Do(r)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, body, tc.status)
		}
		want := `{"info":{"Principal":{"id":"u1","email":"","name":"","roles":null,"is_admin":false,"kind":"","tenant_ids":["t1"]},"RequestID":"r1","Route":"/x"},"token_seen":false}` + "\n"
		if tc.status == http.StatusOK && string(body) != want {
			t.Errorf("%s: handler saw %s", tc.name, body)
		}
	}
}

// A job that syncs tenants in parallel reports progress from every worker;
// unserialized sends on the stream used to fail the whole run.
func TestJobProgressFromManyGoroutines(t *testing.T) {
	const workers, each = 8, 50
	c := serveServer(t, static(&Plugin{Jobs: []Job{{Name: "j", JobType: "demo", Run: func(ctx context.Context, run *JobRun) (int64, error) {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range workers {
			wg.Go(func() {
				<-start
				for i := range each {
					run.Progress(int64(w*each+i), workers*each, "tenant")
				}
			})
		}
		close(start)
		wg.Wait()
		return 42, nil
	}}}}), &pluginv1.ConfigureRequest{})
	for range 20 {
		stream, err := c.RunJob(context.Background(), &pluginv1.RunJobRequest{Job: "j"})
		if err != nil {
			t.Fatal(err)
		}
		var progress int
		var result *pluginv1.JobResult
		for {
			ev, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("run failed after %d progress events: %v", progress, err)
			}
			if ev.GetProgress() != nil {
				progress++
			}
			if r := ev.GetResult(); r != nil {
				result = r
			}
		}
		if progress != workers*each || result.GetRecordsProcessed() != 42 {
			t.Fatalf("%d progress events, result %v; want %d and 42", progress, result, workers*each)
		}
	}
}

// Each plugin served in a process has its own registry: two that register
// the same metric both configure, and each reports only its own value.
func TestMetricsPerPlugin(t *testing.T) {
	counting := func(n float64) func(context.Context, struct{}, *Env) (*Plugin, error) {
		return func(_ context.Context, _ struct{}, env *Env) (*Plugin, error) {
			c := prometheus.NewCounter(prometheus.CounterOpts{Name: "demo_runs_total", Help: "Runs."})
			if err := env.Metrics.Register(c); err != nil {
				return nil, err
			}
			c.Add(n)
			return &Plugin{}, nil
		}
	}
	for name, n := range map[string]float64{"a": 2, "b": 5} {
		c := serveServer(t, counting(n), &pluginv1.ConfigureRequest{})
		resp, err := c.CollectMetrics(context.Background(), &pluginv1.CollectMetricsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("demo_runs_total %g\n", n); !strings.Contains(string(resp.PrometheusText), want) {
			t.Errorf("plugin %s reported %q, want %q", name, resp.PrometheusText, want)
		}
	}
}

// TestConfigureHandsOverHostCapabilities: the capabilities the host names
// reach the plugin's Env as sent, names the SDK does not know included;
// a host that names none (an older one) configures the plugin all the same.
func TestConfigureHandsOverHostCapabilities(t *testing.T) {
	for _, sent := range [][]string{
		{protocol.HostCapabilityRequestTimeout, "some.later.feature"},
		nil,
	} {
		var got []string
		configured := false
		serveServer(t, func(_ context.Context, _ struct{}, env *Env) (*Plugin, error) {
			got, configured = env.HostCapabilities, true
			return &Plugin{}, nil
		}, &pluginv1.ConfigureRequest{HostCapabilities: sent})
		if !configured || !slices.Equal(got, sent) {
			t.Errorf("host capabilities %q reached the plugin as %q (configured: %t)", sent, got, configured)
		}
	}
}

// A body of up to protocol.InlineBody bytes crosses the data socket whole,
// with its length, however the handler wrote it; a longer one, or one the
// handler flushes, streams in chunks. Either way the caller gets what
// net/http would have sent: the head as it stood when the status was set,
// trailers, a handler's own Content-Length, no length on a 204.
func TestDataSocketSendsSmallBodiesWhole(t *testing.T) {
	dir, err := os.MkdirTemp("", "sdk-socket-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	piece := strings.Repeat("x", 1000)
	writes := func(n int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			for range n {
				_, _ = io.WriteString(w, piece)
			}
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /small", writes(20))
	mux.Handle("GET /limit", writes(protocol.InlineBody/1000))
	mux.Handle("GET /large", writes(protocol.InlineBody/1000+1))
	mux.HandleFunc("GET /flushed", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, piece)
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, piece)
	})
	mux.HandleFunc("GET /late-header", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Early", "1")
		w.WriteHeader(http.StatusCreated)
		w.Header().Set("X-Late", "1")
		_, _ = io.WriteString(w, piece)
	})
	mux.HandleFunc("GET /declared", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "1000")
		_, _ = io.WriteString(w, piece)
	})
	mux.HandleFunc("GET /empty", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /trailer", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		_, _ = io.WriteString(w, piece)
		w.Header().Set("X-Sum", "42")
	})
	mux.HandleFunc("GET /prefixed-trailer", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, piece)
		w.Header().Set(http.TrailerPrefix+"X-Sum", "42")
	})

	b, err := bind(Definition{Name: "p"}, static(&Plugin{}))
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(b, hclog.NewNullLogger())
	sock := filepath.Join(dir, "data.sock")
	const token = "0123456789abcdef0123456789abcdef"
	if err := s.listenSocket(sock, token, mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	t.Cleanup(client.CloseIdleConnections)

	for _, tc := range []struct {
		path   string
		status int
		size   int
		// length is the Content-Length the response carries, -1 for none
		// (chunks, or no body).
		length int64
	}{
		{"/small", http.StatusOK, 20000, 20000},
		{"/limit", http.StatusOK, protocol.InlineBody / 1000 * 1000, protocol.InlineBody / 1000 * 1000},
		{"/large", http.StatusOK, (protocol.InlineBody/1000 + 1) * 1000, -1},
		{"/flushed", http.StatusOK, 2000, -1},
		{"/late-header", http.StatusCreated, 1000, 1000},
		{"/declared", http.StatusOK, 1000, 1000},
		{"/empty", http.StatusNoContent, 0, 0},
		{"/trailer", http.StatusOK, 1000, -1},
		{"/prefixed-trailer", http.StatusOK, 1000, -1},
	} {
		req, _ := http.NewRequest("GET", "http://plugin"+tc.path, nil)
		req.Header.Set(protocol.HeaderToken, token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != tc.status || len(body) != tc.size || strings.Trim(string(body), "x") != "" {
			t.Errorf("%s: %d, %d bytes, %v; want %d, %d bytes", tc.path, resp.StatusCode, len(body), err, tc.status, tc.size)
		}
		if resp.ContentLength != tc.length {
			t.Errorf("%s: Content-Length %d, want %d", tc.path, resp.ContentLength, tc.length)
		}
		if chunked := slices.Equal(resp.TransferEncoding, []string{"chunked"}); chunked != (tc.length < 0 && tc.size > 0) {
			t.Errorf("%s: Transfer-Encoding %q", tc.path, resp.TransferEncoding)
		}
		switch tc.path {
		case "/late-header":
			if resp.Header.Get("X-Early") != "1" || resp.Header.Get("X-Late") != "" {
				t.Errorf("%s: head %v; want the head as it stood at WriteHeader", tc.path, resp.Header)
			}
		case "/trailer", "/prefixed-trailer":
			if got := resp.Trailer.Get("X-Sum"); got != "42" {
				t.Errorf("%s: trailer X-Sum %q, want 42", tc.path, got)
			}
		}
	}
}
