package sdk

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// benchBodies are the handlers the socket benchmarks serve: a trivial
// answer, and a JSON page of the size of the test plugin's 100-item read.
func benchBodies() map[string]http.HandlerFunc {
	type row struct {
		ID        int64     `json:"id"`
		TenantID  string    `json:"tenant_id"`
		Name      string    `json:"name"`
		Kind      string    `json:"kind"`
		Cost      float64   `json:"cost"`
		CreatedAt time.Time `json:"created_at"`
	}
	rows := make([]row, 100)
	for i := range rows {
		rows[i] = row{ID: int64(i + 1), TenantID: "8d7c0c8e-4a3b-4f8e-9c62-1b2f3a4d5e6f", Name: "Bench item " + strings.Repeat("x", 3),
			Kind: "vm", Cost: float64(i) * 1.25, CreatedAt: time.Date(2026, 11, 25, 6, 0, 0, 123456789, time.UTC)}
	}
	return map[string]http.HandlerFunc{
		"ping": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "pong")
		},
		"json15k": func(w http.ResponseWriter, _ *http.Request) {
			WriteJSON(w, http.StatusOK, map[string]any{"items": rows, "total": len(rows)})
		},
	}
}

const benchToken = "0123456789abcdef0123456789abcdef"

func benchPrincipal(b *testing.B) string {
	p, err := protocol.EncodePrincipal(&pluginv1.Principal{Id: "u1", Email: "admin@steward.local", Name: "Admin",
		Roles: []string{"admin"}, IsAdmin: true, Kind: "user", TenantIds: []string{"8d7c0c8e-4a3b-4f8e-9c62-1b2f3a4d5e6f"}})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkSocketExchange is one request on the data socket as the host
// makes it, through a kept-alive connection: the plugin's net/http server,
// socketHandler and the handler, and the client reading the whole answer.
// Client and server share the process, so the figure is both sides' work.
func BenchmarkSocketExchange(b *testing.B) {
	for name, h := range benchBodies() {
		b.Run(name, func(b *testing.B) {
			dir, err := os.MkdirTemp("", "sdk-bench-")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(dir)
			bound, err := bind(Definition{Name: "p"}, static(&Plugin{}))
			if err != nil {
				b.Fatal(err)
			}
			s := newServer(bound, hclog.NewNullLogger())
			sock := filepath.Join(dir, "data.sock")
			if err := s.listenSocket(sock, benchToken, h); err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			client := &http.Client{Transport: &http.Transport{DisableCompression: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			}}}
			defer client.CloseIdleConnections()
			req, _ := http.NewRequest("GET", "http://plugin/api/v1/p/x?limit=100", nil)
			req.Header.Set(protocol.HeaderToken, benchToken)
			req.Header.Set(protocol.HeaderPrincipal, benchPrincipal(b))
			req.Header.Set(protocol.HeaderRoute, "/api/v1/p/x")
			req.Header.Set(protocol.HeaderRequestID, "r1")
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				buf.Reset()
				_, _ = buf.ReadFrom(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d: %s", resp.StatusCode, buf.Bytes())
				}
			}
		})
	}
}

// discardWriter is the least a ResponseWriter can do.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkSocketHandler is what the SDK adds to a request on the data
// socket before the plugin's handler runs — the token check, the principal
// decoded from its header, the request info in the context — with a
// handler that does nothing.
func BenchmarkSocketHandler(b *testing.B) {
	h := socketHandler(benchToken, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), hclog.NewNullLogger())
	principal := benchPrincipal(b)
	req, _ := http.NewRequest("GET", "http://plugin/api/v1/p/x", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		req.Header = http.Header{
			protocol.HeaderToken: {benchToken}, protocol.HeaderPrincipal: {principal},
			protocol.HeaderRoute: {"/api/v1/p/x"}, protocol.HeaderRequestID: {"r1"},
		}
		h.ServeHTTP(w, req)
	}
}
