// Command cost is the cost domain plugin: it syncs daily actual costs,
// each resource's cost over the last 30 days, reservations (utilisation,
// purchases and recommendations) and budgets from the cloud into its own
// tables, and serves the cost, commitment and budget routes, anomalies,
// chargeback, the cost dashboard card and page with its budget editor,
// the chargeback of a brand by cost centre under its allocation rules,
// and the costs and resource_costs datasets. A second job syncs the daily
// exchange rates its reads convert multi-currency totals with.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/cost/allocation"
	"github.com/stewardhq/steward/plugins/cost/anomalies"
	"github.com/stewardhq/steward/plugins/cost/budgets"
	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/ingest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
	"github.com/stewardhq/steward/plugins/cost/views"
	"github.com/stewardhq/steward/sdk"
)

var definition = sdk.Definition{Name: "cost", Version: "0.1.0", Migrations: ledger.Migrations()}

// config is the plugin's config {} block in plugins.hcl.
type config struct {
	BackfillDays int `json:"backfill_days" minimum:"1" maximum:"1095" doc:"Days a subscription's first sync fetches"`
	RestateDays  int `json:"restate_days" minimum:"1" maximum:"31" doc:"Recent days every later sync fetches again, because providers restate them"`
	// AnomalyMinImpact is the floor of each currency's anomalies, as in
	// anomaly_min_impact = { JPY = 150, INR = 80 }.
	AnomalyMinImpact map[string]ledger.Amount `json:"anomaly_min_impact,omitempty" doc:"Least rise flagged as a cost anomaly, per ISO 4217 currency code, in units of that currency; in a currency not listed, the reporting currency's floor (1.00 when not listed either) at the latest exchange rate, or 1.00 without one"`
	// ReportingCurrency is what the reads convert multi-currency totals
	// into, at the daily rates of ExchangeRatesURL or ExchangeRatesFile.
	ReportingCurrency string `json:"reporting_currency,omitempty" doc:"ISO 4217 code of the currency multi-currency totals are converted into; USD when absent"`
	ExchangeRatesURL  string `json:"exchange_rates_url,omitempty" doc:"Daily exchange rates endpoint answering as the Frankfurter API (GET <url>/<start>..<end>?from=<reporting_currency>), such as https://api.frankfurter.dev/v1; not with exchange_rates_file. With neither, the simulated cloud's, or no conversion on Azure"`
	ExchangeRatesFile string `json:"exchange_rates_file,omitempty" doc:"File holding one Frankfurter time series document of daily rates against reporting_currency, read on each rates sync; not with exchange_rates_url"`
}

// minImpacts checks the configured floors: a currency code for each key
// and an amount above zero for each value.
func (c config) minImpacts() (anomalies.MinImpacts, error) {
	out := anomalies.MinImpacts{}
	for code, floor := range c.AnomalyMinImpact {
		if !exchange.ValidCode(code) {
			return nil, fmt.Errorf("config.anomaly_min_impact: %q is not an ISO 4217 currency code such as USD", code)
		}
		if floor <= 0 {
			return nil, fmt.Errorf("config.anomaly_min_impact.%s: %s is not above 0", code, floor)
		}
		out[code] = floor
	}
	return out, nil
}

// rateSource checks the reporting currency and the rates' source: an
// endpoint or a file, not both; with neither, the cloud's exchange rate
// service (simulated) when it has one, which client reaches; else none, and
// conversion is off.
func (c config) rateSource(cloudRates string, client *http.Client) (exchange.Source, error) {
	if !exchange.ValidCode(c.ReportingCurrency) {
		return nil, fmt.Errorf("config.reporting_currency: %q is not an ISO 4217 currency code such as USD", c.ReportingCurrency)
	}
	switch {
	case c.ExchangeRatesURL != "" && c.ExchangeRatesFile != "":
		return nil, errors.New("config.exchange_rates_url, config.exchange_rates_file: set one source of exchange rates, not both")
	case c.ExchangeRatesURL != "":
		u, err := url.Parse(c.ExchangeRatesURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("config.exchange_rates_url: %q is not an http or https URL", c.ExchangeRatesURL)
		}
		return exchange.Endpoint{URL: c.ExchangeRatesURL, Client: client}, nil
	case c.ExchangeRatesFile != "":
		if _, err := os.Stat(c.ExchangeRatesFile); err != nil {
			return nil, fmt.Errorf("config.exchange_rates_file: %w", err)
		}
		return exchange.File{Path: c.ExchangeRatesFile}, nil
	case cloudRates != "":
		return exchange.Endpoint{URL: cloudRates, Client: client}, nil
	}
	return nil, nil
}

// Defaults are the settings of a block that gives none.
func (config) Defaults() config {
	return config{BackfillDays: ingest.DefaultBackfillDays, RestateDays: ingest.DefaultRestateDays, ReportingCurrency: exchange.DefaultCurrency}
}

func main() { sdk.Serve(definition, New) }

// New builds the plugin from its config.
func New(ctx context.Context, cfg config, env *sdk.Env) (*sdk.Plugin, error) {
	minImpacts, err := cfg.minImpacts()
	if err != nil {
		return nil, err
	}
	clients, db, err := pluginenv.Open(env)
	if err != nil {
		return nil, err
	}
	source, err := cfg.rateSource(clients.Endpoints().ExchangeRates, clients.HTTPClient())
	if err != nil {
		return nil, err
	}
	rates := &exchange.Store{DB: db}
	converter := &exchange.Converter{Store: rates, Currency: cfg.ReportingCurrency}
	jobs := []sdk.Job{}
	// Before a tenant's anomalies are judged, with its floor converted:
	// rates, if none are stored yet.
	var hooks []ingest.Hook
	if source != nil {
		converter.Source = source.String()
		rateSync := &exchange.Syncer{Store: rates, Source: source, Currency: cfg.ReportingCurrency, BackfillDays: cfg.BackfillDays, Logger: env.Logger}
		jobs = append(jobs, rateSync.Job())
		hooks = append(hooks, rateSync.Ensure)
	}
	costs := &ledger.Store{DB: db}
	budgetStore := budgets.NewStore(db)
	evaluator := &budgets.Evaluator{Store: budgetStore, Host: env.Host, Logger: env.Logger}
	budgetSync := &budgets.Syncer{Store: budgetStore, Cloud: clients, Host: env.Host, Evaluator: evaluator}
	reads := &reports.Handlers{Store: &reports.Store{DB: db, Exchange: converter}, Host: env.Host}
	anomalyRoutes := &anomalies.Handlers{DB: db, Host: env.Host}
	allocationStore := &allocation.Store{DB: db, Exchange: converter}
	allocationRoutes := &allocation.Handlers{Store: allocationStore, Host: env.Host, Logger: env.Logger}
	budgetRoutes := &budgets.Handlers{Store: budgetStore, Evaluator: evaluator, Host: env.Host, Logger: env.Logger, Syncer: budgetSync}
	costViews := &views.Handlers{Reports: reads.Store, Anomalies: &anomalies.Store{DB: db}, Budgets: budgetStore, Allocation: allocationStore, Host: env.Host}
	costViews.BudgetEditor = &views.BudgetEditor{API: budgetRoutes, Views: costViews}
	costViews.AnomalyAPI = anomalyRoutes
	fragments, pages, nav := costViews.Views()
	// After a tenant's costs are written: judge its days for anomalies,
	// exchange its budgets with the provider, and bring their spend,
	// status and alerts up to date.
	detector := &anomalies.Detector{DB: db, MinImpacts: minImpacts, Rates: converter, Host: env.Host, Logger: env.Logger}
	syncer := &ingest.Syncer{Cloud: clients, Ledger: costs, Host: env.Host, BackfillDays: cfg.BackfillDays, RestateDays: cfg.RestateDays,
		AfterTenant: append(hooks, detector.Evaluate, budgetHook(budgetSync), evaluator.Evaluate)}
	return &sdk.Plugin{
		Routes:    slices.Concat(reads.Routes(), allocationRoutes.Routes(), anomalyRoutes.Routes(), budgetRoutes.Routes(), costViews.Routes()),
		Datasets:  []sdk.Dataset{reads.Dataset(), reads.ResourceDataset()},
		Events:    []sdk.EventType{budgets.EventType, anomalies.EventType},
		Fragments: fragments,
		Pages:     pages,
		Nav:       nav,
		// Cost Management refreshes a day's costs a few times a day.
		// Costs settle daily: a tenant is stale after a day and an hour.
		Jobs: append([]sdk.Job{{Name: "costs", JobType: "costs", DataDomain: "costs", Schedule: "@every 6h", StaleAfter: 25 * time.Hour, PerTenant: true, Run: syncer.Run}}, jobs...),
	}, nil
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
			if e.SubscriptionID == "" {
				failures = append(failures, fmt.Errorf("budgets: %s", e.Message))
				continue
			}
			failures = append(failures, fmt.Errorf("budgets of subscription %s: %s", e.SubscriptionID, e.Message))
		}
		return errors.Join(failures...)
	}
}
