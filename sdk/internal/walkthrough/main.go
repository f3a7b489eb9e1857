// Command acme_evidence is Acme's evidence plugin for Steward: it collects
// the evidence Acme's auditors ask for, tenant by tenant, serves it over
// the Steward API and publishes it to other plugins as a dataset.
package main

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/sdk"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

func main() { sdk.Serve(newPlugin()) }

// item is a row of the plugin's own table. Tables are prefixed with the
// plugin's name because plugins share the host's database.
type item struct {
	bun.BaseModel `bun:"table:acme_evidence_items"`
	ID            int64     `bun:"id,pk,autoincrement" json:"id"`
	TenantID      string    `bun:"tenant_id" json:"tenant_id"`
	Control       string    `bun:"control" json:"control"`
	Status        string    `bun:"status" json:"status"`
	CollectedAt   time.Time `bun:"collected_at" json:"collected_at"`
}

// evidenceList is the list route's body; its type documents the route too.
type evidenceList struct {
	Items []item `json:"items"`
}

type config struct {
	APIURL string `json:"api_url"`
}

type plugin struct {
	cfg       config
	db        *bun.DB
	env       *sdk.Env
	collected prometheus.Counter
}

func newPlugin() *sdk.Plugin {
	p := &plugin{}
	migrations, _ := fs.Sub(migrationFiles, "migrations")
	minLimit, maxLimit := 1.0, 200.0
	return &sdk.Plugin{
		Name:       "acme_evidence",
		Version:    "1.0.0",
		Migrations: migrations,
		Routes: []sdk.Route{
			{Method: "GET", Path: "/api/v1/acme/evidence", TenantScoped: true, Handler: p.list, Operation: &huma.Operation{
				OperationID: "acme-evidence-list", Summary: "Evidence of the caller's tenants", Tags: []string{"acme"},
				Parameters: []*huma.Param{
					{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: &minLimit, Maximum: &maxLimit, Default: 50}},
					{Name: "tenant_ids", In: "query", Schema: &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString}}},
				},
				Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Evidence", evidenceList{})},
			}},
			{Method: "POST", Path: "/api/v1/acme/evidence/{id}/accept", TenantScoped: true, Handler: p.accept, Operation: &huma.Operation{
				OperationID: "acme-evidence-accept", Summary: "Accept one piece of evidence", Tags: []string{"acme"},
				Parameters: []*huma.Param{{Name: "id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: &minLimit}}},
				Responses:  map[string]*huma.Response{"204": {Description: "Accepted"}, "404": {Description: "No such evidence among the caller's tenants"}},
			}},
		},
		Jobs: []sdk.Job{{
			Name: "collect", JobType: "acme-evidence", DataDomain: "acme_evidence", Schedule: "@every 6h", Run: p.collect,
		}},
		Datasets: []sdk.Dataset{{
			Name: "acme_evidence.items", Description: "Collected evidence by tenant",
			Schema: json.RawMessage(`{"type":"object","properties":{"tenant_id":{"type":"string"},"control":{"type":"string"},"status":{"type":"string"}}}`),
			Read:   p.readItems,
		}},
		ConfigSchema: json.RawMessage(`{"type":"object","properties":{"api_url":{"type":"string"}},"required":["api_url"]}`),
		Configure: func(ctx context.Context, env *sdk.Env) error {
			if err := json.Unmarshal(env.Config, &p.cfg); err != nil {
				return fmt.Errorf("config: %w", err)
			}
			db, err := store.Open(ctx, env.DatabaseURL, store.Options{})
			if err != nil {
				return err
			}
			p.db, p.env = db, env
			p.collected = prometheus.NewCounter(prometheus.CounterOpts{
				Name: "acme_evidence_collected_total", Help: "Pieces of evidence collected.",
			})
			env.Logger.Info("configured", "api_url", p.cfg.APIURL)
			return env.Metrics.Register(p.collected)
		},
	}
}

// list serves the evidence of the tenants the caller asked for, all of the
// caller's tenants by default.
func (p *plugin) list(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err) // 403 for a tenant outside the caller's scope
		return
	}
	// The host has checked limit against the operation's bounds, and the
	// SDK has set the operation's default when the caller gave none.
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	items := []item{}
	if len(tenants) > 0 {
		err := p.db.NewSelect().Model(&items).Where("tenant_id IN (?)", bun.List(tenants)).
			Order("id").Limit(int64(limit)).Scan(r.Context())
		if err != nil {
			sdk.WriteError(w, err) // 500 without the error's text
			return
		}
	}
	sdk.WriteJSON(w, http.StatusOK, evidenceList{Items: items})
}

func (p *plugin) accept(w http.ResponseWriter, r *http.Request) {
	var it item
	err := p.db.NewSelect().Model(&it).Where("id = ?", r.PathValue("id")).Scan(r.Context())
	// Evidence of a tenant the caller may not see does not exist for them.
	if err != nil || !sdk.PrincipalFrom(r.Context()).CanSee(it.TenantID) {
		sdk.WriteError(w, sdk.NotFound("no such evidence"))
		return
	}
	if _, err := p.db.NewUpdate().Model(&it).Set("status = ?", "accepted").WherePK().Exec(r.Context()); err != nil {
		sdk.WriteError(w, err)
		return
	}
	err = p.env.Host.Audit(r.Context(), sdk.AuditEntry{
		Action: "acme_evidence.accept.success", Status: "success", TenantID: it.TenantID,
		ResourceType: "acme_evidence_item", ResourceID: strconv.FormatInt(it.ID, 10),
		Details: map[string]any{"control": it.Control},
	})
	if err != nil {
		p.env.Logger.Error("audit failed", "error", err)
	}
	w.WriteHeader(http.StatusNoContent)
}

// collect stores fresh evidence for every active tenant and tells the host
// the tenant's evidence is current.
func (p *plugin) collect(ctx context.Context, run *sdk.JobRun) (int64, error) {
	tenants, err := p.env.Host.Tenants(ctx, run.TenantIDs...)
	if err != nil {
		return 0, err
	}
	var n int64
	for i, t := range tenants {
		rows, err := p.fetch(ctx, t)
		if err != nil {
			return n, fmt.Errorf("tenant %s: %w", t.Name, err)
		}
		if _, err := p.db.NewInsert().Model(&rows).Exec(ctx); err != nil {
			return n, err
		}
		n += int64(len(rows))
		p.collected.Add(float64(len(rows)))
		if err := p.env.Host.MarkFresh(ctx, t.ID, "acme_evidence", time.Now()); err != nil {
			return n, err
		}
		run.Progress(int64(i+1), int64(len(tenants)), "tenant "+t.Name)
	}
	return n, nil
}

// fetch stands in for the call to Acme's evidence API at p.cfg.APIURL.
func (p *plugin) fetch(_ context.Context, t sdk.Tenant) ([]item, error) {
	now := time.Now().UTC()
	return []item{
		{TenantID: t.ID, Control: "mfa-enforced", Status: "collected", CollectedAt: now},
		{TenantID: t.ID, Control: "backup-tested", Status: "collected", CollectedAt: now},
	}, nil
}

// readItems emits only records of the tenants in the request, as every
// dataset must.
func (p *plugin) readItems(ctx context.Context, req sdk.DatasetRequest, emit func(any) error) error {
	if len(req.TenantIDs) == 0 {
		return nil
	}
	var items []item
	if err := p.db.NewSelect().Model(&items).Where("tenant_id IN (?)", bun.List(req.TenantIDs)).Order("id").Scan(ctx); err != nil {
		return err
	}
	for _, it := range items {
		if err := emit(it); err != nil {
			return err
		}
	}
	return nil
}
