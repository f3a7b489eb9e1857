// Command resources is the resources domain plugin. This first slice
// syncs compute and network quota usages from the cloud and serves the
// quota routes; inventory and lifecycle join it later.
package main

import (
	"context"
	"encoding/json"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/resources/quotas"
	"github.com/stewardhq/steward/sdk"
)

// config is the plugin's config {} block in plugins.hcl.
type config struct {
	// Locations are the regions whose quotas are synced.
	Locations []string `json:"locations"`
}

const configSchema = `{"type": "object", "properties": {"locations": {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9]+$"}, "minItems": 1}}, "additionalProperties": false}`

func main() { sdk.Serve(New()) }

// New builds the plugin.
func New() *sdk.Plugin {
	handlers := &quotas.Handlers{}
	syncer := &quotas.Syncer{}
	fragments, pages, nav := handlers.Views()
	return &sdk.Plugin{
		Name:         "resources",
		Version:      "0.1.0",
		Routes:       handlers.Routes(),
		Fragments:    fragments,
		Pages:        pages,
		Nav:          nav,
		Migrations:   quotas.Migrations(),
		ConfigSchema: json.RawMessage(configSchema),
		Jobs: []sdk.Job{{Name: "quotas", JobType: "resources", DataDomain: "resources", Schedule: "@every 1h",
			Run: func(ctx context.Context, run *sdk.JobRun) (int64, error) { return syncer.Run(ctx, run) }}},
		Configure: func(ctx context.Context, env *sdk.Env) error {
			cfg := config{Locations: []string{quotas.DefaultLocation, "westeurope"}}
			clients, db, err := pluginenv.Open(ctx, env, &cfg)
			if err != nil {
				return err
			}
			st := quotas.NewStore(db)
			handlers.Store = st
			*syncer = quotas.Syncer{Cloud: clients, Store: st, Host: env.Host, Locations: cfg.Locations}
			return nil
		},
	}
}
