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

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/plugins/partner/catalogue"
	"github.com/stewardhq/steward/plugins/partner/checks"
	"github.com/stewardhq/steward/plugins/partner/evidence"
	"github.com/stewardhq/steward/plugins/partner/views"
	"github.com/stewardhq/steward/sdk"
)

var definition = sdk.Definition{Name: "partner", Version: "0.1.0", Migrations: store.MergeMigrations(checks.Migrations(), evidence.Migrations())}

// config is the plugin's config {} block in plugins.hcl: where the
// catalogue comes from, and where the evidence files go.
type config struct {
	catalogue.Source
	evidence.Config
}

// Defaults are the settings of a block that gives none.
func (config) Defaults() config {
	return config{Config: evidence.Config{MaxFileBytes: evidence.DefaultMaxFileBytes}}
}

func main() { sdk.Serve(definition, New) }

// New builds the plugin from its config, once the catalogue is loaded and
// the database open.
//
// The evidence part joins here: its routes beside the reads' in Routes,
// its migrations (numbered from 0010; the checks' are 0001 to 0009) beside
// the checks' in the definition, its daily expiry in Jobs, its config
// members (evidence_dir, max_file_bytes) beside the catalogue's, and its
// Store's Statuses as the runner's Evidence.
func New(ctx context.Context, cfg config, env *sdk.Env) (*sdk.Plugin, error) {
	cat, err := cfg.Source.Load()
	if err != nil {
		return nil, fmt.Errorf("catalogue: %w", err)
	}
	dir, err := cfg.Config.Dir(env.DataDir)
	if err != nil {
		return nil, err
	}
	blobs, err := evidence.NewDir(dir)
	if err != nil {
		return nil, err
	}
	st := &checks.Store{DB: env.DB}
	evStore := &evidence.Store{DB: env.DB}
	ev := &evidence.Handlers{Store: evStore, Blobs: blobs, Host: env.Host, Logger: env.Logger, MaxFileBytes: cfg.MaxFileBytes,
		Requirement: func(id string) bool { _, ok := cat.Requirement(id); return ok }}
	runner := &checks.Runner{Catalogue: cat, Store: st, Host: env.Host, Datasets: env.Host, Evidence: evStore.Statuses}
	reads := &checks.Handlers{Catalogue: cat, Store: st, Host: env.Host}
	pages := &views.Handlers{Catalogue: cat, Store: st, Reads: reads, Host: env.Host, Evidence: ev}
	fragments, pageList, nav := pages.Views()
	return &sdk.Plugin{
		Routes:    slices.Concat(reads.Routes(), ev.Routes(), pages.EvidenceRoutes()),
		Fragments: fragments,
		Pages:     pageList,
		Nav:       nav,
		Events:    []sdk.EventType{evidence.EventType},
		// The identity and compliance plugins sync every 6 and 4 hours;
		// the assessment follows a little behind.
		// The interface names POST /api/v1/partner/sync for this job.
		Jobs: []sdk.Job{{Name: "partner", JobType: checks.Domain, DataDomain: checks.Domain, Schedule: "@every 6h", TriggerPath: "/api/v1/partner/sync",
			Reads: []string{checks.IdentityDataset, checks.ComplianceDataset, checks.FrameworksDataset}, Run: runner.Run},
			ev.ExpiryJob()},
	}, nil
}
