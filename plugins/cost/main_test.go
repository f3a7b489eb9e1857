package main

import (
	"encoding/json"
	"fmt"
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
		`{"restate": 5}`:          "restate: unknown key; the keys are anomaly_min_impact, backfill_days, restate_days",
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
	if d := (config{}).Defaults(); d.BackfillDays != ingest.DefaultBackfillDays || d.RestateDays != ingest.DefaultRestateDays {
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
