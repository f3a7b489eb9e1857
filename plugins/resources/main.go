// Command resources is the resources domain plugin: compute and network
// quota usages (package quotas) and the inventory of every resource with
// its lifecycle (package inventory), each synced from the cloud by its own
// job of the resources job type, so POST /api/v1/sync/resources runs both.
package main

import (
	"context"
	"encoding/json"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/plugins/resources/inventory"
	"github.com/stewardhq/steward/plugins/resources/quotas"
	"github.com/stewardhq/steward/sdk"
)

// config is the plugin's config {} block in plugins.hcl.
type config struct {
	// Locations are the regions whose quotas are synced.
	Locations []string `json:"locations"`
	// RequiredTags are the tag keys every resource should carry, against
	// which tag coverage is measured.
	RequiredTags []string `json:"required_tags"`
}

const configSchema = `{"type": "object", "properties": {
  "locations": {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9]+$"}, "minItems": 1},
  "required_tags": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 512}, "maxItems": 50, "uniqueItems": true}},
  "additionalProperties": false}`

func main() { sdk.Serve(New()) }

// New builds the plugin.
func New() *sdk.Plugin {
	handlers := &quotas.Handlers{}
	syncer := &quotas.Syncer{}
	inventorySyncer := &inventory.Syncer{}
	inventoryHandlers := &inventory.Handlers{}
	inventoryStore := &inventory.Store{}
	fragments, pages, nav := handlers.Views()
	return &sdk.Plugin{
		Name:         "resources",
		Version:      "0.1.0",
		Routes:       append(handlers.Routes(), inventoryHandlers.Routes()...),
		Fragments:    fragments,
		Pages:        pages,
		Nav:          nav,
		Datasets:     []sdk.Dataset{inventoryStore.Dataset()},
		Migrations:   store.MergeMigrations(quotas.Migrations(), inventory.Migrations()),
		ConfigSchema: json.RawMessage(configSchema),
		Jobs: []sdk.Job{
			{Name: "quotas", JobType: "resources", DataDomain: "resources", Schedule: "@every 1h",
				Run: func(ctx context.Context, run *sdk.JobRun) (int64, error) { return syncer.Run(ctx, run) }},
			{Name: "inventory", JobType: "resources", DataDomain: "resources", Schedule: "@every 1h",
				Run: func(ctx context.Context, run *sdk.JobRun) (int64, error) { return inventorySyncer.Run(ctx, run) }},
		},
		Configure: func(ctx context.Context, env *sdk.Env) error {
			cfg := config{Locations: []string{quotas.DefaultLocation, "westeurope"}}
			clients, db, err := pluginenv.Open(ctx, env, &cfg)
			if err != nil {
				return err
			}
			st := quotas.NewStore(db)
			handlers.Store = st
			handlers.Inventory = inventoryHandlers.Section
			handlers.InventoryStats = inventoryHandlers.Stats
			*syncer = quotas.Syncer{Cloud: clients, Store: st, Host: env.Host, Locations: cfg.Locations}
			inventoryStore.DB = db
			*inventorySyncer = inventory.Syncer{Cloud: clients, Store: inventoryStore, Host: env.Host}
			*inventoryHandlers = inventory.Handlers{Store: inventoryStore, RequiredTags: cfg.RequiredTags, Host: env.Host}
			return nil
		},
	}
}
