package pluginenv_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/sdk"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	settings, err := json.Marshal(cloud.Config{Provider: cloud.ProviderAzure, TenantID: "t", ClientID: "c", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "p.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clients, got, err := pluginenv.Open(&sdk.Env{Cloud: settings, DB: db})
	if err != nil {
		t.Fatal(err)
	}
	if clients == nil || got != db {
		t.Errorf("Open = %v, %v; want cloud clients and the SDK's database", clients, got)
	}

	for want, env := range map[string]sdk.Env{
		"cloud settings":                       {Cloud: json.RawMessage(`[]`), DB: db},
		"the host gave the plugin no database": {Cloud: settings},
	} {
		if _, _, err := pluginenv.Open(&env); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Open: %v, want %q", err, want)
		}
	}
}
