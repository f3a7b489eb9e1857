package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stewardhq/steward/core/store"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/internal/dataplane"
	"github.com/stewardhq/steward/sdk/internal/serving"
	"github.com/stewardhq/steward/sdk/protocol"
)

// Serve runs the plugin until the host stops it. It never returns when run
// by the host; started by hand it explains that it is a plugin and exits.
//
// The host describes the plugin from def, checks its config {} block
// against the schema derived from C, applies def's migrations, then
// configures it: the SDK decodes the block into a C (over C's Defaults(),
// when C has that method, refusing keys C does not have) and calls
// factory with it and the Env. What the factory returns is what the plugin
// serves; Validate must accept it. A def Serve refuses is not served:
// Serve prints every mistake to stderr, where the host logs it, and exits.
//
// C is a struct whose exported fields, by their json names, are the
// block's keys: `doc`, `minimum`, `maximum`, `enum`, `pattern` and huma's
// other validation tags constrain them, a key is required unless its json
// tag says omitempty or Defaults() gives it a value, and a Duration is
// written as "30s". A plugin without settings takes struct{}.
func Serve[C any](def Definition, factory func(ctx context.Context, cfg C, env *Env) (*Plugin, error)) {
	b, err := bind(def, factory)
	if err != nil {
		fmt.Fprintf(os.Stderr, "plugin %q is not valid:\n%v\n", def.Name, err)
		os.Exit(1)
	}
	logger := hclog.New(&hclog.LoggerOptions{
		Name:       def.Name,
		Level:      hclog.Info,
		Output:     os.Stderr,
		JSONFormat: true,
	})
	defer startProfiling(def.Name, os.Getenv(protocol.EnvProfileDir), logger)()
	if floor := gcFloorFor(debug.SetMemoryLimit(-1)); floor > 0 && os.Getenv("GOGC") == "" {
		keepGCFloor(floor)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: protocol.Handshake,
		Plugins:         protocol.PluginMap(newGRPCPlugin(b, logger)),
		GRPCServer:      serving.GRPCServer(logger),
		Logger:          logger,
	})
}

func init() {
	serving.NewGRPCPlugin = func(def, factory any, logger hclog.Logger) (*protocol.GRPCPlugin, error) {
		b, err := bind(def.(Definition), factory)
		if err != nil {
			return nil, err
		}
		return newGRPCPlugin(b, logger), nil
	}
}

// newGRPCPlugin returns the go-plugin plugin that serves b (see
// serving.NewGRPCPlugin).
func newGRPCPlugin(b *binding, logger hclog.Logger) *protocol.GRPCPlugin {
	srv := newServer(b, logger)
	return &protocol.GRPCPlugin{Impl: srv, OnBroker: srv.setBroker}
}

// server implements the Plugin service around a bound definition.
type server struct {
	pluginv1.UnimplementedPluginServer
	b       *binding
	logger  hclog.Logger
	metrics *prometheus.Registry

	mu      sync.Mutex
	broker  *plugin.GRPCBroker
	db      *bun.DB
	dbURL   string
	p       *Plugin
	handler http.Handler
	host    *Host
	socket  *dataplane.Server
}

func newServer(b *binding, logger hclog.Logger) *server {
	return &server{b: b, logger: logger, metrics: prometheus.NewRegistry()}
}

func (s *server) setBroker(b *plugin.GRPCBroker) {
	s.mu.Lock()
	s.broker = b
	s.mu.Unlock()
}

func (s *server) Describe(context.Context, *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	resp := &pluginv1.DescribeResponse{
		Name:            s.b.def.Name,
		Version:         s.b.def.Version,
		ProtocolVersion: protocol.Version,
		SdkVersion:      Version,
		Capabilities:    []string{protocol.CapabilityHTTPSocket, protocol.CapabilityConfigureDeclarations},
		ConfigSchema:    s.b.schema,
	}
	if m := s.b.def.Migrations; m != nil {
		err := fs.WalkDir(m, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".sql") {
				return err
			}
			b, err := fs.ReadFile(m, path)
			if err != nil {
				return err
			}
			resp.Migrations = append(resp.Migrations, &pluginv1.Migration{Name: d.Name(), Content: b})
			return nil
		})
		if err != nil {
			return nil, status.Errorf(codes.Internal, "migrations: %v", err)
		}
	}
	return resp, nil
}

// declarations are what p serves, as ConfigureResponse carries them.
func declarations(p *Plugin) (*pluginv1.ConfigureResponse, error) {
	resp := &pluginv1.ConfigureResponse{}
	for _, r := range p.Routes {
		pr, err := routeProto(r)
		if err != nil {
			return nil, err
		}
		resp.Routes = append(resp.Routes, pr)
	}
	for _, f := range p.Fragments {
		resp.Fragments = append(resp.Fragments, &pluginv1.Fragment{Path: f.Path, Title: f.Title, Slot: f.Slot, RefreshSeconds: int32(f.RefreshSeconds)})
	}
	for _, pg := range p.Pages {
		resp.Pages = append(resp.Pages, &pluginv1.Page{Path: pg.Path, Title: pg.Title, Slot: pg.Slot, Description: pg.Description})
	}
	for _, n := range p.Nav {
		resp.Nav = append(resp.Nav, &pluginv1.NavEntry{Label: n.Label, Path: n.Path, Order: int32(n.Order)})
	}
	for _, j := range p.Jobs {
		resp.Jobs = append(resp.Jobs, &pluginv1.Job{Name: j.Name, JobType: j.JobType, DataDomain: j.DataDomain, DefaultSchedule: j.Schedule,
			StaleAfterSeconds: int64(j.StaleAfter / time.Second), TriggerPath: j.TriggerPath, Reads: j.Reads, PerTenant: j.PerTenant || j.EachTenant != nil})
	}
	for _, d := range p.Datasets {
		resp.Datasets = append(resp.Datasets, &pluginv1.Dataset{Name: d.Name, Description: d.Description, Schema: d.Schema})
	}
	resp.EventTypes = eventTypesProto(p.Events)
	return resp, nil
}

func eventTypesProto(types []EventType) []*pluginv1.EventType {
	var out []*pluginv1.EventType
	for _, t := range types {
		out = append(out, &pluginv1.EventType{Name: t.Name, Description: t.Description})
	}
	return out
}

func authProto(a Auth) pluginv1.Auth {
	switch a {
	case AuthNone:
		return pluginv1.Auth_AUTH_NONE
	case AuthAdmin:
		return pluginv1.Auth_AUTH_ADMIN
	default:
		return pluginv1.Auth_AUTH_USER
	}
}

func rateProto(r RateClass) pluginv1.RateClass {
	switch r {
	case RateAuth:
		return pluginv1.RateClass_RATE_CLASS_AUTH
	case RateSync:
		return pluginv1.RateClass_RATE_CLASS_SYNC
	case RateCostly:
		return pluginv1.RateClass_RATE_CLASS_COSTLY
	default:
		return pluginv1.RateClass_RATE_CLASS_DEFAULT
	}
}

func (s *server) Configure(ctx context.Context, req *pluginv1.ConfigureRequest) (*pluginv1.ConfigureResponse, error) {
	s.mu.Lock()
	broker := s.broker
	s.mu.Unlock()
	name := s.b.def.Name
	// An older host, or one that does not check, may send a block the
	// schema refuses: the plugin never builds from one.
	problems, err := protocol.CheckConfig(s.b.schema, req.Config)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "configure %s: %v", name, err)
	}
	if len(problems) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "configure %s: %v", name, &protocol.ConfigError{Problems: problems})
	}
	db, err := s.database(ctx, req.DatabaseUrl)
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "configure %s: %v", name, err)
	}
	env := &Env{
		DB:               db,
		DatabaseURL:      req.DatabaseUrl,
		Environment:      req.Environment,
		DataDir:          req.DataDir,
		Cloud:            req.Cloud,
		HostCapabilities: req.HostCapabilities,
		Logger:           s.logger,
		Metrics:          s.metrics,
	}
	if broker != nil && req.HostBrokerId != 0 {
		conn, err := broker.Dial(req.HostBrokerId)
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "dial host service: %v", err)
		}
		env.Host = &Host{client: pluginv1.NewHostClient(conn), failures: slices.Contains(req.HostCapabilities, protocol.HostCapabilitySyncFailures),
			events: slices.Contains(req.HostCapabilities, protocol.HostCapabilityEvents)}
	}
	p, err := s.b.build(ctx, req.Config, env)
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "configure %s: %v", name, err)
	}
	if err := p.Validate(); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "configure %s: the plugin it built is not valid:\n%v", name, err)
	}
	resp, err := declarations(p)
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "configure %s: %v", name, err)
	}
	handler := p.HTTPHandler()
	s.mu.Lock()
	s.p = p
	s.handler = handler
	s.host = env.Host
	s.mu.Unlock()

	if req.DataSocket != "" {
		if err := s.listenSocket(req.DataSocket, req.DataToken, handler); err != nil {
			s.logger.Warn("data socket unavailable; serving HTTP over gRPC only", "error", err)
		} else {
			resp.DataSocketReady = true
		}
	}
	return resp, nil
}

// database opens the plugin's database at url, or keeps the one open
// when a new configuration names the same; nil when url is empty.
func (s *server) database(ctx context.Context, url string) (*bun.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db != nil && s.dbURL == url {
		return s.db, nil
	}
	var db *bun.DB
	if url != "" {
		var err error
		if db, err = store.Open(ctx, url, store.Options{}); err != nil {
			return nil, err
		}
	}
	if s.db != nil {
		_ = s.db.Close()
	}
	s.db, s.dbURL = db, url
	return db, nil
}

func (s *server) listenSocket(path, token string, handler http.Handler) error {
	if len(token) < 16 {
		return errors.New("data token too short")
	}
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return err
	}
	srv := &dataplane.Server{Handler: socketHandler(token, handler, s.logger), Logger: s.logger}
	s.mu.Lock()
	if s.socket != nil {
		_ = s.socket.Close()
	}
	s.socket = srv
	s.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("data socket stopped", "error", err)
		}
	}()
	return nil
}

// Close closes the data socket, if one is open. A plugin process has no
// need to: it ends with the socket.
func (s *server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.socket == nil {
		return nil
	}
	err := s.socket.Close()
	s.socket = nil
	return err
}

func (s *server) currentHandler() (http.Handler, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handler == nil {
		return nil, status.Error(codes.FailedPrecondition, "plugin not configured")
	}
	return s.handler, nil
}

// configured is what the plugin serves, once Configure has built it.
func (s *server) configured() (*Plugin, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return nil, status.Error(codes.FailedPrecondition, "plugin not configured")
	}
	return s.p, nil
}

func (s *server) RunJob(req *pluginv1.RunJobRequest, stream pluginv1.Plugin_RunJobServer) error {
	p, err := s.configured()
	if err != nil {
		return err
	}
	var job *Job
	for i := range p.Jobs {
		if p.Jobs[i].Name == req.Job {
			job = &p.Jobs[i]
		}
	}
	if job == nil {
		return status.Errorf(codes.NotFound, "no job %q", req.Job)
	}
	run := &JobRun{ID: req.RunId, TenantIDs: req.TenantIds, Params: req.Params, Logger: s.logger.With("job", req.Job, "run_id", req.RunId), stream: stream}
	var n int64
	if job.EachTenant != nil {
		s.mu.Lock()
		host := s.host
		s.mu.Unlock()
		n, err = eachTenant(stream.Context(), host, job, run)
	} else {
		n, err = job.Run(stream.Context(), run)
	}
	if err != nil {
		return status.Error(codes.Unknown, err.Error())
	}
	return run.send(&pluginv1.JobEvent{Event: &pluginv1.JobEvent_Result{Result: &pluginv1.JobResult{RecordsProcessed: n}}})
}

func (s *server) ReadDataset(req *pluginv1.ReadDatasetRequest, stream pluginv1.Plugin_ReadDatasetServer) error {
	p, err := s.configured()
	if err != nil {
		return err
	}
	for _, d := range p.Datasets {
		if d.Name == req.Dataset {
			return streamDataset(stream.Context(), d, req, stream.Send)
		}
	}
	return status.Errorf(codes.NotFound, "no dataset %q", req.Dataset)
}

// datasetBatch bounds one chunk so a large dataset streams instead of
// building one huge message.
const datasetBatch = 256

func streamDataset(ctx context.Context, d Dataset, req *pluginv1.ReadDatasetRequest, send func(*pluginv1.DatasetChunk) error) error {
	chunk := &pluginv1.DatasetChunk{}
	err := d.Read(ctx, DatasetRequest{TenantIDs: req.TenantIds, Params: req.Params}, func(record any) error {
		b, err := json.Marshal(record)
		if err != nil {
			return err
		}
		chunk.Records = append(chunk.Records, b)
		if len(chunk.Records) >= datasetBatch {
			if err := send(chunk); err != nil {
				return err
			}
			chunk = &pluginv1.DatasetChunk{}
		}
		return nil
	})
	if err != nil {
		return status.Error(codes.Unknown, err.Error())
	}
	if len(chunk.Records) > 0 {
		return send(chunk)
	}
	return nil
}

func (s *server) CheckHealth(ctx context.Context, _ *pluginv1.CheckHealthRequest) (*pluginv1.CheckHealthResponse, error) {
	h := Health{Status: "ok"}
	s.mu.Lock()
	p := s.p
	s.mu.Unlock()
	if p != nil && p.CheckHealth != nil {
		h = p.CheckHealth(ctx)
	}
	st := pluginv1.HealthStatus_HEALTH_STATUS_OK
	switch h.Status {
	case "degraded":
		st = pluginv1.HealthStatus_HEALTH_STATUS_DEGRADED
	case "error":
		st = pluginv1.HealthStatus_HEALTH_STATUS_ERROR
	}
	return &pluginv1.CheckHealthResponse{Status: st, Message: h.Message, Details: h.Details}, nil
}
