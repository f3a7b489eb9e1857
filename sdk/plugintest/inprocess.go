package plugintest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// New serves p in the test process and returns it described and configured.
// The plugin sits behind a real go-plugin gRPC server whose broker carries
// the Host service, so HTTP, jobs and Host calls cross the same protocol as
// in production; only the process boundary and the data socket are missing.
// Everything is stopped when the test ends.
func New(t testing.TB, p *sdk.Plugin, opts Options) *Harness {
	t.Helper()
	if opts.DataSocket {
		t.Fatal("plugintest: Options.DataSocket needs a plugin binary; use Start")
	}
	opts = withDefaults(t, opts)
	logger := newLogger(t, p.Name)
	srv := &pluginServer{p: p, logger: logger}

	ctx, stop := context.WithCancel(context.Background())
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	go plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: protocol.Handshake,
		Plugins:         protocol.PluginMap(&protocol.GRPCPlugin{Impl: srv, OnBroker: srv.setBroker}),
		GRPCServer:      grpcServer(logger),
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
		t.Fatalf("plugintest: connect to %s: %v", p.Name, err)
	}
	rpcClient = c
	raw, err := c.Dispense(protocol.PluginName)
	if err != nil {
		t.Fatalf("plugintest: dispense %s: %v", p.Name, err)
	}
	h, err := configure(t, raw.(*protocol.Client), opts, "")
	if err != nil {
		t.Fatalf("plugintest: %s: %v", p.Name, err)
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

// grpcServer gives the in-process server what sdk.Serve gives a plugin
// process: a panic becomes an Internal error for the one call, and request
// messages may be as large as the host allows.
func grpcServer(logger hclog.Logger) func([]grpc.ServerOption) *grpc.Server {
	return func(opts []grpc.ServerOption) *grpc.Server {
		opts = append(opts,
			grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
				defer recoverTo(logger, info.FullMethod, &err)
				return h(ctx, req)
			}),
			grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
				defer recoverTo(logger, info.FullMethod, &err)
				return h(srv, ss)
			}),
			grpc.MaxRecvMsgSize(16<<20),
		)
		return grpc.NewServer(opts...)
	}
}

func recoverTo(logger hclog.Logger, method string, err *error) {
	if r := recover(); r != nil {
		logger.Error("panic", "method", method, "panic", fmt.Sprint(r))
		*err = status.Errorf(codes.Internal, "plugin panic in %s", method)
	}
}

// pluginServer is the Plugin service around an *sdk.Plugin, assembled from
// the SDK's exported building blocks to behave as the server sdk.Serve runs,
// which the SDK keeps to itself.
type pluginServer struct {
	pluginv1.UnimplementedPluginServer
	p      *sdk.Plugin
	logger hclog.Logger

	mu      sync.Mutex
	broker  *plugin.GRPCBroker
	handler http.Handler
}

func (s *pluginServer) setBroker(b *plugin.GRPCBroker) {
	s.mu.Lock()
	s.broker = b
	s.mu.Unlock()
}

func (s *pluginServer) Describe(context.Context, *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	return sdk.Describe(s.p)
}

func (s *pluginServer) Configure(ctx context.Context, req *pluginv1.ConfigureRequest) (*pluginv1.ConfigureResponse, error) {
	s.mu.Lock()
	broker := s.broker
	s.mu.Unlock()
	env := &sdk.Env{
		Config: req.Config, DatabaseURL: req.DatabaseUrl, Environment: req.Environment,
		DataDir: req.DataDir, Cloud: req.Cloud, Logger: s.logger,
	}
	if broker != nil && req.HostBrokerId != 0 {
		conn, err := broker.Dial(req.HostBrokerId)
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "dial host service: %v", err)
		}
		env.Host = sdk.NewHost(pluginv1.NewHostClient(conn))
	}
	if s.p.Configure != nil {
		if err := s.p.Configure(ctx, env); err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "configure %s: %v", s.p.Name, err)
		}
	}
	handler := s.p.Handler
	if handler == nil {
		handler = http.NotFoundHandler()
	}
	s.mu.Lock()
	s.handler = handler
	s.mu.Unlock()
	return &pluginv1.ConfigureResponse{}, nil
}

func (s *pluginServer) currentHandler() (http.Handler, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handler == nil {
		return nil, status.Error(codes.FailedPrecondition, "plugin not configured")
	}
	return s.handler, nil
}

func (s *pluginServer) HandleHTTP(stream pluginv1.Plugin_HandleHTTPServer) error {
	handler, err := s.currentHandler()
	if err != nil {
		return err
	}
	return sdk.ServeHTTPStream(stream, handler)
}

func (s *pluginServer) RunJob(req *pluginv1.RunJobRequest, stream pluginv1.Plugin_RunJobServer) error {
	var job *sdk.Job
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
	run := sdk.NewJobRun(req.RunId, req.TenantIds, s.logger.With("job", req.Job, "run_id", req.RunId), stream.Send)
	run.Params = req.Params
	n, err := job.Run(stream.Context(), run)
	if err != nil {
		return status.Error(codes.Unknown, err.Error())
	}
	return stream.Send(&pluginv1.JobEvent{Event: &pluginv1.JobEvent_Result{Result: &pluginv1.JobResult{RecordsProcessed: n}}})
}

func (s *pluginServer) ReadDataset(req *pluginv1.ReadDatasetRequest, stream pluginv1.Plugin_ReadDatasetServer) error {
	for _, d := range s.p.Datasets {
		if d.Name != req.Dataset {
			continue
		}
		chunk := &pluginv1.DatasetChunk{}
		err := d.Read(stream.Context(), sdk.DatasetRequest{TenantIDs: req.TenantIds, Params: req.Params}, func(record any) error {
			b, err := json.Marshal(record)
			if err != nil {
				return err
			}
			chunk.Records = append(chunk.Records, b)
			if len(chunk.Records) >= datasetBatch {
				if err := stream.Send(chunk); err != nil {
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
			return stream.Send(chunk)
		}
		return nil
	}
	return status.Errorf(codes.NotFound, "no dataset %q", req.Dataset)
}

func (s *pluginServer) CheckHealth(ctx context.Context, _ *pluginv1.CheckHealthRequest) (*pluginv1.CheckHealthResponse, error) {
	h := sdk.Health{Status: "ok"}
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
