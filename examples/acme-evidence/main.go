// Command acme_evidence is Acme's evidence plugin for Steward: its job counts each
// tenant's resources in another plugin's inventory; its route serves the counts.
package main

import (
	"context"
	"embed"
	"encoding/json"
	"time"

	"github.com/stewardhq/steward/sdk"
	"github.com/uptrace/bun"
)

//go:embed migrations/*.sql
var migrations embed.FS
var definition = sdk.Definition{Name: "acme_evidence", Version: "1.0.0", Migrations: migrations}

func main() { sdk.Serve(definition, newPlugin) }

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

type listIn struct { // the route's query, checked by the host before list runs
	Tenants sdk.TenantIDs `query:"tenant_ids"` // empty: every tenant the caller may see
	Limit   int64         `query:"limit" minimum:"1" maximum:"200" default:"50"`
}

func newPlugin(_ context.Context, cfg config, env *sdk.Env) (*sdk.Plugin, error) {
	list := func(ctx context.Context, in *listIn) (*sdk.Items[evidence], error) {
		out := &sdk.Items[evidence]{}
		return out, env.DB.NewSelect().Model(&out.Items).Where("tenant_id IN (?)", bun.List(in.Tenants)).OrderExpr("id DESC").Limit(in.Limit).Scan(ctx)
	}
	// collect records a tenant's resource count; the SDK walks the tenants and marks each fresh.
	collect := func(ctx context.Context, _ *sdk.JobRun, t sdk.Tenant) (int64, error) {
		e := evidence{TenantID: t.ID, Control: "inventory-complete", CollectedAt: time.Now().UTC()}
		count := func(json.RawMessage) error { e.Resources++; return nil }
		if err := env.Host.ReadDataset(ctx, cfg.Inventory, []string{t.ID}, nil, count); err != nil {
			return 0, err
		}
		_, err := env.DB.NewInsert().Model(&e).Exec(ctx)
		return 1, err
	}
	return &sdk.Plugin{
		Routes: []sdk.Route{sdk.Get("/api/v1/acme/evidence", sdk.Op{ID: "acme-evidence-list", Summary: "Evidence, newest first"}, list)},
		Jobs:   []sdk.Job{{Name: "collect", JobType: "acme-evidence", DataDomain: "acme_evidence", Schedule: "@every 6h", EachTenant: collect}},
	}, nil
}
