package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/freshness"
	"github.com/stewardhq/steward/host/notifications"
	"github.com/stewardhq/steward/host/plugins"
	"github.com/stewardhq/steward/host/tenancy"
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

// eventBackend is a backend on a migrated database of the dialect with
// tenant t1 (Contoso).
func eventBackend(t *testing.T, dialect string) (*backend, *bun.DB) {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(ctx, db, migrations.FS, migrations.Table); err != nil {
		t.Fatal(err)
	}
	ten := tenancy.New(db)
	if err := ten.CreateTenant(ctx, &tenancy.Tenant{ID: "t1", Name: "Contoso", DirectoryTenantID: "dir-1", IsActive: true}); err != nil {
		t.Fatal(err)
	}
	n, err := notifications.New(db, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return &backend{tenants: ten, fresh: freshness.NewStore(db), notify: n, log: hclog.NewNullLogger()}, db
}

// syncFailedEvents lists the stored sync.failed events, oldest first.
func syncFailedEvents(t *testing.T, db *bun.DB) []notifications.Event {
	t.Helper()
	var got []notifications.Event
	err := db.NewSelect().Model(&got).Where("kind = ?", notifications.EventSyncFailed).Order("occurred_at").Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestBackendSyncFailedOncePerStreak raises sync.failed once for each run
// of failures of a tenant's domain: failures before the domain syncs
// again are the first one's event, a failure after a success a new one,
// and another domain's failure its own.
func TestBackendSyncFailedOncePerStreak(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			b, db := eventBackend(t, dialect)
			t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
			steps := []struct {
				domain  string
				at      time.Duration
				failure string
			}{
				{"costs", 0, "ARM answered 503"},
				{"costs", time.Hour, "ARM answered 503 again"},
				{"costs", 2 * time.Hour, ""},
				{"costs", 3 * time.Hour, "consent revoked"},
				{"costs", 4 * time.Hour, "consent still revoked"},
				{"compliance", 4 * time.Hour, "policy API down"},
			}
			for _, s := range steps {
				if err := b.MarkFresh(ctx, "t1", s.domain, t0.Add(s.at), s.failure); err != nil {
					t.Fatalf("mark %+v: %v", s, err)
				}
			}
			got := syncFailedEvents(t, db)
			if len(got) != 3 {
				t.Fatalf("%d sync.failed events, want 3 (one per run of failures): %+v", len(got), got)
			}
			first, second, other := got[0], got[1], got[2]
			if other.Details["domain"] != "compliance" {
				first, second, other = got[0], got[2], got[1]
			}
			if first.Source != "host" || first.Severity != "error" || *first.TenantID != "t1" || first.Title != "Sync of costs failed for Contoso" ||
				first.Message != "ARM answered 503" || first.Link != "/sync-dashboard?tenant_id=t1" || first.DedupeKey != "t1/costs/never" ||
				!first.OccurredAt.Equal(t0) || first.Details["last_success"] != nil {
				t.Errorf("first streak's event = %+v", first)
			}
			if second.Message != "consent revoked" || second.DedupeKey != "t1/costs/"+t0.Add(2*time.Hour).Format(time.RFC3339Nano) || !second.OccurredAt.Equal(t0.Add(3*time.Hour)) {
				t.Errorf("second streak's event = %+v", second)
			}
			if other.Title != "Sync of compliance failed for Contoso" || other.DedupeKey != "t1/compliance/never" {
				t.Errorf("other domain's event = %+v", other)
			}
		})
	}
}

// TestBackendRaiseEvent keeps a plugin's event under the plugin's name,
// once, and refuses what the store refuses as the plugin's mistake.
func TestBackendRaiseEvent(t *testing.T) {
	ctx := context.Background()
	b, db := eventBackend(t, "sqlite")
	req := &pluginv1.RaiseEventRequest{Kind: "cost.anomaly", Severity: "warning", TenantId: "t1", Title: "Spend spiked", Details: []byte(`{"service":"storage"}`),
		Recipients: []string{"ops@example.com"}, DedupeKey: "t1/storage/2026-03-01"}
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	id, dup, err := b.RaiseEvent(ctx, "cost", req, at)
	if err != nil || id == "" || dup {
		t.Fatalf("first raise: %q %v %v", id, dup, err)
	}
	again, dup, err := b.RaiseEvent(ctx, "cost", req, at)
	if err != nil || again != id || !dup {
		t.Fatalf("second raise: %q %v %v, want %q duplicate", again, dup, err, id)
	}
	var e notifications.Event
	if err := db.NewSelect().Model(&e).Where("id = ?", id).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if e.Source != "cost" || e.Kind != "cost.anomaly" || e.Details["service"] != "storage" || !e.OccurredAt.Equal(at) || len(e.Recipients) != 1 {
		t.Errorf("stored event = %+v", e)
	}
	bad := &pluginv1.RaiseEventRequest{Kind: "cost.anomaly", Severity: "warning", TenantId: "nope", Title: "x", DedupeKey: "k"}
	if _, _, err := b.RaiseEvent(ctx, "cost", bad, time.Time{}); !errors.Is(err, plugins.ErrInvalid) {
		t.Errorf("unknown tenant: %v, want ErrInvalid", err)
	}
}
