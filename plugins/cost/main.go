// Command cost is the cost domain plugin: it syncs daily actual costs,
// each resource's cost over the last 30 days, reservation utilisation and
// budgets from the cloud into its own tables, and serves the cost and
// budget routes, anomalies, chargeback, the cost dashboard card and page,
// and the costs and resource_costs datasets.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/cost/anomalies"
	"github.com/stewardhq/steward/plugins/cost/budgets"
	"github.com/stewardhq/steward/plugins/cost/ingest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/plugins/cost/views"
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

func defaultConfig() config {
	return config{BackfillDays: ingest.DefaultBackfillDays, RestateDays: ingest.DefaultRestateDays}
}

func main() { sdk.Serve(New()) }

// New builds the plugin.
func New() *sdk.Plugin {
	reads := &reports.Handlers{}
	anomalyRoutes := &anomalies.Handlers{}
	detector := &anomalies.Detector{}
	budgetRoutes := &budgets.Handlers{}
	evaluator := &budgets.Evaluator{}
	budgetSync := &budgets.Syncer{}
	costViews := &views.Handlers{}
	fragments, pages, nav := costViews.Views()
	// After a tenant's costs are written: judge its days for anomalies,
	// exchange its budgets with the provider, and bring their spend,
	// status and alerts up to date.
	syncer := &ingest.Syncer{AfterTenant: []ingest.Hook{detector.Evaluate, budgetHook(budgetSync), evaluator.Evaluate}}
	return &sdk.Plugin{
		Name:         "cost",
		Version:      "0.1.0",
		Routes:       slices.Concat(reads.Routes(), anomalyRoutes.Routes(), budgetRoutes.Routes()),
		Datasets:     []sdk.Dataset{reads.Dataset(), reads.ResourceDataset()},
		Fragments:    fragments,
		Pages:        pages,
		Nav:          nav,
		Migrations:   ledger.Migrations(),
		ConfigSchema: json.RawMessage(configSchema),
		// Cost Management refreshes a day's costs a few times a day.
		Jobs: []sdk.Job{{Name: "costs", JobType: "costs", DataDomain: "costs", Schedule: "@every 6h",
			Run: func(ctx context.Context, run *sdk.JobRun) (int64, error) { return syncer.Run(ctx, run) }}},
		Configure: func(ctx context.Context, env *sdk.Env) error {
			cfg := defaultConfig()
			clients, db, err := pluginenv.Open(ctx, env, &cfg)
			if err != nil {
				return err
			}
			costs := &ledger.Store{DB: db}
			syncer.Cloud, syncer.Ledger, syncer.Host = clients, costs, env.Host
			syncer.BackfillDays, syncer.RestateDays = cfg.BackfillDays, cfg.RestateDays
			detector.DB = db
			*anomalyRoutes = anomalies.Handlers{DB: db, Host: env.Host}
			budgetStore := budgets.NewStore(db)
			evaluator.Store = budgetStore
			*budgetRoutes = budgets.Handlers{Store: budgetStore, Evaluator: evaluator, Host: env.Host, Logger: env.Logger,
				Syncer: budgetSync}
			*budgetSync = budgets.Syncer{Store: budgetStore, Cloud: clients, Evaluator: evaluator}
			reads.Store, reads.Host = &reports.Store{DB: db}, env.Host
			*costViews = views.Handlers{Reports: reads.Store, Anomalies: &anomalies.Store{DB: db}, Budgets: budgetStore, Host: env.Host}
			return nil
		},
	}
}

// budgetHook syncs a tenant's budgets with the provider as part of the
// costs sync; a budget or subscription that could not be exchanged fails
// the run, naming it, once the others are done.
func budgetHook(s *budgets.Syncer) ingest.Hook {
	return func(ctx context.Context, tenant sdk.Tenant, _, _ ledger.Day) error {
		res, err := s.SyncTenants(ctx, []sdk.Tenant{tenant})
		if err != nil {
			return fmt.Errorf("budgets: %w", err)
		}
		failures := make([]error, 0, len(res.Errors))
		for _, e := range res.Errors {
			failures = append(failures, fmt.Errorf("budgets of subscription %s: %s", e.SubscriptionID, e.Message))
		}
		return errors.Join(failures...)
	}
}
