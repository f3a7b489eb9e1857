package app_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/config"
	"github.com/stewardhq/steward/host/app"
	"github.com/stewardhq/steward/host/app/apptest"
	"github.com/stewardhq/steward/host/notifications"
	"github.com/stewardhq/steward/internal/testsinks"
)

// TestHostDeliversNotifications starts a host whose worker trusts the SMTP
// sink's certificate through STEWARD_NOTIFY_CA_FILE and checks that an
// event raised on the host is attempted over STARTTLS: the sink, which
// wants authentication the channel does not give, refuses it, and the
// refusal is recorded.
func TestHostDeliversNotifications(t *testing.T) {
	sink := testsinks.NewSMTP(t, testsinks.SMTPOptions{})
	h := apptest.Start(t, apptest.Options{Env: map[string]string{"STEWARD_NOTIFY_CA_FILE": sink.CAFile, "STEWARD_NOTIFY_POLL_INTERVAL": "100ms"}})
	ctx := context.Background()
	now := time.Now().UTC()
	ch := notifications.Channel{ID: "c1", Name: "ops", Kind: notifications.KindEmail, Enabled: true, CreatedAt: now, UpdatedAt: now,
		Settings: notifications.Settings{SMTPHost: sink.Host, SMTPPort: sink.Port, From: "steward@example.com", To: []string{"ops@example.com"}}}
	sub := notifications.Subscription{ID: "s1", ChannelID: "c1", EventTypes: []string{}, TenantIDs: []string{}, MinSeverity: "info", Digest: "none", CreatedAt: now, UpdatedAt: now}
	err := h.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(&ch).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewInsert().Model(&sub).Exec(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Notifications.Raise(ctx, notifications.Event{Source: "host", Kind: "sync.failed", Severity: "error", Title: "Sync failed", DedupeKey: "k"}); err != nil {
		t.Fatal(err)
	}
	var d notifications.Delivery
	deadline := time.Now().Add(10 * time.Second)
	for d.Attempts == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the host's worker never attempted the delivery")
		}
		time.Sleep(50 * time.Millisecond)
		if err := h.DB.NewSelect().Model(&d).Limit(1).Scan(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if d.Status != notifications.StatusPending || !strings.Contains(d.LastError, "Please authenticate first") {
		t.Fatalf("delivery %s after %d attempts: %q; want pending, refused for want of authentication over TLS", d.Status, d.Attempts, d.LastError)
	}
}

func TestStartRefusesUnreadableNotifyCAFile(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"STEWARD_ENV": config.Development, "STEWARD_DATA_DIR": dir, "STEWARD_PLUGINS_FILE": filepath.Join(dir, "none.hcl"),
		"STEWARD_SIM_BOOTSTRAP": "false", "STEWARD_NOTIFY_CA_FILE": filepath.Join(dir, "missing.pem")}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	h, err := app.Start(context.Background(), cfg, app.Options{})
	if err == nil {
		h.Close()
		t.Fatal("the host started with a CA file it cannot read")
	}
	if !strings.Contains(err.Error(), "STEWARD_NOTIFY_CA_FILE") {
		t.Fatalf("error %q does not name STEWARD_NOTIFY_CA_FILE", err)
	}
}
