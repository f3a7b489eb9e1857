// Package plugintest tests a Steward plugin through the real plugin protocol,
// the way the host drives it: Describe, then Configure with a Host service
// served over the go-plugin broker, then HTTP, jobs, datasets and health
// over gRPC.
//
// New serves a plugin's definition and factory inside the test process,
// with the server sdk.Serve runs, which is quick and lets a test reach into
// the plugin's state; Start runs a built plugin binary as a subprocess the way the host
// starts it. Either can send HTTP over the data socket. Both hand
// the plugin an in-memory Host service whose tenants and datasets the test
// chooses. It records what the plugin audits, marks fresh and raises as
// events; like the host, it refuses audit entries, freshness marks, events
// and route and event type declarations the host would refuse, so a plugin's mistakes fail its own tests rather
// than its start-up in production.
package plugintest

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/core/store"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// callTimeout bounds Describe, Configure and CheckHealth, which the host
// also bounds; a plugin that blocks in them would otherwise hang the test.
const callTimeout = 30 * time.Second

// Options configure the plugin and the Host service it talks to.
type Options struct {
	// Config is the plugin's config {} block as JSON; it defaults to {},
	// which is what the host sends for a plugin declared without one. As
	// the host does, the harness refuses a block the plugin's schema
	// refuses, naming each key (config.days: …).
	Config json.RawMessage
	// DatabaseURL is handed to the plugin in Configure, e.g.
	// "sqlite://" + filepath.Join(t.TempDir(), "test.db").
	DatabaseURL string
	// Environment defaults to "development".
	Environment string
	// DataDir defaults to a fresh temporary directory.
	DataDir string
	// Cloud is the cloud settings JSON the host hands every plugin.
	Cloud json.RawMessage
	// Migrate, when set, receives the plugin's migration files after
	// Describe and before Configure, which is when the host applies them;
	// a returned error fails the test. The files are named as the plugin
	// declared them, so store.Migrate can apply them unchanged. Left nil
	// with a DatabaseURL, the harness applies them to it as the host does.
	Migrate func(ctx context.Context, migrations fs.FS) error

	// Tenants is the tenant directory the Host service serves. As on the
	// host, tenants whose IsActive is false are listed only when the plugin
	// asks for inactive ones.
	Tenants []sdk.Tenant
	// Datasets are other plugins' datasets the Host service serves, by
	// name. When the plugin asks for some tenants, only records whose
	// "tenant_id" field names one of them are sent. A dataset the plugin
	// under test publishes itself is read from the plugin, as on the host.
	Datasets map[string][]json.RawMessage

	// DataSocket offers the plugin the private unix socket for HTTP, as the
	// host does by default; Do then goes through the socket instead of the
	// HandleHTTP stream.
	DataSocket bool
}

// Progress is one progress report of a job run.
type Progress struct {
	Done, Total int64
	Message     string
}

// Alert is an alert a job raised, as the host would record it.
type Alert struct {
	Severity, Title, Message string
}

// Harness is a configured plugin and the Host service it talks to. Its
// methods may be called from any goroutine except Do, which fails the test
// on a broken exchange and so belongs to the test's own goroutine.
type Harness struct {
	t      testing.TB
	rpc    pluginv1.PluginClient
	desc   *pluginv1.DescribeResponse
	routes []*protocol.Route
	host   *hostService

	socketPath string
	token      string
	socket     *http.Client

	runs atomic.Int64

	mu     sync.Mutex
	alerts []Alert
}

// withDefaults fills in the options the test left out. It runs before the
// plugin starts so that the data directory is removed only after the plugin
// has stopped.
func withDefaults(t testing.TB, opts Options) Options {
	if len(opts.Config) == 0 {
		opts.Config = json.RawMessage("{}")
	}
	if opts.Environment == "" {
		opts.Environment = "development"
	}
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	return opts
}

// dataSocketPath is where the plugin is to serve its data socket, or "" when
// opts do not ask for one. A unix socket path is limited to about a hundred
// bytes, which a test's temporary directory, named after the test, can
// exceed.
func dataSocketPath(t testing.TB, opts Options) string {
	if !opts.DataSocket {
		return ""
	}
	dir, err := os.MkdirTemp("", "plugintest-")
	if err != nil {
		t.Fatalf("plugintest: socket directory: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "data.sock")
}

// configure does what the host does once a plugin has answered the
// handshake, with the same protocol.Startup: Describe, the checks of its
// config block and routes, migrations, the Host service on the broker and
// Configure. It is shared by New and Start so that both drive a plugin
// identically.
func configure(t testing.TB, pc *protocol.Client, opts Options, socketPath string) (*Harness, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	h := &Harness{t: t, rpc: pc, host: newHostService(opts, pc)}
	startup := &protocol.Startup{
		Config: opts.Config,
		Described: func(desc *pluginv1.DescribeResponse) error {
			routes, err := protocol.ParseRoutes(protocol.AllRoutes(desc))
			if err != nil {
				return err
			}
			if err := protocol.CheckEventTypes(desc.EventTypes); err != nil {
				return err
			}
			h.desc, h.routes = desc, routes
			h.host.publish(desc)
			return nil
		},
		Host: h.host,
		Configure: func(desc *pluginv1.DescribeResponse) (*pluginv1.ConfigureRequest, error) {
			req := &pluginv1.ConfigureRequest{
				DatabaseUrl: opts.DatabaseURL, Environment: opts.Environment, DataDir: opts.DataDir, Cloud: opts.Cloud,
			}
			if socketPath != "" {
				if !slices.Contains(desc.Capabilities, protocol.CapabilityHTTPSocket) {
					return nil, fmt.Errorf("DataSocket is set but the plugin does not announce %q", protocol.CapabilityHTTPSocket)
				}
				h.socketPath, h.token = socketPath, randomToken()
				req.DataSocket, req.DataToken = h.socketPath, h.token
			}
			return req, nil
		},
	}
	migrate := opts.Migrate
	if migrate == nil && opts.DatabaseURL != "" {
		migrate = func(ctx context.Context, migrations fs.FS) error {
			return migrateAsTheHost(ctx, opts.DatabaseURL, h.desc.GetName(), migrations)
		}
	}
	if migrate != nil {
		startup.Migrate = func(ctx context.Context, files []*pluginv1.Migration) error {
			fsys := fstest.MapFS{}
			for _, m := range files {
				fsys[m.Name] = &fstest.MapFile{Data: m.Content}
			}
			return migrate(ctx, fsys)
		}
	}
	started, err := startup.Run(ctx, pc)
	if err != nil {
		return nil, err
	}
	if socketPath != "" {
		if !started.Configured.DataSocketReady {
			return nil, errors.New("the plugin did not accept the data socket; its log says why")
		}
		h.socket = newSocketClient(socketPath)
		t.Cleanup(h.socket.CloseIdleConnections)
	}
	return h, nil
}

// migrateAsTheHost applies a plugin's migrations to the database at url
// as the host does, recording them in plugin_<name>_migrations.
func migrateAsTheHost(ctx context.Context, url, name string, migrations fs.FS) error {
	db, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = store.Migrate(ctx, db, migrations, "plugin_"+name+"_migrations")
	return err
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Describe returns the plugin's Describe answer, with what it serves:
// for a plugin built from its config, the declarations of its Configure
// answer.
func (h *Harness) Describe() *pluginv1.DescribeResponse { return h.desc }

// Client is the plugin's raw gRPC client, for tests of the protocol itself.
func (h *Harness) Client() pluginv1.PluginClient { return h.rpc }

// DataSocket returns the unix socket the plugin serves HTTP on and the token
// every request on it must carry; both are empty unless Options.DataSocket
// was set.
func (h *Harness) DataSocket() (path, token string) { return h.socketPath, h.token }

// AuditEntries returns the audit entries the Host service accepted, in order.
func (h *Harness) AuditEntries() []AuditEntry { return h.host.auditEntries() }

// FreshMarks returns the freshness marks the Host service accepted, in order.
func (h *Harness) FreshMarks() []FreshMark { return h.host.freshMarks() }

// Events returns the events the plugin raised, in order, each kept once
// per kind and dedupe key as the host keeps them: an event raised again
// with the same key is not among them.
func (h *Harness) Events() []sdk.Event { return h.host.raisedEvents() }

// Do sends req to the plugin as the host would for principal p and returns
// the whole response; a zero p is an anonymous caller. A broken exchange,
// such as a handler that panicked, fails the test; use RoundTrip to assert
// one.
func (h *Harness) Do(req *http.Request, p sdk.Principal) *http.Response {
	h.t.Helper()
	resp, err := h.RoundTrip(req, p)
	if err != nil {
		h.t.Fatalf("plugintest: %s %s: %v", req.Method, req.URL.Path, err)
	}
	return resp
}

// RoundTrip is Do returning a broken exchange as an error; the host answers
// its caller 503 in that case.
//
// Like the host, it only lets a request through to a route the plugin
// declared, answering 404 otherwise; it enforces the route's auth
// requirement (401 without a principal, 403 for a non-admin on an admin
// route); it strips the caller's credentials (Authorization, Cookie,
// X-Api-Key) and passes the principal, a request id (the request's
// X-Request-Id, or a fresh one) and the matched route instead; a dataset
// the handler reads on the request's behalf is narrowed to the principal's
// tenants. It checks
// the query and path parameters against the route's operation as the host
// does, answering the host's 422 naming each bad parameter, and refuses a
// request naming a tenant the principal may not see with the host's 403.
// It does not apply rate limits.
func (h *Harness) RoundTrip(req *http.Request, p sdk.Principal) (*http.Response, error) {
	route, rawParams := h.matchRoute(req.Method, req.URL.EscapedPath())
	if route == nil {
		return problemResponse(req, http.StatusNotFound, "no route for "+req.Method+" "+req.URL.Path), nil
	}
	var principal *pluginv1.Principal
	if !p.Anonymous() {
		principal = principalProto(p)
	}
	if status, detail := route.Admit(principal); status != 0 {
		resp := problemResponse(req, status, detail)
		if status == http.StatusUnauthorized {
			resp.Header.Set("WWW-Authenticate", "Bearer")
		}
		return resp, nil
	}
	params, errs := protocol.DecodePathParams(rawParams)
	if len(errs) == 0 {
		var err error
		if errs, err = inputErrors(req, params); err != nil {
			return nil, err
		}
	}
	if len(errs) == 0 {
		errs = route.Validate(func(name string) []string { return req.URL.Query()[name] }, params)
	}
	if len(errs) > 0 {
		prob := sdk.Problem{Title: http.StatusText(http.StatusUnprocessableEntity), Status: http.StatusUnprocessableEntity, Detail: protocol.MsgValidationFailed}
		for _, e := range errs {
			prob.Errors = append(prob.Errors, sdk.ErrorDetail{Location: e.Location, Message: e.Message, Value: e.Value})
		}
		return problem(req, prob), nil
	}
	var body []byte
	if route.NeedsBody() && req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if status := route.CheckTenant(principal, func(name string) []string { return req.URL.Query()[name] }, params, body); status != 0 {
		return problemResponse(req, status, protocol.MsgNoTenantAccess), nil
	}
	requestID := req.Header.Get(protocol.HeaderRequestID)
	if requestID == "" {
		requestID = randomToken()[:32]
	}
	header := req.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	for _, k := range protocol.StrippedHeaders {
		header.Del(k)
	}
	// Both ways read the whole response: the request is in flight, and its
	// dataset reads see its caller's tenants, until they return.
	defer h.host.calls.Begin(requestID, principal)()
	if h.socket != nil {
		return h.viaSocket(req, header, route.Pattern, principal, requestID)
	}
	return h.viaStream(req, header, route.Pattern, params, principal, requestID)
}

// inputErrors runs the host's control-character check on a request. It
// reads a form or JSON body and puts it back for the plugin.
func inputErrors(req *http.Request, params map[string]string) ([]*huma.ErrorDetail, error) {
	in := protocol.Inputs{PathParams: params, ContentType: req.Header.Get("Content-Type"), Query: fieldPairs(req.URL.RawQuery)}
	if req.Body != nil && req.Body != http.NoBody && (in.IsForm() || strings.Contains(in.ContentType, "json")) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		in.Body = body
		if in.IsForm() {
			in.Form = fieldPairs(string(body))
		}
	}
	return protocol.InputErrors(in), nil
}

// fieldPairs decodes a query string or form body in order, keeping a
// malformed escape as it was sent.
func fieldPairs(raw string) [][2]string {
	var out [][2]string
	for kv := range strings.SplitSeq(raw, "&") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		out = append(out, [2]string{unescape(k), unescape(v)})
	}
	return out
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// matchRoute finds the declared route of a request; its path, as sent
// (percent-encoded), matches as in the host's route table, which uses the
// same protocol matching.
func (h *Harness) matchRoute(method, path string) (*protocol.Route, map[string]string) {
	segs := protocol.SplitPath(path)
	var best *protocol.Route
	var bestParams map[string]string
	for _, r := range h.routes {
		if params, ok := r.Match(method, segs); ok && (best == nil || r.Wins(best)) {
			best, bestParams = r, params
		}
	}
	return best, bestParams
}

func problemResponse(req *http.Request, status int, detail string) *http.Response {
	return problem(req, sdk.Problem{Title: http.StatusText(status), Status: status, Detail: detail})
}

// problem answers req with p, as the host answers a request it refuses.
func problem(req *http.Request, p sdk.Problem) *http.Response {
	b, _ := json.Marshal(p)
	return &http.Response{
		Status: fmt.Sprintf("%d %s", p.Status, http.StatusText(p.Status)), StatusCode: p.Status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/problem+json"}},
		Body:          io.NopCloser(bytes.NewReader(b)),
		ContentLength: int64(len(b)),
		Request:       req,
	}
}

// viaStream carries the exchange over HandleHTTP with the protocol's
// stream client, as the host does: the body, read whole first as the host
// has it, is sent from its own goroutine while the response is read.
func (h *Harness) viaStream(req *http.Request, header http.Header, route string, params map[string]string,
	principal *pluginv1.Principal, requestID string) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		body = b
	}
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	stream, err := h.rpc.HandleHTTP(ctx)
	if err != nil {
		return nil, err
	}
	headers := make(map[string]*pluginv1.HeaderValues, len(header)+2)
	for k, v := range header {
		headers[k] = &pluginv1.HeaderValues{Values: v}
	}
	if host := cmp.Or(req.Host, req.URL.Host); host != "" {
		headers["Host"] = &pluginv1.HeaderValues{Values: []string{host}}
	}
	if req.ContentLength > 0 {
		headers["Content-Length"] = &pluginv1.HeaderValues{Values: []string{fmt.Sprint(req.ContentLength)}}
	}
	head := &pluginv1.HTTPRequestHead{
		Method: req.Method, Path: protocol.PluginPath(req.URL.EscapedPath()), RawQuery: req.URL.RawQuery, Headers: headers,
		Principal: principal, RemoteAddr: req.RemoteAddr, RequestId: requestID, Route: route, PathParams: params,
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		// A failed send ends the sending only: the response tells how the
		// exchange ended.
		_ = protocol.SendRequest(stream, head, body)
	}()
	resp, err := receive(stream, req)
	// Once the response is complete, sending the rest of a body the handler
	// did not read is pointless.
	cancel()
	<-sent
	return resp, err
}

func receive(stream pluginv1.Plugin_HandleHTTPClient, req *http.Request) (*http.Response, error) {
	rh, err := protocol.RecvResponseHead(stream)
	if err != nil {
		return nil, err
	}
	header := http.Header{}
	for k, v := range rh.Headers {
		if http.CanonicalHeaderKey(k) == "Content-Length" {
			continue
		}
		for _, val := range v.Values {
			header.Add(k, val)
		}
	}
	body, err := io.ReadAll(protocol.NewResponseBody(stream))
	if err != nil {
		return nil, err
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", rh.Status, http.StatusText(int(rh.Status))), StatusCode: int(rh.Status),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: header, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}, nil
}

// viaSocket carries the exchange over the data socket with the headers the
// host sets there.
func (h *Harness) viaSocket(req *http.Request, header http.Header, route string, principal *pluginv1.Principal, requestID string) (*http.Response, error) {
	target := "http://plugin" + protocol.PluginPath(req.URL.EscapedPath())
	if req.URL.RawQuery != "" {
		target += "?" + req.URL.RawQuery
	}
	out, err := http.NewRequestWithContext(req.Context(), req.Method, target, req.Body)
	if err != nil {
		return nil, err
	}
	out.Header = header
	out.ContentLength = req.ContentLength
	if err := protocol.SetSocketHeaders(out.Header.Set, h.token, requestID, route, principal); err != nil {
		return nil, err
	}
	resp, err := h.socket.Do(out)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Request = req
	return resp, nil
}

// RunJob runs a job as the scheduler does and returns the records it
// processed and the progress it reported. A job that fails returns the
// gRPC status error carrying its message.
func (h *Harness) RunJob(ctx context.Context, name string) (int64, []Progress, error) {
	stream, err := h.rpc.RunJob(ctx, &pluginv1.RunJobRequest{Job: name, RunId: fmt.Sprintf("run-%d", h.runs.Add(1))})
	if err != nil {
		return 0, nil, err
	}
	var progress []Progress
	n, err := protocol.RecvJob(stream, protocol.JobEvents{
		Progress: func(p *pluginv1.JobProgress) {
			progress = append(progress, Progress{Done: p.Done, Total: p.Total, Message: p.Message})
		},
		Alert: func(a *pluginv1.JobAlert) {
			h.mu.Lock()
			h.alerts = append(h.alerts, Alert{Severity: a.Severity, Title: a.Title, Message: a.Message})
			h.mu.Unlock()
		},
	})
	return n, progress, err
}

// Alerts returns the alerts the jobs run so far raised, in order, and
// forgets them.
func (h *Harness) Alerts() []Alert {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.alerts
	h.alerts = nil
	return out
}

// ReadDataset reads one of the plugin's datasets as the host does for
// another plugin, and returns every record.
func (h *Harness) ReadDataset(ctx context.Context, name string, tenantIDs []string, params map[string]string) ([]json.RawMessage, error) {
	stream, err := h.rpc.ReadDataset(ctx, &pluginv1.ReadDatasetRequest{Dataset: name, TenantIds: tenantIDs, Params: params})
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for _, r := range chunk.Records {
			out = append(out, r)
		}
	}
}

// Health asks the plugin for its health. Like the host, it reports a failed
// call as status "error" with the failure as the message.
func (h *Harness) Health() sdk.Health {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := h.rpc.CheckHealth(ctx, &pluginv1.CheckHealthRequest{})
	if err != nil {
		return sdk.Health{Status: "error", Message: err.Error()}
	}
	st := "ok"
	switch resp.Status {
	case pluginv1.HealthStatus_HEALTH_STATUS_DEGRADED:
		st = "degraded"
	case pluginv1.HealthStatus_HEALTH_STATUS_ERROR:
		st = "error"
	}
	return sdk.Health{Status: st, Message: resp.Message, Details: resp.Details}
}

// newLogger sends the plugin's and go-plugin's logs to the test log, so they
// show with a failing test or -v and nowhere else.
func newLogger(t testing.TB, name string) hclog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.stop)
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Info, Output: w})
}

// testWriter stops writing once the test's cleanups have run, since
// testing panics on a log call after the test has finished and plugin
// goroutines may still be winding down then.
type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}
