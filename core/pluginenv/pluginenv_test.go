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
