// Command cost is the cost domain plugin: it syncs daily actual costs,
// reservation utilisation and budgets from the cloud into its own tables,
// and serves the cost and budget routes, anomalies, chargeback, the cost
// dashboard card and page, and the costs dataset.
package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/sdk"
)

// config is the plugin's config {} block in plugins.hcl.
type config struct {
	// BackfillDays is how many days a subscription's first sync fetches.
	BackfillDays int `json:"backfill_days"`
	// RestateDays is how many recent days a later sync fetches again,
	// because providers restate them.
	RestateDays int `json:"restate_days"`
}

const configSchema = `{"type": "object", "properties": {
  "backfill_days": {"type": "integer", "minimum": 1, "maximum": 1095},
  "restate_days": {"type": "integer", "minimum": 1, "maximum": 31}
}, "additionalProperties": false}`

func defaultConfig() config { return config{BackfillDays: 365, RestateDays: 5} }

func main() { sdk.Serve(New()) }

// New builds the plugin.
func New() *sdk.Plugin {
	reads := &reports.Handlers{}
	return &sdk.Plugin{
		Name:         "cost",
		Version:      "0.1.0",
		Routes:       reads.Routes(),
		Datasets:     []sdk.Dataset{reads.Dataset()},
		Migrations:   ledger.Migrations(),
		ConfigSchema: json.RawMessage(configSchema),
		Configure: func(ctx context.Context, env *sdk.Env) error {
			cfg := defaultConfig()
			if len(env.Config) > 0 {
				if err := json.Unmarshal(env.Config, &cfg); err != nil {
					return fmt.Errorf("config: %w", err)
				}
			}
			var cc cloud.Config
			if err := json.Unmarshal(env.Cloud, &cc); err != nil {
				return fmt.Errorf("cloud settings: %w", err)
			}
			if _, err := cloud.New(cc); err != nil {
				return err
			}
			db, err := store.Open(ctx, env.DatabaseURL, store.Options{})
			if err != nil {
				return err
			}
			_ = &ledger.Store{DB: db}
			reads.Store, reads.Host = &reports.Store{DB: db}, env.Host
			return nil
		},
	}
}
