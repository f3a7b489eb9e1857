// Command acme_evidence is Acme's evidence plugin for Steward. Its job reads
// the resource inventory another plugin publishes and records, tenant by
// tenant, how many resources the inventory holds, as evidence for Acme's
// auditors; a route serves that evidence and a dashboard fragment sums it up.
package main

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/sdk"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

func main() { sdk.Serve(definition(), newPlugin) }

// definition is what the plugin is before any config.
func definition() sdk.Definition {
	migrations, _ := fs.Sub(migrationFiles, "migrations")
	return sdk.Definition{Name: "acme_evidence", Version: "1.0.0", Migrations: migrations}
}

// evidence is a row of the plugin's own table. Tables are prefixed with the
// plugin's name: a deployment may point several plugins at one database.
type evidence struct {
	bun.BaseModel `bun:"table:acme_evidence"`
	ID            int64     `bun:"id,pk,autoincrement" json:"id"`
	TenantID      string    `bun:"tenant_id" json:"tenant_id"`
	Control       string    `bun:"control" json:"control"`
	Resources     int64     `bun:"resources" json:"resources"`
	CollectedAt   time.Time `bun:"collected_at" json:"collected_at"`
}

// evidenceList is the list route's body; its type documents the route too.
type evidenceList struct {
	Items []evidence `json:"items"`
}

// config is the plugin's config {} block; the host refuses a block
// without inventory, or with a key it does not declare, before the plugin
// starts.
type config struct {
	Inventory string `json:"inventory" minLength:"1" doc:"The dataset the job reads, such as testplugin.items"`
}

type plugin struct {
	cfg  config
	db   *bun.DB
	host *sdk.Host
}

// newPlugin builds the plugin from its config.
func newPlugin(ctx context.Context, cfg config, env *sdk.Env) (*sdk.Plugin, error) {
	db, err := store.Open(ctx, env.DatabaseURL, store.Options{})
	if err != nil {
		return nil, err
	}
	p := &plugin{cfg: cfg, db: db, host: env.Host}
	minLimit, maxLimit := 1.0, 200.0
	return &sdk.Plugin{
		Routes: []sdk.Route{{
			Method: "GET", Path: "/api/v1/acme/evidence", TenantScoped: true, Handler: p.list,
			Operation: &huma.Operation{
				OperationID: "acme-evidence-list", Summary: "Evidence of the caller's tenants, newest first", Tags: []string{"acme"},
				Parameters: []*huma.Param{
					{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: &minLimit, Maximum: &maxLimit, Default: 50}},
					{Name: "tenant_ids", In: "query", Schema: &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString}}},
				},
				Responses: map[string]*huma.Response{"200": sdk.JSONResponse("Evidence", evidenceList{})},
			},
		}},
		Jobs: []sdk.Job{{
			Name: "collect", JobType: "acme-evidence", DataDomain: "acme_evidence", Schedule: "@every 6h", Run: p.collect,
		}},
		Fragments: []sdk.Fragment{{
			Path: "/fragments/acme/evidence", Title: "Evidence", Slot: "dashboard", RefreshSeconds: 300, Handler: p.summary,
		}},
	}, nil
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
	items := []evidence{}
	if len(tenants) > 0 {
		err := p.db.NewSelect().Model(&items).Where("tenant_id IN (?)", bun.List(tenants)).
			OrderExpr("id DESC").Limit(int64(limit)).Scan(r.Context())
		if err != nil {
			sdk.WriteError(w, err) // 500 without the error's text
			return
		}
	}
	sdk.WriteJSON(w, http.StatusOK, evidenceList{Items: items})
}

// collect counts each active tenant's resources in the inventory, stores
// the count as evidence and tells the host the tenant's evidence is current.
func (p *plugin) collect(ctx context.Context, run *sdk.JobRun) (int64, error) {
	tenants, err := p.host.Tenants(ctx, run.TenantIDs...)
	if err != nil {
		return 0, err
	}
	for i, t := range tenants {
		row := evidence{TenantID: t.ID, Control: "inventory-complete", CollectedAt: time.Now().UTC()}
		// The host relays only the records of the tenants asked for.
		err := p.host.ReadDataset(ctx, p.cfg.Inventory, []string{t.ID}, nil, func(json.RawMessage) error {
			row.Resources++
			return nil
		})
		if err != nil {
			return int64(i), fmt.Errorf("read %s: %w", p.cfg.Inventory, err)
		}
		if _, err := p.db.NewInsert().Model(&row).Exec(ctx); err != nil {
			return int64(i), err
		}
		if err := p.host.MarkFresh(ctx, t.ID, "acme_evidence", row.CollectedAt); err != nil {
			return int64(i + 1), err
		}
		run.Progress(int64(i+1), int64(len(tenants)), "tenant "+t.Name)
	}
	return int64(len(tenants)), nil
}

var summaryHTML = template.Must(template.New("summary").Parse(`<ul class="acme-evidence">
{{- range .}}
<li>{{.Name}}: {{.Resources}} resources on {{.CollectedAt.Format "2006-01-02 15:04 MST"}}</li>
{{- else}}
<li>No evidence collected yet.</li>
{{- end}}
</ul>
`))

// summary renders the dashboard fragment: the newest evidence of each of
// the caller's tenants.
func (p *plugin) summary(w http.ResponseWriter, r *http.Request) {
	type line struct {
		Name string
		evidence
	}
	lines := []line{}
	// An empty list would ask the host for every tenant.
	if ids := sdk.PrincipalFrom(r.Context()).TenantIDs; len(ids) > 0 {
		tenants, err := p.host.Tenants(r.Context(), ids...)
		if err != nil {
			sdk.WriteError(w, err)
			return
		}
		var newest []evidence
		perTenant := p.db.NewSelect().Model((*evidence)(nil)).ColumnExpr("MAX(id)").Where("tenant_id IN (?)", bun.List(ids)).Group("tenant_id")
		if err := p.db.NewSelect().Model(&newest).Where("id IN (?)", perTenant).Scan(r.Context()); err != nil {
			sdk.WriteError(w, err)
			return
		}
		for _, t := range tenants {
			for _, e := range newest {
				if e.TenantID == t.ID {
					lines = append(lines, line{t.Name, e})
				}
			}
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := summaryHTML.Execute(w, lines); err != nil {
		sdk.WriteError(w, err)
	}
}
