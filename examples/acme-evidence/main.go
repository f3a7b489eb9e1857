// Command acme_evidence is Acme's evidence plugin for Steward: its job counts each
// tenant's resources in another plugin's inventory; its route serves the counts.
package main

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/sdk"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

func main() { sdk.Serve(definition(), newPlugin) }

func definition() sdk.Definition {
	migrations, _ := fs.Sub(migrationFiles, "migrations")
	return sdk.Definition{Name: "acme_evidence", Version: "1.0.0", Migrations: migrations}
}

// config is the config {} block; the host refuses a block this type does not fit.
type config struct {
	Inventory string `json:"inventory" minLength:"1" doc:"The dataset the job reads, such as testplugin.items"`
}

// evidence is a row of the plugin's table and an item of the route's answer.
type evidence struct {
	bun.BaseModel `bun:"table:acme_evidence"`
	TenantID      string    `json:"tenant_id"`
	Control       string    `json:"control"`
	Resources     int64     `json:"resources"`
	CollectedAt   time.Time `json:"collected_at"`
}

type evidenceList struct {
	Items []evidence `json:"items"`
}

// listIn is the route's query, which the host checks before the handler runs.
type listIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"` // empty: every tenant the caller may see
	Limit   int           `query:"limit" minimum:"1" maximum:"200" default:"50"`
}

func newPlugin(ctx context.Context, cfg config, env *sdk.Env) (*sdk.Plugin, error) {
	db, err := store.Open(ctx, env.DatabaseURL, store.Options{})
	if err != nil {
		return nil, err
	}
	list := func(ctx context.Context, in *listIn) (*evidenceList, error) {
		out := &evidenceList{Items: []evidence{}}
		err := db.NewSelect().Model(&out.Items).Where("tenant_id IN (?)", bun.List(in.Tenants)).
			OrderExpr("id DESC").Limit(int64(in.Limit)).Scan(ctx)
		return out, err
	}
	// collect stores each active tenant's resource count and marks the tenant fresh.
	collect := func(ctx context.Context, run *sdk.JobRun) (int64, error) {
		tenants, err := env.Host.Tenants(ctx, run.TenantIDs...)
		if err != nil {
			return 0, err
		}
		for i, t := range tenants {
			e := evidence{TenantID: t.ID, Control: "inventory-complete", CollectedAt: time.Now().UTC()}
			count := func(json.RawMessage) error { e.Resources++; return nil }
			// The host relays only the records of the tenant asked for.
			if err := env.Host.ReadDataset(ctx, cfg.Inventory, []string{t.ID}, nil, count); err != nil {
				return int64(i), fmt.Errorf("read %s: %w", cfg.Inventory, err)
			}
			if _, err := db.NewInsert().Model(&e).Exec(ctx); err != nil {
				return int64(i), err
			}
			if err := env.Host.MarkFresh(ctx, t.ID, "acme_evidence", e.CollectedAt); err != nil {
				return int64(i), err
			}
			run.Progress(int64(i+1), int64(len(tenants)), t.Name)
		}
		return int64(len(tenants)), nil
	}
	return &sdk.Plugin{
		Routes: []sdk.Route{sdk.Get("/api/v1/acme/evidence",
			sdk.Op{ID: "acme-evidence-list", Summary: "Evidence of the caller's tenants, newest first", Tags: []string{"acme"}}, list)},
		Jobs: []sdk.Job{{Name: "collect", JobType: "acme-evidence", DataDomain: "acme_evidence", Schedule: "@every 6h", Run: collect}},
	}, nil
}
