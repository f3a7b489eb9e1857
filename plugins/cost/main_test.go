package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/plugins/cost/anomalies"
	"github.com/stewardhq/steward/plugins/cost/ingest"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk/plugintest"
	"github.com/stewardhq/steward/sdk/protocol"
)

// The plugin starts as the host starts it: described, its config block
// checked against its schema, built by its factory and checked by
// Validate. The schema keeps each setting within its bounds, and a block
// without settings gets the ingest's defaults.
func TestDefinition(t *testing.T) {
	settings, err := json.Marshal(cloud.Config{Provider: cloud.ProviderAzure, TenantID: "t", ClientID: "c", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	h := plugintest.New(t, definition, New, plugintest.Options{DatabaseURL: "sqlite://" + filepath.Join(t.TempDir(), "cost.db"), Cloud: settings,
		Config: json.RawMessage(`{"backfill_days": 90}`)})
	desc := h.Describe()
	if len(desc.Routes) == 0 || len(desc.Jobs) != 1 || len(desc.Datasets) != 2 {
		t.Errorf("described %d routes, %d jobs, %d datasets", len(desc.Routes), len(desc.Jobs), len(desc.Datasets))
	}
	for block, want := range map[string]string{
		`{}`:                      "",
		`{"restate_days": 31}`:    "",
		`{"backfill_days": 0}`:    "backfill_days: must be >= 1 but found 0",
		`{"backfill_days": 1096}`: "backfill_days: must be <= 1095 but found 1096",
		`{"restate_days": 2.5}`:   "restate_days: expected integer, but got number",
		`{"restate": 5}`:          "restate: unknown key; the keys are anomaly_min_impact, backfill_days, exchange_rates_file, exchange_rates_url, reporting_currency, restate_days",
		`{"reporting_currency": "EUR", "exchange_rates_url": "https://api.frankfurter.dev/v1"}`: "",
		`{"reporting_currency": 978}`:                       "reporting_currency: expected string, but got number",
		`{"anomaly_min_impact": {"JPY": 150, "INR": 80.5}}`: "",
		`{"anomaly_min_impact": {"JPY": "a lot"}}`:          "anomaly_min_impact.JPY: expected number, but got string",
	} {
		problems, err := protocol.CheckConfig(desc.ConfigSchema, []byte(block))
		got := ""
		if len(problems) > 0 {
			got = problems[0].Key + ": " + problems[0].Message
		}
		if err != nil || len(problems) > 1 || got != want {
			t.Errorf("%s: %+v, %v; want %q", block, problems, err, want)
		}
	}
	if d := (config{}).Defaults(); d.BackfillDays != ingest.DefaultBackfillDays || d.RestateDays != ingest.DefaultRestateDays || d.ReportingCurrency != "USD" {
		t.Errorf("defaults %+v", d)
	}
}

// TestMinImpacts: the anomaly floors are keyed by currency code and above
// zero; anything else stops the plugin at start, naming the setting.
func TestMinImpacts(t *testing.T) {
	for _, c := range []struct {
		floors map[string]ledger.Amount
		want   string
	}{
		{nil, ""},
		{map[string]ledger.Amount{"JPY": 150_00, "INR": 80_50}, ""},
		{map[string]ledger.Amount{"yen": 150_00}, `config.anomaly_min_impact: "yen" is not an ISO 4217 currency code such as USD`},
		{map[string]ledger.Amount{"JPY": 0}, "config.anomaly_min_impact.JPY: 0.00 is not above 0"},
		{map[string]ledger.Amount{"EUR": -1}, "config.anomaly_min_impact.EUR: -0.01 is not above 0"},
	} {
		got, err := config{AnomalyMinImpact: c.floors}.minImpacts()
		if msg := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && msg != c.want) {
			t.Errorf("%v: %v, want %q", c.floors, err, c.want)
			continue
		}
		want, ok := c.floors["JPY"]
		if !ok {
			want = anomalies.DefaultMinImpact
		}
		if err == nil && (len(got) != len(c.floors) || got.For("JPY") != want || got.For("USD") != anomalies.DefaultMinImpact) {
			t.Errorf("%v: floors %v", c.floors, got)
		}
	}
}

// TestRateSource: the reporting currency is an ISO 4217 code; the rates
// come from an endpoint or a file, never both; with neither, from the
// cloud's service when it has one, else conversion is off. Anything else
// stops the plugin at start, naming the setting.
func TestRateSource(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rates.json")
	if err := os.WriteFile(file, []byte(`{"amount":1,"base":"USD","rates":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const sim = "https://127.0.0.1:4443/exchange-rates"
	for _, c := range []struct {
		cfg       config
		cloud     string
		want, err string
	}{
		{config{ReportingCurrency: "USD"}, "", "", ""},
		{config{ReportingCurrency: "USD"}, sim, sim, ""},
		{config{ReportingCurrency: "EUR", ExchangeRatesURL: "https://api.frankfurter.dev/v1"}, sim, "https://api.frankfurter.dev/v1", ""},
		{config{ReportingCurrency: "USD", ExchangeRatesFile: file}, sim, file, ""},
		{config{ReportingCurrency: "usd"}, "", "", `config.reporting_currency: "usd" is not an ISO 4217 currency code such as USD`},
		{config{ReportingCurrency: ""}, "", "", `config.reporting_currency: "" is not an ISO 4217 currency code such as USD`},
		{config{ReportingCurrency: "EURO"}, "", "", `config.reporting_currency: "EURO" is not an ISO 4217 currency code such as USD`},
		{config{ReportingCurrency: "USD", ExchangeRatesURL: "https://x.example", ExchangeRatesFile: file}, "", "",
			"config.exchange_rates_url, config.exchange_rates_file: set one source of exchange rates, not both"},
		{config{ReportingCurrency: "USD", ExchangeRatesURL: "ftp://x.example/rates"}, "", "", `config.exchange_rates_url: "ftp://x.example/rates" is not an http or https URL`},
		{config{ReportingCurrency: "USD", ExchangeRatesURL: "rates.example"}, "", "", `config.exchange_rates_url: "rates.example" is not an http or https URL`},
		{config{ReportingCurrency: "USD", ExchangeRatesFile: file + ".missing"}, "", "", "config.exchange_rates_file: stat " + file + ".missing: no such file or directory"},
	} {
		src, err := c.cfg.rateSource(c.cloud, http.DefaultClient)
		if msg := fmt.Sprint(err); (c.err == "" && err != nil) || (c.err != "" && msg != c.err) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.err)
			continue
		}
		got := ""
		if src != nil {
			got = src.String()
		}
		if err == nil && got != c.want {
			t.Errorf("%+v: source %q, want %q", c.cfg, got, c.want)
		}
	}
}
