package pluginenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/sdk"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	settings, err := json.Marshal(cloud.Config{Provider: cloud.ProviderAzure, TenantID: "t", ClientID: "c", ClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "p.db")
	clients, db, err := pluginenv.Open(ctx, &sdk.Env{Cloud: settings, DatabaseURL: dbURL})
	if err != nil {
		t.Fatal(err)
	}
	if clients == nil {
		t.Error("no cloud clients")
	}
	if err := db.PingContext(ctx); err != nil {
		t.Errorf("database: %v", err)
	}
	_ = db.Close()

	for name, env := range map[string]sdk.Env{
		"cloud settings": {Cloud: json.RawMessage(`[]`), DatabaseURL: dbURL},
		"database":       {Cloud: settings, DatabaseURL: "mysql://nowhere"},
	} {
		if _, _, err := pluginenv.Open(ctx, &env); err == nil || name != "database" && !strings.HasPrefix(err.Error(), name) {
			t.Errorf("bad %s: %v", name, err)
		}
	}
}

// TestTenantSubscriptions: subscriptions are matched to tenants by their
// directory without regard to case; disabled, deleted and unknown
// directories' subscriptions are left out, and a failed listing is
// returned.
func TestTenantSubscriptions(t *testing.T) {
	subs := []cloud.Subscription{
		{ID: "s1", TenantID: "DIR-A", State: "Enabled"},
		{ID: "s2", TenantID: "dir-b", State: "Enabled"},
		{ID: "s3", TenantID: "dir-a", State: "Disabled"},
		{ID: "s4", TenantID: "dir-b", State: "Deleted"},
		{ID: "s5", TenantID: "dir-c", State: "Enabled"},
		{ID: "s6", TenantID: "dir-a", State: "Warned"},
	}
	list := func(_ context.Context, fn func(cloud.Subscription) error) error {
		for _, s := range subs {
			if err := fn(s); err != nil {
				return err
			}
		}
		return nil
	}
	tenants := []sdk.Tenant{{ID: "a", DirectoryTenantID: "dir-a"}, {ID: "b", DirectoryTenantID: "Dir-B"}}
	got := map[string][]string{}
	if err := pluginenv.TenantSubscriptions(context.Background(), list, tenants, func(i int, sub string) {
		got[tenants[i].ID] = append(got[tenants[i].ID], sub)
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got["a"], ",") != "s1,s6" || strings.Join(got["b"], ",") != "s2" || len(got) != 2 {
		t.Errorf("subscriptions by tenant: %v", got)
	}
	failing := func(context.Context, func(cloud.Subscription) error) error { return errors.New("throttled") }
	if err := pluginenv.TenantSubscriptions(context.Background(), failing, tenants, func(int, string) { t.Error("called") }); err == nil || !strings.Contains(err.Error(), "list subscriptions: throttled") {
		t.Errorf("failed listing: %v", err)
	}
}
