package protocol_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// jobPlugin answers RunJob with the events its jobs name, then ends the
// stream with the job's error.
type jobPlugin struct {
	pluginv1.UnimplementedPluginServer
	jobs map[string]struct {
		events []*pluginv1.JobEvent
		err    error
	}
}

func (p *jobPlugin) RunJob(req *pluginv1.RunJobRequest, out pluginv1.Plugin_RunJobServer) error {
	j := p.jobs[req.Job]
	for _, ev := range j.events {
		if err := out.Send(ev); err != nil {
			return err
		}
	}
	return j.err
}

// serve serves impl on a local port for the test and connects to it.
func serve(t *testing.T, impl pluginv1.PluginServer) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pluginv1.RegisterPluginServer(srv, impl)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func progressEvent(done, total int64, msg string) *pluginv1.JobEvent {
	return &pluginv1.JobEvent{Event: &pluginv1.JobEvent_Progress{Progress: &pluginv1.JobProgress{Done: done, Total: total, Message: msg}}}
}

func resultEvent(n int64) *pluginv1.JobEvent {
	return &pluginv1.JobEvent{Event: &pluginv1.JobEvent_Result{Result: &pluginv1.JobResult{RecordsProcessed: n}}}
}

func alertEvent(severity, title, message string) *pluginv1.JobEvent {
	return &pluginv1.JobEvent{Event: &pluginv1.JobEvent_Alert{Alert: &pluginv1.JobAlert{Severity: severity, Title: title, Message: message}}}
}

func TestCheckAlert(t *testing.T) {
	long := strings.Repeat("é", protocol.MaxAlertTitle)
	for _, tc := range []struct {
		severity, title, message string
		ok                       bool
	}{
		{"warning", "SPF over the lookup limit", "brand-a.example: 12 lookups\n\tlimit 10", true},
		{"critical", long, "", true},
		{"fatal", "t", "", false},
		{"", "t", "", false},
		{"info", "", "", false},
		{"info", long + "x", "", false},
		{"info", "t", strings.Repeat("x", protocol.MaxAlertMessage+1), false},
		{"info", "two\nlines", "", false},
		{"info", "t", "nul\x00", false},
		{"info", "t", "\xff", false},
	} {
		if err := protocol.CheckAlert(tc.severity, tc.title, tc.message); (err == nil) != tc.ok {
			t.Errorf("CheckAlert(%q, %.20q, %.20q) = %v, want ok %t", tc.severity, tc.title, tc.message, err, tc.ok)
		}
	}
}

func TestRecvJob(t *testing.T) {
	type job = struct {
		events []*pluginv1.JobEvent
		err    error
	}
	impl := &jobPlugin{jobs: map[string]job{
		"ok": {events: []*pluginv1.JobEvent{progressEvent(1, 2, "half"), alertEvent("critical", "policy relaxed", "p=none"),
			alertEvent("urgent", "not a severity", ""), alertEvent("info", "", "no title"), alertEvent("info", "bell\a", ""),
			progressEvent(2, 2, "all"), resultEvent(7)}},
		"fails":     {events: []*pluginv1.JobEvent{progressEvent(1, 2, "half")}, err: status.Error(codes.Internal, "subscription gone")},
		"no-result": {events: []*pluginv1.JobEvent{progressEvent(1, 2, "half")}},
	}}
	client := pluginv1.NewPluginClient(serve(t, impl))

	run := func(name string) (int64, []string, error) {
		stream, err := client.RunJob(context.Background(), &pluginv1.RunJobRequest{Job: name})
		if err != nil {
			t.Fatal(err)
		}
		var msgs []string
		n, err := protocol.RecvJob(stream, protocol.JobEvents{
			Progress: func(p *pluginv1.JobProgress) { msgs = append(msgs, p.Message) },
			Alert:    func(a *pluginv1.JobAlert) { msgs = append(msgs, "alert "+a.Severity+" "+a.Title+": "+a.Message) },
		})
		return n, msgs, err
	}
	// The alerts that fail CheckAlert are dropped.
	if n, msgs, err := run("ok"); err != nil || n != 7 || !slices.Equal(msgs, []string{"half", "alert critical policy relaxed: p=none", "all"}) {
		t.Errorf("ok: %d %q %v", n, msgs, err)
	}
	if n, msgs, err := run("fails"); status.Code(err) != codes.Internal || status.Convert(err).Message() != "subscription gone" || n != 0 || len(msgs) != 1 {
		t.Errorf("fails: %d %v %v", n, msgs, err)
	}
	if _, _, err := run("no-result"); !errors.Is(err, protocol.ErrJobWithoutResult) {
		t.Errorf("no-result: %v, want ErrJobWithoutResult", err)
	}
	stream, err := client.RunJob(context.Background(), &pluginv1.RunJobRequest{Job: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := protocol.RecvJob(stream, protocol.JobEvents{}); err != nil || n != 7 {
		t.Errorf("no receivers: %d %v", n, err)
	}
}
