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
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/internal/dataplane"
	"github.com/stewardhq/steward/sdk/internal/serving"
	"github.com/stewardhq/steward/sdk/protocol"
)

// Serve runs the plugin until the host stops it. It never returns when run
// by the host; started by hand it explains that it is a plugin and exits.
// A plugin that Validate refuses is not served: Serve prints every mistake
// to stderr, where the host logs it, and exits.
func Serve(p *Plugin) {
	if err := p.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "plugin %q is not valid:\n%v\n", p.Name, err)
		os.Exit(1)
	}
	logger := hclog.New(&hclog.LoggerOptions{
		Name:       p.Name,
		Level:      hclog.Info,
		Output:     os.Stderr,
		JSONFormat: true,
	})
	defer startProfiling(p.Name, os.Getenv(protocol.EnvProfileDir), logger)()
	if floor := gcFloorFor(debug.SetMemoryLimit(-1)); floor > 0 && os.Getenv("GOGC") == "" {
		keepGCFloor(floor)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: protocol.Handshake,
		Plugins:         protocol.PluginMap(newGRPCPlugin(p, logger)),
		GRPCServer:      serving.GRPCServer(logger),
		Logger:          logger,
	})
}

func init() {
	serving.NewGRPCPlugin = func(p any, logger hclog.Logger) *protocol.GRPCPlugin {
		return newGRPCPlugin(p.(*Plugin), logger)
	}
}

// newGRPCPlugin returns the go-plugin plugin that serves p (see
// serving.NewGRPCPlugin).
func newGRPCPlugin(p *Plugin, logger hclog.Logger) *protocol.GRPCPlugin {
	srv := newServer(p, logger)
	return &protocol.GRPCPlugin{Impl: srv, OnBroker: srv.setBroker}
}

// server implements the Plugin service around a Plugin.
type server struct {
	pluginv1.UnimplementedPluginServer
	p       *Plugin
	logger  hclog.Logger
	metrics *prometheus.Registry

	mu      sync.Mutex
	broker  *plugin.GRPCBroker
	handler http.Handler
	host    *Host
	socket  *dataplane.Server
}

func newServer(p *Plugin, logger hclog.Logger) *server {
	return &server{p: p, logger: logger, metrics: prometheus.NewRegistry()}
}

func (s *server) setBroker(b *plugin.GRPCBroker) {
	s.mu.Lock()
	s.broker = b
	s.mu.Unlock()
}

func (s *server) Describe(context.Context, *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	return describe(s.p)
}

// describe builds the plugin's Describe answer.
func describe(p *Plugin) (*pluginv1.DescribeResponse, error) {
	resp := &pluginv1.DescribeResponse{
		Name:            p.Name,
		Version:         p.Version,
		ProtocolVersion: protocol.Version,
		SdkVersion:      Version,
		Capabilities:    []string{protocol.CapabilityHTTPSocket},
		ConfigSchema:    p.ConfigSchema,
	}
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
		resp.Pages = append(resp.Pages, &pluginv1.Page{Path: pg.Path, Title: pg.Title})
	}
	for _, n := range p.Nav {
		resp.Nav = append(resp.Nav, &pluginv1.NavEntry{Label: n.Label, Path: n.Path, Order: int32(n.Order)})
	}
	for _, j := range p.Jobs {
		resp.Jobs = append(resp.Jobs, &pluginv1.Job{Name: j.Name, JobType: j.JobType, DataDomain: j.DataDomain, DefaultSchedule: j.Schedule})
	}
	for _, d := range p.Datasets {
		resp.Datasets = append(resp.Datasets, &pluginv1.Dataset{Name: d.Name, Description: d.Description, Schema: d.Schema})
	}
	if p.Migrations != nil {
		err := fs.WalkDir(p.Migrations, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".sql") {
				return err
			}
			b, err := fs.ReadFile(p.Migrations, path)
			if err != nil {
				return err
			}
			resp.Migrations = append(resp.Migrations, &pluginv1.Migration{Name: d.Name(), Content: b})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
	}
	return resp, nil
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
	env := &Env{
		Config:           req.Config,
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
		env.Host = &Host{client: pluginv1.NewHostClient(conn)}
	}
	if s.p.Configure != nil {
		if err := s.p.Configure(ctx, env); err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "configure %s: %v", s.p.Name, err)
		}
	}
	handler := s.p.HTTPHandler()
	s.mu.Lock()
	s.handler = handler
	s.host = env.Host
	s.mu.Unlock()

	resp := &pluginv1.ConfigureResponse{}
	if req.DataSocket != "" {
		if err := s.listenSocket(req.DataSocket, req.DataToken, handler); err != nil {
			s.logger.Warn("data socket unavailable; serving HTTP over gRPC only", "error", err)
		} else {
			resp.DataSocketReady = true
		}
	}
	return resp, nil
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

func (s *server) RunJob(req *pluginv1.RunJobRequest, stream pluginv1.Plugin_RunJobServer) error {
	var job *Job
	for i := range s.p.Jobs {
		if s.p.Jobs[i].Name == req.Job {
			job = &s.p.Jobs[i]
		}
	}
	if job == nil {
		return status.Errorf(codes.NotFound, "no job %q", req.Job)
	}
	if _, err := s.currentHandler(); err != nil {
		return err
	}
	run := &JobRun{ID: req.RunId, TenantIDs: req.TenantIds, Params: req.Params, Logger: s.logger.With("job", req.Job, "run_id", req.RunId), stream: stream}
	n, err := job.Run(stream.Context(), run)
	if err != nil {
		return status.Error(codes.Unknown, err.Error())
	}
	return run.send(&pluginv1.JobEvent{Event: &pluginv1.JobEvent_Result{Result: &pluginv1.JobResult{RecordsProcessed: n}}})
}

func (s *server) ReadDataset(req *pluginv1.ReadDatasetRequest, stream pluginv1.Plugin_ReadDatasetServer) error {
	for _, d := range s.p.Datasets {
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
	if s.p.CheckHealth != nil {
		h = s.p.CheckHealth(ctx)
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
