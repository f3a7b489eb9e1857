// Command resources is the resources domain plugin: compute and network
// quota usages (package quotas) and the inventory of every resource with
// its lifecycle (package inventory), each synced from the cloud by its own
// job of the resources job type, so POST /api/v1/sync/resources runs both.
package main

import (
	"context"
	"time"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/plugins/resources/inventory"
	"github.com/stewardhq/steward/plugins/resources/quotas"
	"github.com/stewardhq/steward/sdk"
)

var definition = sdk.Definition{Name: "resources", Version: "0.1.0",
	Migrations: store.MergeMigrations(quotas.Migrations(), inventory.Migrations())}

// config is the plugin's config {} block in plugins.hcl.
type config struct {
	Locations    []string `json:"locations" minItems:"1" pattern:"^[a-z0-9]+$" doc:"Regions whose compute and network quotas are synced"`
	RequiredTags []string `json:"required_tags,omitempty" maxItems:"50" uniqueItems:"true" minLength:"1" maxLength:"512" doc:"Tag keys every resource should carry, against which tag coverage is measured"`
}

// Defaults are the settings of a block that gives none.
func (config) Defaults() config {
	return config{Locations: []string{quotas.DefaultLocation, "westeurope"}}
}

func main() { sdk.Serve(definition, New) }

// New builds the plugin from its config.
func New(ctx context.Context, cfg config, env *sdk.Env) (*sdk.Plugin, error) {
	clients, db, err := pluginenv.Open(env)
	if err != nil {
		return nil, err
	}
	st := quotas.NewStore(db)
	inventoryStore := &inventory.Store{DB: db}
	inventoryHandlers := &inventory.Handlers{Store: inventoryStore, RequiredTags: cfg.RequiredTags, Host: env.Host}
	handlers := &quotas.Handlers{Store: st, Inventory: inventoryHandlers.Section, InventoryStats: inventoryHandlers.Stats, Host: env.Host}
	syncer := &quotas.Syncer{Cloud: clients, Store: st, Host: env.Host, Locations: cfg.Locations}
	inventorySyncer := &inventory.Syncer{Cloud: clients, Store: inventoryStore, Host: env.Host}
	fragments, pages, nav := handlers.Views()
	pages = append(pages, inventoryHandlers.Pages()...)
	return &sdk.Plugin{
		Routes:    append(handlers.Routes(), inventoryHandlers.Routes()...),
		Fragments: fragments,
		Pages:     pages,
		Nav:       nav,
		Datasets:  []sdk.Dataset{inventoryStore.Dataset()},
		Jobs: []sdk.Job{
			{Name: "quotas", JobType: "resources", DataDomain: "resources", Schedule: "@every 1h", StaleAfter: 2 * time.Hour, PerTenant: true, Run: syncer.Run},
			{Name: "inventory", JobType: "resources", DataDomain: "resources", Schedule: "@every 1h", StaleAfter: 2 * time.Hour, PerTenant: true, Run: inventorySyncer.Run},
		},
	}, nil
}
