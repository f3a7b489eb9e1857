// Command dmarc is the mail-authentication plugin: it keeps each tenant's
// mail domains — the directory's verified domains and those admins add —
// checks their DMARC, SPF, DKIM, MX, MTA-STS, TLS-RPT, BIMI and DNSSEC
// every few hours, scores them, keeps their history and raises an alert
// when a domain's posture weakens. It also ingests the domains' DMARC aggregate reports, uploaded,
// read from a folder or fetched from the tenants' report mailboxes, looks
// up their sources' reverse names, and serves their pass and fail rates.
package main

import (
	"context"
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

var definition = sdk.Definition{Name: "dmarc", Version: "0.1.0", Migrations: store.MergeMigrations(domains.Migrations(), reports.Migrations())}

// config is the plugin's config {} block in plugins.hcl.
type config struct {
	DKIMSelectors []string     `json:"dkim_selectors" maxItems:"10" maxLength:"63" doc:"DKIM selectors checked on every domain, besides each domain's own; default selector1 and selector2, Exchange Online's"`
	Resolver      string       `json:"resolver,omitempty" doc:"DNS server to ask, host:port; default the cloud settings' DNS server (the simulated cloud's in development), else the system's"`
	CheckTimeout  sdk.Duration `json:"check_timeout" doc:"Longest time one domain's check takes"`
	Concurrency   int          `json:"concurrency" minimum:"1" maximum:"64" doc:"Domains checked at once"`
	ReportsDir    string       `json:"reports_dir,omitempty" maxLength:"4096" doc:"Folder of DMARC aggregate reports (XML, .xml.gz, .zip) read every 15 minutes, each file once; may be read-only. A relative path is from the host's working directory"`
	MailboxSync   bool         `json:"mailbox_sync,omitempty" doc:"Fetch each tenant's aggregate reports every 15 minutes through Microsoft Graph from its report mailboxes: the rua addresses of its domains' DMARC records that lie at its own domains (Graph's Mail.Read application permission)"`
	MailboxFolder string       `json:"mailbox_folder,omitempty" maxLength:"255" doc:"The report mailboxes' folder read: a well-known folder name or a folder id; default inbox"`
}

// Defaults are the settings of a block that gives none.
func (config) Defaults() config {
	return config{DKIMSelectors: slices.Clone(posture.DefaultSelectors), CheckTimeout: sdk.Duration(domains.DefaultCheckTimeout),
		Concurrency: domains.DefaultConcurrency}
}

func main() { sdk.Serve(definition, New) }

// check lower-cases the selectors and checks what the schema cannot: each
// selector's syntax and a timeout above zero.
func (c *config) check() error {
	for i, sel := range c.DKIMSelectors {
		var err error
		if c.DKIMSelectors[i], err = domains.NormalizeSelector(sel); err != nil {
			return fmt.Errorf("config: dkim_selectors[%d] %q: %w", i, sel, err)
		}
	}
	if c.CheckTimeout <= 0 {
		return fmt.Errorf("config: check_timeout %s is not a positive duration", time.Duration(c.CheckTimeout))
	}
	return nil
}

// New builds the plugin from its config.
func New(ctx context.Context, cfg config, env *sdk.Env) (*sdk.Plugin, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	clients, db, err := pluginenv.Open(env)
	if err != nil {
		return nil, err
	}
	addr := cfg.Resolver
	if addr == "" {
		addr = clients.Endpoints().DNS
	}
	st := &domains.Store{DB: db}
	resolver := cloud.NewResolver(addr)
	syncer := &domains.Syncer{Store: st, Host: env.Host, Resolver: resolver, Policies: clients.MTASTS(), Selectors: cfg.DKIMSelectors,
		Concurrency: cfg.Concurrency, CheckTimeout: time.Duration(cfg.CheckTimeout),
		Graph: func(dir string) domains.Graph { return clients.Graph(dir) }}
	handlers := &domains.Handlers{Store: st, Host: env.Host, Selectors: cfg.DKIMSelectors}
	// The aggregate reports: routes, the folder ingest and the page's
	// report sections, finding a report's tenant by its domain.
	rst := &reports.Store{DB: db}
	reportHandlers := &reports.Handlers{Store: rst, TenantOf: st.TenantOf, Audit: env.Host, Logger: env.Logger, Tenants: env.Host}
	ingest := &reports.Ingest{Store: rst, TenantOf: st.TenantOf, Dir: cfg.ReportsDir}
	// The mailbox sync fetches reports when asked to and looks up every
	// report's sources through the checks' resolver either way.
	mailbox := &reports.MailboxSync{Store: rst, Enabled: cfg.MailboxSync, TenantOf: st.TenantOf, Mailboxes: st.ReportMailboxes,
		Mail: func(dir string) reports.Mail { return clients.Graph(dir) }, Folder: cfg.MailboxFolder,
		Enricher: &reports.Enricher{Resolver: resolver}}
	return &sdk.Plugin{
		Routes: slices.Concat(handlers.Routes(), handlers.DetailRoutes(), reportHandlers.Routes(), reportHandlers.FormRoutes()),
		// The DMARC page (/dmarc), which the host lays out, shows the
		// fragments of its slot in this order: the posture's, then the
		// aggregate reports'.
		Fragments: append(handlers.Fragments(), reportHandlers.Fragments(domains.PageSlot)...),
		Pages:     []sdk.Page{domains.DMARCPage},
		Nav:       []sdk.NavEntry{{Label: "E-mail security", Path: domains.DMARCPage.Path, Order: 60}},
		Datasets:  []sdk.Dataset{handlers.Dataset()},
		Events:    []sdk.EventType{domains.EventType},
		Jobs: []sdk.Job{{Name: "dmarc", JobType: domains.DataDomain, DataDomain: domains.DataDomain, Schedule: "@every 6h", PerTenant: true, Run: syncer.Run},
			ingest.Job(env.Host), mailbox.Job()},
	}, nil
}
