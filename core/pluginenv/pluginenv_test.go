package pluginenv_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/sdk"
)

type config struct {
	Days  int    `json:"days"`
	Label string `json:"label"`
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	settings, err := json.Marshal(cloud.Config{Provider: cloud.ProviderAzure, TenantID: "t", ClientID: "c", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "p.db")

	// An empty block keeps the defaults; a block overrides what it names.
	for block, want := range map[string]config{"": {Days: 7, Label: "default"}, `{"days": 30}`: {Days: 30, Label: "default"}} {
		cfg := config{Days: 7, Label: "default"}
		clients, db, err := pluginenv.Open(ctx, &sdk.Env{Config: json.RawMessage(block), Cloud: settings, DatabaseURL: dbURL}, &cfg)
		if err != nil {
			t.Fatalf("block %q: %v", block, err)
		}
		if cfg != want || clients == nil {
			t.Errorf("block %q: config %+v, clients %v; want %+v", block, cfg, clients, want)
		}
		if err := db.PingContext(ctx); err != nil {
			t.Errorf("block %q: database: %v", block, err)
		}
		_ = db.Close()
	}

	for name, env := range map[string]sdk.Env{
		"config":         {Config: json.RawMessage(`{"days": "many"}`), Cloud: settings, DatabaseURL: dbURL},
		"cloud settings": {Cloud: json.RawMessage(`[]`), DatabaseURL: dbURL},
		"database":       {Cloud: settings, DatabaseURL: "mysql://nowhere"},
	} {
		var cfg config
		if _, _, err := pluginenv.Open(ctx, &env, &cfg); err == nil || name != "database" && !strings.HasPrefix(err.Error(), name) {
			t.Errorf("bad %s: %v", name, err)
		}
	}
}
