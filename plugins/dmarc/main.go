// Command dmarc is the mail-authentication plugin: it keeps each tenant's
// mail domains — the directory's verified domains and those admins add —
// checks their DMARC, SPF, DKIM and MX records every few hours, scores
// them, keeps their history and raises an alert when a domain's posture
// weakens. It also ingests the domains' DMARC aggregate reports, uploaded
// or read from a folder, and serves their pass and fail rates.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/plugins/dmarc/domains"
	"github.com/stewardhq/steward/plugins/dmarc/posture"
	"github.com/stewardhq/steward/plugins/dmarc/reports"
	"github.com/stewardhq/steward/sdk"
)

// config is the plugin's config {} block in plugins.hcl.
type config struct {
	// DKIMSelectors are checked on every domain, besides each domain's
	// own.
	DKIMSelectors []string `json:"dkim_selectors"`
	// Resolver is the DNS server asked, host:port; empty is the cloud
	// settings' DNS server (the simulated cloud's in development), and
	// without one the system's resolvers.
	Resolver string `json:"resolver"`
	// CheckTimeout bounds one domain's check, as a Go duration.
	CheckTimeout string `json:"check_timeout"`
	// Concurrency is how many domains are checked at once.
	Concurrency int `json:"concurrency"`
	// ReportsDir is a folder of aggregate reports to ingest; empty is
	// none.
	ReportsDir string `json:"reports_dir"`
}

const configSchema = `{
  "type": "object",
  "properties": {
    "dkim_selectors": {"type": "array", "items": {"type": "string", "maxLength": 63}, "maxItems": 10,
      "description": "DKIM selectors checked on every domain; default selector1 and selector2, Exchange Online's"},
    "resolver": {"type": "string", "description": "DNS server to ask, host:port; default the cloud settings' DNS server, else the system's"},
    "check_timeout": {"type": "string", "description": "Longest time one domain's check takes, e.g. 30s"},
    "concurrency": {"type": "integer", "minimum": 1, "maximum": 64, "description": "Domains checked at once; default 8"},
    "reports_dir": {"type": "string", "maxLength": 4096, "description": "Folder of DMARC aggregate reports (XML, .xml.gz, .zip) read every 15 minutes, each file once; may be read-only. A relative path is from the host's working directory"}
  },
  "additionalProperties": false
}`

func main() { sdk.Serve(New()) }

// check lower-cases the selectors and checks the settings, returning
// the check timeout.
func (c *config) check() (time.Duration, error) {
	for i, sel := range c.DKIMSelectors {
		var err error
		if c.DKIMSelectors[i], err = domains.NormalizeSelector(sel); err != nil {
			return 0, fmt.Errorf("config: dkim_selectors[%d] %q: %w", i, sel, err)
		}
	}
	if len(c.DKIMSelectors) > domains.MaxSelectors {
		return 0, fmt.Errorf("config: dkim_selectors: at most %d", domains.MaxSelectors)
	}
	if c.Concurrency < 1 || c.Concurrency > 64 {
		return 0, fmt.Errorf("config: concurrency %d is not between 1 and 64", c.Concurrency)
	}
	if c.CheckTimeout == "" {
		return domains.DefaultCheckTimeout, nil
	}
	timeout, err := time.ParseDuration(c.CheckTimeout)
	if err != nil || timeout <= 0 {
		return 0, fmt.Errorf("config: check_timeout %q is not a positive duration", c.CheckTimeout)
	}
	return timeout, nil
}

// New builds the plugin.
func New() *sdk.Plugin {
	syncer := &domains.Syncer{}
	handlers := &domains.Handlers{}
	// The aggregate reports: routes, the folder ingest and the page's
	// report sections, finding a report's tenant by its domain.
	reportHandlers := &reports.Handlers{}
	ingest := &reports.Ingest{}
	return &sdk.Plugin{
		Name:    "dmarc",
		Version: "0.1.0",
		Routes:  append(handlers.Routes(), reportHandlers.Routes()...),
		// The host's DMARC page (/dmarc) shows the fragments of its slot
		// in this order: the posture's, then the aggregate reports'.
		Fragments:    append(handlers.Fragments(), reportHandlers.Fragments(domains.PageSlot)...),
		Datasets:     []sdk.Dataset{handlers.Dataset()},
		Migrations:   store.MergeMigrations(domains.Migrations(), reports.Migrations()),
		ConfigSchema: json.RawMessage(configSchema),
		Jobs: []sdk.Job{{Name: "dmarc", JobType: domains.DataDomain, DataDomain: domains.DataDomain, Schedule: "@every 6h",
			Run: func(ctx context.Context, run *sdk.JobRun) (int64, error) { return syncer.Run(ctx, run) }},
			ingest.Job()},
		Configure: func(ctx context.Context, env *sdk.Env) error {
			cfg := config{DKIMSelectors: slices.Clone(posture.DefaultSelectors), Concurrency: domains.DefaultConcurrency}
			clients, db, err := pluginenv.Open(ctx, env, &cfg)
			if err != nil {
				return err
			}
			timeout, err := cfg.check()
			if err != nil {
				_ = db.Close()
				return err
			}
			addr := cfg.Resolver
			if addr == "" {
				addr = clients.Endpoints().DNS
			}
			st := &domains.Store{DB: db}
			*syncer = domains.Syncer{Store: st, Host: env.Host, Resolver: cloud.NewResolver(addr), Selectors: cfg.DKIMSelectors,
				Concurrency: cfg.Concurrency, CheckTimeout: timeout,
				Graph: func(dir string) domains.Graph { return clients.Graph(dir) }}
			*handlers = domains.Handlers{Store: st, Host: env.Host, Selectors: cfg.DKIMSelectors}

			rst := &reports.Store{DB: db}
			*reportHandlers = reports.Handlers{Store: rst, TenantOf: st.TenantOf, Audit: env.Host, Logger: env.Logger}
			*ingest = reports.Ingest{Store: rst, TenantOf: st.TenantOf, Dir: cfg.ReportsDir}
			return nil
		},
	}
}
