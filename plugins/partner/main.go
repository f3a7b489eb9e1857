// Command partner is the partner-requirements plugin: a partner company
// imposes security requirements on the organisation's tenants, with a
// deadline. The plugin loads the partner's requirements catalogue from its
// config (package catalogue), assesses each tenant against it after every
// partner sync — automatic checks on the metrics the identity and
// compliance plugins publish, a maturity score and the gaps, kept as a
// daily snapshot (package checks) — and serves the reads, the partner page
// and a dashboard card (package views).
//
// Tenants keep evidence for the requirements — status, owner, due date,
// notes, links and uploaded files — which an admin reviews and which
// lapses when its acceptance expires (package evidence); accepted
// evidence meets a requirement no automatic check decides.
//
// It is also the model of an evidence plugin a brand writes for itself;
// README.md beside it walks through its parts.
package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/plugins/partner/catalogue"
	"github.com/stewardhq/steward/plugins/partner/checks"
	"github.com/stewardhq/steward/plugins/partner/evidence"
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
// the checks' in Migrations, its daily expiry in Jobs, its config members
// (evidence_dir, max_file_bytes) beside the catalogue's, and in Configure
// its Store's Statuses as the runner's Evidence.
func New() *sdk.Plugin {
	runner := &checks.Runner{}
	reads := &checks.Handlers{}
	pages := &views.Handlers{}
	ev := &evidence.Handlers{}
	fragments, pageList, nav := pages.Views()
	configSchema, err := evidence.ExtendConfigSchema(catalogue.ConfigSchema)
	if err != nil {
		panic(err)
	}
	return &sdk.Plugin{
		Name:         "partner",
		Version:      "0.1.0",
		Routes:       slices.Concat(reads.Routes(), ev.Routes(), pages.EvidenceRoutes()),
		Fragments:    fragments,
		Pages:        pageList,
		Nav:          nav,
		Migrations:   store.MergeMigrations(checks.Migrations(), evidence.Migrations()),
		ConfigSchema: configSchema,
		// The identity and compliance plugins sync every 6 and 4 hours;
		// the assessment follows a little behind.
		Jobs: []sdk.Job{{Name: "partner", JobType: checks.Domain, DataDomain: checks.Domain, Schedule: "@every 6h",
			Run: func(ctx context.Context, run *sdk.JobRun) (int64, error) { return runner.Run(ctx, run) }},
			ev.ExpiryJob()},
		Configure: func(ctx context.Context, env *sdk.Env) error {
			evCfg, rest, err := evidence.ReadConfig(env.Config)
			if err != nil {
				return err
			}
			cat, err := catalogue.FromConfig(rest)
			if err != nil {
				return fmt.Errorf("catalogue: %w", err)
			}
			db, err := store.Open(ctx, env.DatabaseURL, store.Options{})
			if err != nil {
				return err
			}
			st := &checks.Store{DB: db}
			evStore, err := configureEvidence(ev, evCfg, cat, db, env)
			if err != nil {
				return err
			}
			*runner = checks.Runner{Catalogue: cat, Store: st, Host: env.Host, Datasets: env.Host, Evidence: evStore.Statuses}
			*reads = checks.Handlers{Catalogue: cat, Store: st, Host: env.Host}
			*pages = views.Handlers{Catalogue: cat, Store: st, Reads: reads, Host: env.Host, Evidence: ev}
			return nil
		},
	}
}

// configureEvidence fills in the evidence routes and job: records in the
// plugin's database, files in the blob directory, kept for the
// catalogue's requirements only.
func configureEvidence(ev *evidence.Handlers, cfg evidence.Config, cat *catalogue.Catalogue, db *bun.DB, env *sdk.Env) (*evidence.Store, error) {
	dir, err := cfg.Dir(env.DataDir)
	if err != nil {
		return nil, err
	}
	blobs, err := evidence.NewDir(dir)
	if err != nil {
		return nil, err
	}
	st := &evidence.Store{DB: db}
	*ev = evidence.Handlers{Store: st, Blobs: blobs, Host: env.Host, Logger: env.Logger, MaxFileBytes: cfg.MaxFileBytes,
		Requirement: func(id string) bool { _, ok := cat.Requirement(id); return ok }}
	return st, nil
}
