package app

import (
	"context"
	"errors"
	"testing"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/plugins"
	"github.com/stewardhq/steward/migrations"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// TestBackendAppendAudit records a plugin's audit entries as the Host
// service receives them: details must be a JSON object (JSON null once
// crashed the host), the entry names the plugin, and an entry without a
// principal is the plugin's own.
func TestBackendAppendAudit(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, "sqlite")
	if _, err := store.Migrate(ctx, db, migrations.FS, migrations.Table); err != nil {
		t.Fatal(err)
	}
	b := &backend{audit: audit.NewStore(db)}
	for _, details := range []string{"null", "[1]", "{"} {
		err := b.AppendAudit(ctx, "evidence", &pluginv1.AppendAuditRequest{Action: "evidence.upload.success", Status: "success", Details: []byte(details)})
		if !errors.Is(err, plugins.ErrInvalid) {
			t.Errorf("details %s: %v, want ErrInvalid", details, err)
		}
	}
	if err := b.AppendAudit(ctx, "evidence", &pluginv1.AppendAuditRequest{Action: "evidence.upload.success", Status: "success",
		Details: []byte(`{"file":"a.pdf"}`), Principal: &pluginv1.Principal{Id: "k1", Kind: "apikey"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendAudit(ctx, "evidence", &pluginv1.AppendAuditRequest{Action: "evidence.expire.success", Status: "success"}); err != nil {
		t.Fatal(err)
	}
	got, total, err := b.audit.List(ctx, audit.Filter{ActionPrefix: "evidence.", Limit: 10})
	if err != nil || total != 2 {
		t.Fatalf("list: %d entries, %v", total, err)
	}
	byAction := map[string]audit.Entry{}
	for _, e := range got {
		byAction[e.Action] = e
	}
	up, exp := byAction["evidence.upload.success"], byAction["evidence.expire.success"]
	if up.ActorID != "apikey:k1" || up.Details["file"] != "a.pdf" || up.Details["plugin"] != "evidence" {
		t.Errorf("upload entry %+v", up)
	}
	if exp.ActorID != "plugin:evidence" || exp.Details["plugin"] != "evidence" {
		t.Errorf("expiry entry %+v", exp)
	}
}
