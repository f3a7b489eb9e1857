package plugins

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/compress"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/internal/logsink"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
	"github.com/stewardhq/steward/sdk/protocol"
)

// streamPlugin serves p with the server sdk.Serve runs, described and
// configured as the supervisor does, and returns the client the supervisor
// would hold.
func streamPlugin(t *testing.T, p *sdk.Plugin) *protocol.Client {
	return &protocol.Client{PluginClient: plugintest.New(t, sdk.Definition{Name: "p"}, built(p), plugintest.Options{}).Client()}
}

// built is the factory of a plugin built beforehand.
func built(p *sdk.Plugin) func(context.Context, struct{}, *sdk.Env) (*sdk.Plugin, error) {
	return func(context.Context, struct{}, *sdk.Env) (*sdk.Plugin, error) { return p, nil }
}

// socketPlugin serves p configured with a data socket, and returns the data
// plane the supervisor would hold.
func socketPlugin(t testing.TB, p *sdk.Plugin) dataPlane {
	path, token := plugintest.New(t, sdk.Definition{Name: "p"}, built(p), plugintest.Options{DataSocket: true}).DataSocket()
	return dataPlane{socketPath: path, token: token, socket: newSocketClient(path)}
}

// proxyApp proxies every POST to the plugin over the HandleHTTP stream and
// answers 503 with the error when the exchange breaks.
func proxyApp(rpc *protocol.Client) *fiber.App {
	app := fiber.New(fiber.Config{BodyLimit: 64 << 20})
	limit := bodyLimit{plugin: "p", max: DefaultMaxResponseBytes, log: hclog.NewNullLogger()}
	app.Post("/*", func(c *fiber.Ctx) error {
		r := &Route{Plugin: "p", Route: protocol.Route{Method: fiber.MethodPost, Pattern: c.Path()}}
		if err := proxyStream(c, rpc, r, nil, nil, "req-1", DefaultRequestTimeout, limit); err != nil {
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
	rs := &routes{}
	rs.HandleFunc("POST /unread", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	})
	rs.HandleFunc("POST /partly", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.CopyN(io.Discard, r.Body, 1<<20)
		w.Header().Set("X-Read", strconv.FormatInt(n, 10))
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	})
	rs.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = io.Copy(w, r.Body)
	})
	rpc := streamPlugin(t, &sdk.Plugin{Routes: *rs})

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
				// A stalled exchange fails the test in seconds, not in the
				// proxy's five minutes.
				resp, err := app.Test(req, 20000)
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
	rs := &routes{}
	rs.HandleFunc("POST /boom", func(http.ResponseWriter, *http.Request) { panic("handler bug") })
	rpc := streamPlugin(t, &sdk.Plugin{Routes: *rs})
	app := proxyApp(rpc)
	for _, size := range []int{0, 10 << 20} {
		req := httptest.NewRequest(http.MethodPost, "/boom", bytes.NewReader(make([]byte, size)))
		resp, err := app.Test(req, 20000)
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

// planeServer serves p on one data plane behind a proxy listening on
// loopback, the way the host relays it, with max as the response body cap
// and the proxy's log in logs. It returns the proxy's base URL.
func planeServer(t *testing.T, plane string, p *sdk.Plugin, max int64, logs io.Writer) string {
	return timedPlaneServer(t, plane, p, max, DefaultRequestTimeout, logs)
}

// timedPlaneServer is planeServer with the plugin's request timeout; a
// request the plugin does not answer in time gets a 504.
func timedPlaneServer(t *testing.T, plane string, p *sdk.Plugin, max int64, timeout time.Duration, logs io.Writer) string {
	t.Helper()
	limit := bodyLimit{plugin: "p", max: max, log: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})}
	var proxy func(c *fiber.Ctx, r *Route) error
	switch plane {
	case "socket":
		dp := socketPlugin(t, p)
		proxy = func(c *fiber.Ctx, r *Route) error { return proxySocket(c, dp, r, nil, "req-1", timeout, limit) }
	case "grpc":
		rpc := streamPlugin(t, p)
		proxy = func(c *fiber.Ctx, r *Route) error { return proxyStream(c, rpc, r, nil, nil, "req-1", timeout, limit) }
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	// As in the host: a cut-off body must not end as a whole compressed one.
	app.Use(compress.New(compress.Config{Level: compress.LevelBestSpeed}))
	app.Get("/*", func(c *fiber.Ctx) error {
		err := proxy(c, &Route{Plugin: "p", Route: protocol.Route{Method: fiber.MethodGet, Pattern: c.Path()}})
		var refused *fiber.Error
		var timedOut *TimeoutError
		if errors.As(err, &timedOut) {
			return fiber.NewError(fiber.StatusGatewayTimeout, err.Error())
		}
		if err != nil && !errors.As(err, &refused) {
			return fiber.NewError(fiber.StatusServiceUnavailable, err.Error())
		}
		return err
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	return "http://" + ln.Addr().String()
}

// writeBody writes n bytes in 32 KiB pieces.
func writeBody(w io.Writer, n int) {
	chunk := bytes.Repeat([]byte("steward-"), 4<<10)
	for n > 0 {
		k := min(n, len(chunk))
		if _, err := w.Write(chunk[:k]); err != nil {
			return
		}
		n -= k
	}
}

// TestProxyStreamsResponseBodies: a large body reaches the caller while the
// plugin is still writing it, and the host keeps none of it. The handler
// writes its first MiB and waits until the caller has it, then writes 32
// MiB more and waits again while the heap is measured: a host that
// buffers the body never answers, one that keeps it shows it in the heap
// (four times the growth allowed). 32 MiB rather than more, and a
// generous client timeout, because under the race detector on a busy
// 2-core machine the copy runs at a few MiB a second.
func TestProxyStreamsResponseBodies(t *testing.T) {
	const first, rest = 1 << 20, 32 << 20
	for _, plane := range []string{"socket", "grpc"} {
		t.Run(plane, func(t *testing.T) {
			received, drained := make(chan struct{}), make(chan struct{})
			wait := func(r *http.Request, ch chan struct{}) bool {
				select {
				case <-ch:
					return true
				case <-r.Context().Done():
				case <-time.After(20 * time.Second):
				}
				return false
			}
			rs := &routes{}
			rs.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/octet-stream")
				writeBody(w, first)
				_ = http.NewResponseController(w).Flush()
				if !wait(r, received) {
					return
				}
				writeBody(w, rest)
				_ = http.NewResponseController(w).Flush()
				wait(r, drained)
			})
			base := planeServer(t, plane, &sdk.Plugin{Routes: *rs}, DefaultMaxResponseBytes, io.Discard)

			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			var resp *http.Response
			head := make(chan error, 1)
			go func() {
				var err error
				// A failing test must not wait for a response it gave up on.
				client := &http.Client{Timeout: 2 * time.Minute}
				if resp, err = client.Get(base + "/big"); err == nil {
					_, err = io.ReadFull(resp.Body, make([]byte, first))
				}
				head <- err
			}()
			select {
			case err := <-head:
				if err != nil {
					t.Fatalf("reading the first MiB: %v", err)
				}
			case <-time.After(10 * time.Second):
				close(received)
				t.Fatal("the first MiB did not arrive while the plugin was still writing")
			}
			defer resp.Body.Close()
			close(received)
			if n, err := io.CopyN(io.Discard, resp.Body, rest); err != nil {
				close(drained)
				t.Fatalf("the other %d MiB: %d bytes, %v", rest>>20, n, err)
			}

			// The plugin, the proxy and the caller share this process, and
			// the plugin has not finished its response.
			runtime.GC()
			var during runtime.MemStats
			runtime.ReadMemStats(&during)
			close(drained)
			if grew := int64(during.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
				t.Errorf("the heap holds %d MiB more after %d MiB streamed through", grew>>20, (first+rest)>>20)
			}
			if n, err := io.Copy(io.Discard, resp.Body); n != 0 || err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("end of the body: %d, %d more bytes, %v", resp.StatusCode, n, err)
			}
		})
	}
}

// TestProxyCapsResponseBodies enforces max_response_bytes on both planes:
// a body of exactly the cap passes whole, a longer one is cut off at the
// cap and logged, and one declared longer is refused with 502 before any
// byte of it is sent.
func TestProxyCapsResponseBodies(t *testing.T) {
	const max = 1 << 20
	rs := &routes{}
	rs.HandleFunc("GET /small", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "1000")
		writeBody(w, 1000)
	})
	rs.HandleFunc("GET /exact", func(w http.ResponseWriter, _ *http.Request) { writeBody(w, max) })
	rs.HandleFunc("GET /over", func(w http.ResponseWriter, _ *http.Request) { writeBody(w, 3*max) })
	rs.HandleFunc("GET /declared", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(max+1))
		writeBody(w, max+1)
	})
	for _, plane := range []string{"socket", "grpc"} {
		t.Run(plane, func(t *testing.T) {
			logs := &logsink.Buffer{}
			base := planeServer(t, plane, &sdk.Plugin{Routes: *rs}, max, logs)
			get := func(path string, header ...string) (*http.Response, []byte, error) {
				req, err := http.NewRequest(http.MethodGet, base+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i+1 < len(header); i += 2 {
					req.Header.Set(header[i], header[i+1])
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				return resp, body, err
			}

			// Uncompressed, so that the length reaches the caller.
			resp, body, err := get("/small", "Accept-Encoding", "identity")
			if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(body, bytes.Repeat([]byte("steward-"), 125)) {
				t.Fatalf("a small body: %d, %q, %v", resp.StatusCode, body, err)
			}
			if plane == "socket" && resp.ContentLength != 1000 {
				t.Errorf("a small body over the socket: Content-Length %d, want 1000", resp.ContentLength)
			}

			resp, body, err = get("/exact")
			if err != nil || resp.StatusCode != http.StatusOK || len(body) != max {
				t.Fatalf("a body of exactly the cap: %d, %d bytes, %v", resp.StatusCode, len(body), err)
			}
			if strings.Contains(logs.String(), "max_response_bytes") {
				t.Fatalf("a body of exactly the cap was logged as too large:\n%s", logs)
			}

			resp, body, err = get("/over")
			if resp.StatusCode != http.StatusOK || err == nil || len(body) > max {
				t.Fatalf("a body over the cap: %d, %d bytes, error %v; want the body cut off after at most %d bytes", resp.StatusCode, len(body), err, max)
			}
			if !logged(logs.String(), "exceeds max_response_bytes", "request_id=req-1") {
				t.Errorf("the cut-off is not logged with the request id:\n%s", logs)
			}

			resp, body, err = get("/declared")
			if err != nil || resp.StatusCode != http.StatusBadGateway || len(body) > 1024 {
				t.Fatalf("a body declared over the cap: %d, %d bytes, %v; want a 502", resp.StatusCode, len(body), err)
			}
			if !logged(logs.String(), "answered 502", "request_id=req-1", fmt.Sprintf("content_length=%d", max+1)) {
				t.Errorf("the 502 is not logged with the request id:\n%s", logs)
			}
		})
	}
}

// logged reports whether one line of logs holds every part.
func logged(logs string, parts ...string) bool {
	for _, line := range strings.Split(logs, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestProxyCutsOffBrokenBodies: a plugin that fails halfway through its
// body leaves the caller with an error, not a short body that looks whole,
// and the host logs why with the request id.
func TestProxyCutsOffBrokenBodies(t *testing.T) {
	rs := &routes{}
	rs.HandleFunc("GET /broken", func(w http.ResponseWriter, _ *http.Request) {
		writeBody(w, 256<<10)
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	})
	for _, plane := range []string{"socket", "grpc"} {
		t.Run(plane, func(t *testing.T) {
			logs := &logsink.Buffer{}
			base := planeServer(t, plane, &sdk.Plugin{Routes: *rs}, DefaultMaxResponseBytes, logs)
			resp, err := http.Get(base + "/broken")
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || err == nil {
				t.Fatalf("a body that broke off: %d, %d bytes, error %v; want an error", resp.StatusCode, len(body), err)
			}
			if !logged(logs.String(), "broke off", "request_id=req-1") {
				t.Errorf("the broken body is not logged with the request id:\n%s", logs)
			}
		})
	}
}

// routes collects a test plugin's routes from ServeMux-style patterns.
type routes []sdk.Route

func (rs *routes) HandleFunc(pattern string, h http.HandlerFunc) {
	method, path, _ := strings.Cut(pattern, " ")
	*rs = append(*rs, sdk.Route{Method: method, Path: path, Handler: h})
}

// TestProxyTimesOutLateAnswers: a handler that does not answer within the
// request timeout gets its caller a 504 at the timeout, its context ends
// (the host has given up on it), and the plugin answers other requests
// meanwhile; a handler that answers in time streams its body past the
// timeout.
func TestProxyTimesOutLateAnswers(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, plane := range []string{"socket", "grpc"} {
		t.Run(plane, func(t *testing.T) {
			abandoned := make(chan struct{}, 1)
			mux := &routes{}
			mux.HandleFunc("GET /slow", func(_ http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
					abandoned <- struct{}{}
				case <-time.After(10 * time.Second):
				}
			})
			mux.HandleFunc("GET /fast", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "fast") })
			mux.HandleFunc("GET /trickle", func(w http.ResponseWriter, _ *http.Request) {
				for i := 0; i < 4; i++ {
					_, _ = io.WriteString(w, "tick ")
					w.(http.Flusher).Flush()
					time.Sleep(timeout / 2)
				}
			})
			base := timedPlaneServer(t, plane, &sdk.Plugin{Routes: *mux}, DefaultMaxResponseBytes, timeout, io.Discard)

			slow := make(chan *http.Response, 1)
			t0 := time.Now()
			go func() {
				resp, err := http.Get(base + "/slow")
				if err != nil {
					t.Error(err)
				}
				slow <- resp
			}()
			for i := 0; i < 3; i++ {
				resp, err := http.Get(base + "/fast")
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("a fast route while a slow one waits: %v %v", resp, err)
				}
				resp.Body.Close()
			}
			resp := <-slow
			if resp == nil {
				t.FailNow()
			}
			resp.Body.Close()
			elapsed := time.Since(t0)
			if resp.StatusCode != http.StatusGatewayTimeout || elapsed < timeout || elapsed > timeout+2*time.Second {
				t.Fatalf("a late answer: %d after %s, want 504 after %s", resp.StatusCode, elapsed, timeout)
			}
			select {
			case <-abandoned:
			case <-time.After(2 * time.Second):
				t.Error("the late handler's context did not end when the host gave up")
			}

			resp, err := http.Get(base + "/trickle")
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || string(body) != strings.Repeat("tick ", 4) {
				t.Errorf("a body streaming past the timeout: %d %q %v", resp.StatusCode, body, err)
			}
		})
	}
}

// TestProxyKeepsAnAnswerWithoutBodyBare: a plugin's 204 reaches the caller
// without a Content-Type on either plane, and a Content-Type the plugin
// sent is kept.
func TestProxyKeepsAnAnswerWithoutBodyBare(t *testing.T) {
	rs := &routes{}
	rs.HandleFunc("GET /none", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	rs.HandleFunc("GET /json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	})
	for _, plane := range []string{"socket", "grpc"} {
		t.Run(plane, func(t *testing.T) {
			base := planeServer(t, plane, &sdk.Plugin{Routes: *rs}, DefaultMaxResponseBytes, io.Discard)
			for path, want := range map[string]string{"/none": "", "/json": "application/json"} {
				resp, err := http.Get(base + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if got := resp.Header.Get("Content-Type"); got != want {
					t.Errorf("%s: %d with Content-Type %q, want %q", path, resp.StatusCode, got, want)
				}
			}
		})
	}
}
