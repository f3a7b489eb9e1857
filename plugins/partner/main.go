// Command partner is the partner-requirements plugin: a partner company
// imposes security requirements on the organisation's tenants, with a
// deadline. The plugin loads the partner's requirements catalogue from its
// config (package catalogue), assesses each tenant against it after every
// partner sync — automatic checks on the metrics the identity and
// compliance plugins publish, a maturity score and the gaps, kept as a
// daily snapshot (package checks) — and serves the reads, the partner page
// and a dashboard card (package views).
//
// It is also the model of an evidence plugin a brand writes for itself;
// README.md beside it walks through its parts.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/plugins/partner/catalogue"
	"github.com/stewardhq/steward/plugins/partner/checks"
	"github.com/stewardhq/steward/plugins/partner/views"
	"github.com/stewardhq/steward/sdk"
)

func main() { sdk.Serve(New()) }

// New builds the plugin. Its parts are declared before the host configures
// it and filled in by Configure, once the catalogue is loaded and the
// database open.
//
// The evidence part joins here: its routes beside the reads' in Routes,
// its migrations (numbered from 0010; the checks' are 0001 to 0009) beside
// the checks' in Migrations, its jobs in Jobs, and in Configure its
// EvidenceStatus as the runner's Evidence, so that accepted evidence meets
// the requirements no automatic check decides.
func New() *sdk.Plugin {
	runner := &checks.Runner{}
	reads := &checks.Handlers{}
	pages := &views.Handlers{}
	fragments, pageList, nav := pages.Views()
	return &sdk.Plugin{
		Name:         "partner",
		Version:      "0.1.0",
		Routes:       slices.Concat(reads.Routes()),
		Fragments:    fragments,
		Pages:        pageList,
		Nav:          nav,
		Migrations:   store.MergeMigrations(checks.Migrations()),
		ConfigSchema: json.RawMessage(catalogue.ConfigSchema),
		// The identity and compliance plugins sync every 6 and 4 hours;
		// the assessment follows a little behind.
		Jobs: []sdk.Job{{Name: "partner", JobType: checks.Domain, DataDomain: checks.Domain, Schedule: "@every 6h",
			Run: func(ctx context.Context, run *sdk.JobRun) (int64, error) { return runner.Run(ctx, run) }}},
		Configure: func(ctx context.Context, env *sdk.Env) error {
			cat, err := catalogue.FromConfig(env.Config)
			if err != nil {
				return fmt.Errorf("catalogue: %w", err)
			}
			db, err := store.Open(ctx, env.DatabaseURL, store.Options{})
			if err != nil {
				return err
			}
			st := &checks.Store{DB: db}
			*runner = checks.Runner{Catalogue: cat, Store: st, Host: env.Host, Datasets: env.Host}
			*reads = checks.Handlers{Catalogue: cat, Store: st, Host: env.Host}
			*pages = views.Handlers{Catalogue: cat, Store: st, Reads: reads, Host: env.Host}
			return nil
		},
	}
}
