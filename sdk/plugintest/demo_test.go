package plugintest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing/fstest"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
)

// demo is a small plugin exercising every part of the SDK the harness
// drives; the tests reach into it to see what the plugin saw.
type demo struct {
	env *sdk.Env
	cfg demoConfig
	// change, when set, alters the plugin build makes.
	change func(*sdk.Plugin)
}

type demoConfig struct {
	Fail  bool   `json:"fail,omitempty"`
	Label string `json:"label,omitempty" maxLength:"8"`
}

const demoRecords = 600

var demoDefinition = sdk.Definition{
	Name:    "demo",
	Version: "2.3.4",
	Migrations: fstest.MapFS{
		"0001_evidence.up.sql":       {Data: []byte("CREATE TABLE demo_evidence (id TEXT);")},
		"0001_evidence.down.sql":     {Data: []byte("DROP TABLE demo_evidence;")},
		"0002_index.postgres.up.sql": {Data: []byte("CREATE INDEX CONCURRENTLY x ON demo_evidence (id);")},
		"0002_index.sqlite.up.sql":   {Data: []byte("CREATE INDEX x ON demo_evidence (id);")},
		"README.txt":                 {Data: []byte("not a migration")},
		"0002_index.down.sql":        {Data: []byte("DROP INDEX x;")},
	},
}

// build is the demo's factory.
func (d *demo) build(_ context.Context, cfg demoConfig, env *sdk.Env) (*sdk.Plugin, error) {
	if cfg.Fail {
		return nil, errors.New("config says fail")
	}
	d.env, d.cfg = env, cfg
	limitMin, limitMax := 1.0, 500.0
	p := &sdk.Plugin{
		Routes: []sdk.Route{
			{Method: "get", Path: "/api/v1/demo/whoami", Handler: func(w http.ResponseWriter, r *http.Request) {
				info := sdk.Info(r.Context())
				sdk.WriteJSON(w, http.StatusOK, map[string]any{
					"principal": info.Principal, "request_id": info.RequestID, "route": info.Route,
					"authorization": r.Header.Get("Authorization"), "custom": r.Header.Get("X-Custom"),
				})
			}},
			{Method: "GET", Path: "/api/v1/demo/tenants/{tenant_id}/items", TenantScoped: true, Handler: func(w http.ResponseWriter, r *http.Request) {
				sdk.WriteJSON(w, http.StatusOK, map[string]string{"tenant_id": r.PathValue("tenant_id"), "route": sdk.Info(r.Context()).Route})
			}, Operation: &huma.Operation{Parameters: []*huma.Param{{Name: "tenant_id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeString}}}}},
			{Method: "GET", Path: "/api/v1/demo/items", TenantScoped: true, Handler: func(w http.ResponseWriter, r *http.Request) {
				sdk.WriteJSON(w, http.StatusOK, map[string]any{"tenants": sdk.PrincipalFrom(r.Context()).TenantIDs})
			}, Operation: &huma.Operation{
				OperationID: "demo-items", Summary: "Items of the caller's tenants",
				Parameters: []*huma.Param{{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: &limitMin, Maximum: &limitMax}}},
			}},
			// controls reads other.controls for the tenants named in "ask",
			// whoever the caller is: a handler that forgot its scope check.
			{Method: "GET", Path: "/api/v1/demo/controls", Handler: func(w http.ResponseWriter, r *http.Request) {
				var asked []string
				if a := r.URL.Query().Get("ask"); a != "" {
					asked = strings.Split(a, ",")
				}
				var tenants []string
				err := d.env.Host.ReadDataset(r.Context(), "other.controls", asked, nil, func(rec json.RawMessage) error {
					var c struct {
						TenantID string `json:"tenant_id"`
					}
					err := json.Unmarshal(rec, &c)
					tenants = append(tenants, c.TenantID)
					return err
				})
				if err != nil {
					sdk.WriteError(w, err)
					return
				}
				sdk.WriteJSON(w, http.StatusOK, map[string]any{"tenants": tenants})
			}},
			{Method: "POST", Path: "/api/v1/demo/echo", Handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/octet-stream")
				w.Header().Set("X-Request-Length", strconv.FormatInt(r.ContentLength, 10))
				_, _ = io.Copy(w, r.Body)
			}},
			{Method: "POST", Path: "/api/v1/demo/upload", Handler: func(w http.ResponseWriter, _ *http.Request) {
				// Refuses the upload without reading it, as a handler checking
				// Content-Length against its limit does.
				sdk.WriteError(w, &sdk.Problem{Title: "Request Entity Too Large", Status: http.StatusRequestEntityTooLarge, Detail: "uploads are limited to 1 MB"})
			}},
			{Method: "GET", Path: "/api/v1/demo/large", Handler: func(w http.ResponseWriter, r *http.Request) {
				size, _ := strconv.Atoi(r.URL.Query().Get("size"))
				_, _ = w.Write(pattern(size))
			}},
			{Method: "GET", Path: "/api/v1/demo/broken", Handler: func(w http.ResponseWriter, _ *http.Request) {
				sdk.WriteError(w, errors.New("dial tcp 10.0.0.7:5432: password authentication failed"))
			}},
			{Method: "GET", Path: "/api/v1/demo/conflict", Handler: func(w http.ResponseWriter, _ *http.Request) {
				sdk.WriteError(w, sdk.Conflict("evidence already filed"))
			}},
			{Method: "GET", Path: "/api/v1/demo/panic", Handler: func(http.ResponseWriter, *http.Request) {
				panic("handler bug")
			}},
			{Method: "POST", Path: "/api/v1/demo/evidence", Handler: func(w http.ResponseWriter, r *http.Request) {
				err := d.env.Host.Audit(r.Context(), sdk.AuditEntry{
					Action: r.URL.Query().Get("action"), Status: "success", TenantID: "t1",
					ResourceType: "evidence", ResourceID: "ev-1", Details: map[string]any{"files": 2},
				})
				if err != nil {
					sdk.WriteError(w, sdk.BadRequest(err.Error()))
					return
				}
				w.WriteHeader(http.StatusCreated)
			}},
			{Method: "GET", Path: "/api/v1/demo/admin", Auth: sdk.AuthAdmin, RateClass: sdk.RateSync, Handler: func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusNoContent)
			}},
			{Method: "POST", Path: "/api/v1/demo/export", RateClass: sdk.RateCostly, Handler: func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusNoContent)
			}},
			{Method: "GET", Path: "/api/v1/demo/public", Auth: sdk.AuthNone, RateClass: sdk.RateAuth, Handler: func(w http.ResponseWriter, r *http.Request) {
				sdk.WriteJSON(w, http.StatusOK, map[string]bool{"anonymous": sdk.PrincipalFrom(r.Context()).Anonymous()})
			}},
		},
		Jobs: []sdk.Job{
			{Name: "sync", JobType: "demo", DataDomain: "evidence", Schedule: "@every 1h", Run: d.sync},
			{Name: "fail", JobType: "demo", Run: func(context.Context, *sdk.JobRun) (int64, error) {
				return 0, errors.New("upstream refused the export")
			}},
			{Name: "panic", JobType: "demo", Run: func(context.Context, *sdk.JobRun) (int64, error) { panic("job bug") }},
			{Name: "alerts", JobType: "demo", Run: func(_ context.Context, run *sdk.JobRun) (int64, error) {
				if err := run.Alert(sdk.AlertCritical, "DKIM key removed: brand-a.example", "selector1 no longer publishes a key"); err != nil {
					return 0, err
				}
				if err := run.Alert("urgent", "not a severity", ""); err == nil {
					return 0, errors.New("an alert of an unknown severity was sent")
				}
				return 1, nil
			}},
			{Name: "each", JobType: "demo", DataDomain: "evidence", EachTenant: func(_ context.Context, _ *sdk.JobRun, t sdk.Tenant) (int64, error) {
				if t.ID == "t1" {
					return 2, errors.New("export refused")
				}
				return 5, nil
			}},
			d.reader("import", "other.controls", []string{"t1"}),
			d.reader("import-all", "other.controls", nil),
			d.reader("reread", "demo.records", []string{"t2"}),
			d.reader("import-missing", "nobody.publishes", nil),
		},
		Datasets: []sdk.Dataset{{
			Name: "demo.records", Description: "Numbered records", Schema: json.RawMessage(`{"type":"object"}`),
			Read: func(_ context.Context, req sdk.DatasetRequest, emit func(any) error) error {
				for i := range demoRecords {
					if err := emit(map[string]any{"n": i, "tenant_id": req.TenantIDs, "kind": req.Params["kind"]}); err != nil {
						return err
					}
				}
				return nil
			},
		}, {
			Name: "demo.broken",
			Read: func(context.Context, sdk.DatasetRequest, func(any) error) error { return errors.New("table is gone") },
		}},
		Events: []sdk.EventType{{Name: "demo.item_found", Description: "An item was found."}},
		CheckHealth: func(context.Context) sdk.Health {
			return sdk.Health{Status: "degraded", Message: "export API slow", Details: map[string]string{"latency_ms": "900"}}
		},
	}
	if d.change != nil {
		d.change(p)
	}
	return p, nil
}

func (d *demo) sync(ctx context.Context, run *sdk.JobRun) (int64, error) {
	tenants, err := d.env.Host.Tenants(ctx)
	if err != nil {
		return 0, err
	}
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, t := range tenants {
		if err := d.env.Host.MarkFresh(ctx, t.ID, "evidence", at); err != nil {
			return 0, err
		}
		run.Progress(int64(i+1), int64(len(tenants)), "tenant "+t.Name)
	}
	return int64(len(tenants)) * 10, nil
}

// reader is a job that counts the records of a dataset it reads through
// the host.
func (d *demo) reader(job, dataset string, tenantIDs []string) sdk.Job {
	return sdk.Job{Name: job, JobType: "demo", Run: func(ctx context.Context, _ *sdk.JobRun) (int64, error) {
		var n int64
		err := d.env.Host.ReadDataset(ctx, dataset, tenantIDs, nil, func(json.RawMessage) error {
			n++
			return nil
		})
		return n, err
	}}
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%23)
	}
	return b
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return b
}
