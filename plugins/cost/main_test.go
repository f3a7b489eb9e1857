package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/plugins/cost/ingest"
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
		`{"restate": 5}`:          "restate: unknown key; the keys are backfill_days, restate_days",
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
