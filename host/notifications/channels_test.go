package notifications

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/migrations"
)

const (
	password      = "smtp-Pa55word-never-shown"
	slackURL      = "https://hooks.slack.com/services/T000/B000/slacktokennevershown"
	webhookURL    = "https://hooks.example.com/steward?token=webhooktokennevershown"
	signingSecret = "signing-secret-never-shown-0123456789abcdef"
)

type fixture struct {
	s        *Store
	clock    *time.Time
	a, b     string
	admin    Scope
	userA    Scope
	woken    int
	catalogs []EventType
}

func newFixture(t *testing.T, dialect string) *fixture {
	t.Helper()
	db := storetest.Open(t, dialect)
	ctx := context.Background()
	if _, err := store.Migrate(ctx, db, migrations.FS, migrations.Table); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	s, err := New(db, []byte("a host secret of some length"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{s: s}
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f.clock = &now
	s.now = func() time.Time { return *f.clock }
	s.OnRaise(func() { f.woken++ })
	f.catalogs = slices.Concat(HostEventTypes, []EventType{{Name: "costs.budget_threshold", Source: "costs"}})
	s.SetEventTypes(func() []EventType { return f.catalogs })
	ten := tenancy.New(db)
	for _, tn := range []struct {
		id   *string
		name string
	}{{&f.a, "A"}, {&f.b, "B"}} {
		t := tenancy.Tenant{Name: tn.name, DirectoryTenantID: "dir-" + tn.name, IsActive: true}
		if err := ten.CreateTenant(ctx, &t); err != nil {
			panic(err)
		}
		*tn.id = t.ID
	}
	f.admin = Scope{All: true}
	f.userA = Scope{TenantIDs: []string{f.a}}
	return f
}

func ptr[T any](v T) *T { return &v }

func emailChannel() NewChannel {
	return NewChannel{Name: "Ops mail", Kind: KindEmail, CreatedBy: "u1",
		Settings: Settings{SMTPHost: "smtp.example.com", SMTPPort: 587, Username: "steward", From: "steward@example.com", To: []string{"ops@example.com"}},
		Secrets:  Secrets{Password: password}}
}

func TestChannels(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			t.Run("validation", func(t *testing.T) { testValidation(t, newFixture(t, dialect)) })
			t.Run("scope", func(t *testing.T) { testScope(t, newFixture(t, dialect)) })
			t.Run("secrets sealed", func(t *testing.T) { testSealed(t, newFixture(t, dialect)) })
			t.Run("update", func(t *testing.T) { testUpdate(t, newFixture(t, dialect)) })
			t.Run("subscriptions", func(t *testing.T) { testSubscriptions(t, newFixture(t, dialect)) })
			t.Run("test and retry", func(t *testing.T) { testTestAndRetry(t, newFixture(t, dialect)) })
			t.Run("events and deliveries", func(t *testing.T) { testReads(t, newFixture(t, dialect)) })
		})
	}
}

func testValidation(t *testing.T, f *fixture) {
	ctx := context.Background()
	unknown := "00000000-0000-4000-8000-000000000000"
	cases := []struct {
		name  string
		edit  func(*NewChannel)
		field string
	}{
		{"no name", func(n *NewChannel) { n.Name = "  " }, "name"},
		{"long name", func(n *NewChannel) { n.Name = strings.Repeat("n", MaxName+1) }, "name"},
		{"control character", func(n *NewChannel) { n.Name = "a\x00b" }, "name"},
		{"unknown kind", func(n *NewChannel) { n.Kind = "pager" }, "kind"},
		{"no smtp host", func(n *NewChannel) { n.Settings.SMTPHost = "" }, "settings.smtp_host"},
		{"smtp host a URL", func(n *NewChannel) { n.Settings.SMTPHost = "smtp://x" }, "settings.smtp_host"},
		{"port -1", func(n *NewChannel) { n.Settings.SMTPPort = -1 }, "settings.smtp_port"},
		{"port 65536", func(n *NewChannel) { n.Settings.SMTPPort = 65536 }, "settings.smtp_port"},
		{"tls", func(n *NewChannel) { n.Settings.TLS = "ssl" }, "settings.tls"},
		{"from with a name", func(n *NewChannel) { n.Settings.From = "Steward <s@example.com>" }, "settings.from"},
		{"no to", func(n *NewChannel) { n.Settings.To = nil }, "settings.to"},
		{"too many to", func(n *NewChannel) { n.Settings.To = make([]string, MaxTo+1) }, "settings.to"},
		{"bad to", func(n *NewChannel) { n.Settings.To = []string{"a@example.com", "not an address"} }, "settings.to[1]"},
		{"username without password", func(n *NewChannel) { n.Secrets.Password = "" }, "secrets.password"},
		{"password without username", func(n *NewChannel) { n.Settings.Username = "" }, "secrets.password"},
		{"e-mail with a url", func(n *NewChannel) { n.Secrets.URL = slackURL }, "secrets.url"},
		{"contacts on a tenant channel", func(n *NewChannel) { n.TenantID, n.Contacts = &f.a, true }, "contacts"},
		{"unknown tenant", func(n *NewChannel) { n.TenantID = &unknown }, "tenant_id"},
		{"slack without url", func(n *NewChannel) { *n = NewChannel{Name: "s", Kind: KindSlack} }, "secrets.url"},
		{"slack http", func(n *NewChannel) {
			*n = NewChannel{Name: "s", Kind: KindSlack, Secrets: Secrets{URL: "http://hooks.slack.com/services/x"}}
		}, "secrets.url"},
		{"slack elsewhere", func(n *NewChannel) {
			*n = NewChannel{Name: "s", Kind: KindSlack, Secrets: Secrets{URL: "https://hooks.slack.com.evil.example/x"}}
		}, "secrets.url"},
		{"slack with e-mail settings", func(n *NewChannel) {
			*n = NewChannel{Name: "s", Kind: KindSlack, Secrets: Secrets{URL: slackURL}, Settings: Settings{SMTPPort: 25}}
		}, "settings"},
		{"slack signed", func(n *NewChannel) {
			*n = NewChannel{Name: "s", Kind: KindSlack, Secrets: Secrets{URL: slackURL, SigningSecret: signingSecret}}
		}, "secrets.signing_secret"},
		{"teams elsewhere", func(n *NewChannel) {
			*n = NewChannel{Name: "t", Kind: KindTeams, Secrets: Secrets{URL: "https://teams.example.com/webhook"}}
		}, "secrets.url"},
		{"webhook with credentials", func(n *NewChannel) {
			*n = NewChannel{Name: "w", Kind: KindWebhook, Secrets: Secrets{URL: "https://u:p@hooks.example.com/", SigningSecret: signingSecret}}
		}, "secrets.url"},
		{"webhook not a URL", func(n *NewChannel) {
			*n = NewChannel{Name: "w", Kind: KindWebhook, Secrets: Secrets{URL: "hooks.example.com/x", SigningSecret: signingSecret}}
		}, "secrets.url"},
		{"webhook http outside development", func(n *NewChannel) {
			*n = NewChannel{Name: "w", Kind: KindWebhook, Secrets: Secrets{URL: "http://hooks.example.com/", SigningSecret: signingSecret}}
		}, "secrets.url"},
		{"webhook short secret", func(n *NewChannel) {
			*n = NewChannel{Name: "w", Kind: KindWebhook, Secrets: Secrets{URL: webhookURL, SigningSecret: strings.Repeat("s", MinSigningSecret-1)}}
		}, "secrets.signing_secret"},
		{"webhook with a password", func(n *NewChannel) {
			*n = NewChannel{Name: "w", Kind: KindWebhook, Secrets: Secrets{URL: webhookURL, SigningSecret: signingSecret, Password: "x"}}
		}, "secrets.password"},
	}
	for _, c := range cases {
		n := emailChannel()
		c.edit(&n)
		_, err := f.s.CreateChannel(ctx, f.admin, n)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("%s: %v, want a ValidationError of %s", c.name, err, c.field)
		}
	}
	if cs, err := f.s.Channels(ctx, f.admin, ""); err != nil || len(cs) != 0 {
		t.Fatalf("refused channels were written: %v %v", cs, err)
	}

	// What each kind accepts.
	f.s.AllowHTTP(true)
	for _, n := range []NewChannel{
		emailChannel(),
		{Name: "relay", Kind: KindEmail, Settings: Settings{SMTPHost: "10.0.0.5", TLS: TLSNone, From: "s@example.com", To: []string{"a@example.com"}}},
		{Name: "slack", Kind: KindSlack, Secrets: Secrets{URL: slackURL}},
		{Name: "teams", Kind: KindTeams, Secrets: Secrets{URL: "https://prod-12.westeurope.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?sig=x"}},
		{Name: "teams pp", Kind: KindTeams, Secrets: Secrets{URL: "https://default0123.ab.environment.api.powerplatform.com/powerautomate/automations/direct/workflows/x"}},
		{Name: "teams connector", Kind: KindTeams, Secrets: Secrets{URL: "https://contoso.webhook.office.com/webhookb2/x"}},
		{Name: "webhook", Kind: KindWebhook, TenantID: &f.a, Secrets: Secrets{URL: webhookURL, SigningSecret: signingSecret}},
		{Name: "webhook in development", Kind: KindWebhook, Secrets: Secrets{URL: "http://127.0.0.1:9000/hook", SigningSecret: signingSecret}},
	} {
		c, err := f.s.CreateChannel(ctx, f.admin, n)
		if err != nil {
			t.Errorf("%s: %v", n.Name, err)
			continue
		}
		if !c.Enabled {
			t.Errorf("%s: created disabled", n.Name)
		}
		if n.Kind == KindEmail && (c.Settings.TLS == "" || n.Name == "relay" && c.Settings.SMTPPort != 25) {
			t.Errorf("%s: no default tls or port: %+v", n.Name, c.Settings)
		}
		if n.Kind != KindEmail && (c.Settings.URLHost == "" || !strings.Contains(n.Secrets.URL, "://"+c.Settings.URLHost)) {
			t.Errorf("%s: url_host %q", n.Name, c.Settings.URLHost)
		}
		if n.Kind == KindEmail && c.Settings.URLHost != "" {
			t.Errorf("%s: an e-mail channel has a url_host %q", n.Name, c.Settings.URLHost)
		}
	}
	f.s.AllowHTTP(false)

	// At most one contacts channel.
	n := emailChannel()
	n.Contacts = true
	if _, err := f.s.CreateChannel(ctx, f.admin, n); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.CreateChannel(ctx, f.admin, n); !errors.Is(err, ErrConflict) {
		t.Errorf("a second contacts channel: %v, want a conflict", err)
	}
}

func testScope(t *testing.T, f *fixture) {
	ctx := context.Background()
	inst, err := f.s.CreateChannel(ctx, f.admin, emailChannel())
	if err != nil {
		t.Fatal(err)
	}
	mine := NewChannel{Name: "A's slack", Kind: KindSlack, TenantID: &f.a, Secrets: Secrets{URL: slackURL}}
	a, err := f.s.CreateChannel(ctx, f.userA, mine)
	if err != nil {
		t.Fatalf("a user's channel of its tenant: %v", err)
	}
	theirs := mine
	theirs.TenantID = &f.b
	if _, err := f.s.CreateChannel(ctx, f.userA, theirs); !errors.Is(err, ErrForbidden) {
		t.Errorf("a user's channel of another tenant: %v", err)
	}
	if _, err := f.s.CreateChannel(ctx, f.userA, emailChannel()); !errors.Is(err, ErrForbidden) {
		t.Errorf("a user's installation channel: %v", err)
	}
	b, err := f.s.CreateChannel(ctx, f.admin, theirs)
	if err != nil {
		t.Fatal(err)
	}

	if cs, err := f.s.Channels(ctx, f.userA, ""); err != nil || len(cs) != 1 || cs[0].ID != a.ID {
		t.Errorf("the user's channels: %+v %v", cs, err)
	}
	if cs, err := f.s.Channels(ctx, f.admin, ""); err != nil || len(cs) != 3 || cs[0].ID != inst.ID {
		t.Errorf("the admin's channels, installation first: %+v %v", cs, err)
	}
	if cs, err := f.s.Channels(ctx, f.admin, f.b); err != nil || len(cs) != 1 || cs[0].ID != b.ID {
		t.Errorf("B's channels: %+v %v", cs, err)
	}
	if cs, err := f.s.Channels(ctx, Scope{}, ""); err != nil || len(cs) != 0 {
		t.Errorf("a scope of no tenant: %+v %v", cs, err)
	}
	for _, id := range []string{inst.ID, b.ID} {
		if _, err := f.s.Channel(ctx, f.userA, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("reading %s: %v", id, err)
		}
		if _, err := f.s.UpdateChannel(ctx, f.userA, id, ChannelPatch{Name: ptr("mine")}); !errors.Is(err, ErrNotFound) {
			t.Errorf("updating %s: %v", id, err)
		}
		if _, err := f.s.DeleteChannel(ctx, f.userA, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleting %s: %v", id, err)
		}
		if _, _, err := f.s.TestChannel(ctx, f.userA, id, "u"); !errors.Is(err, ErrNotFound) {
			t.Errorf("testing %s: %v", id, err)
		}
		var ve *ValidationError
		if _, err := f.s.CreateSubscription(ctx, f.userA, NewSubscription{ChannelID: id}); !errors.As(err, &ve) || ve.Field != "channel_id" {
			t.Errorf("subscribing %s: %v", id, err)
		}
	}
	if _, err := f.s.Channel(ctx, f.admin, b.ID); err != nil {
		t.Errorf("the channels the user could not touch are gone: %v", err)
	}
	if _, err := f.s.DeleteChannel(ctx, f.userA, a.ID); err != nil {
		t.Errorf("the user deletes its own: %v", err)
	}
}

func testSealed(t *testing.T, f *fixture) {
	ctx := context.Background()
	mail, err := f.s.CreateChannel(ctx, f.admin, emailChannel())
	if err != nil {
		t.Fatal(err)
	}
	hook, err := f.s.CreateChannel(ctx, f.admin, NewChannel{Name: "w", Kind: KindWebhook, Secrets: Secrets{URL: webhookURL, SigningSecret: signingSecret}})
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ID       string `bun:"id"`
		Settings string `bun:"settings"`
		Secret   []byte `bun:"secret"`
	}
	if err := f.s.db.NewSelect().Table("notification_channels").Column("id", "settings", "secret").Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		for _, s := range []string{password, "slacktokennevershown", "webhooktokennevershown", signingSecret} {
			if bytes.Contains(r.Secret, []byte(s)) || strings.Contains(r.Settings, s) {
				t.Errorf("channel %s stores %q in the clear", r.ID, s)
			}
		}
		if len(r.Secret) == 0 {
			t.Errorf("channel %s has no sealed secret", r.ID)
		}
	}
	if sec, err := f.s.seal.open(mail.ID, mail.Secret); err != nil || sec.Password != password {
		t.Errorf("the mail secret opens to %+v, %v", sec, err)
	}
	// Sealed to its channel: another channel's id does not open it.
	if _, err := f.s.seal.open(hook.ID, mail.Secret); err == nil {
		t.Error("a channel's secret opened under another channel's id")
	}
}

func testUpdate(t *testing.T, f *fixture) {
	ctx := context.Background()
	hook, err := f.s.CreateChannel(ctx, f.admin, NewChannel{Name: "w", Kind: KindWebhook, Secrets: Secrets{URL: webhookURL, SigningSecret: signingSecret}})
	if err != nil {
		t.Fatal(err)
	}
	secrets := func(c Channel) Secrets {
		t.Helper()
		stored, err := f.s.Channel(ctx, f.admin, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		sec, err := f.s.seal.open(c.ID, stored.Secret)
		if err != nil {
			t.Fatal(err)
		}
		return sec
	}
	// Omitted secrets are kept.
	c, err := f.s.UpdateChannel(ctx, f.admin, hook.ID, ChannelPatch{Name: ptr("renamed"), Enabled: ptr(false)})
	if err != nil || c.Name != "renamed" || c.Enabled {
		t.Fatalf("rename: %+v %v", c, err)
	}
	if sec := secrets(hook); sec.URL != webhookURL || sec.SigningSecret != signingSecret {
		t.Errorf("secrets after a rename: %+v", sec)
	}
	// A given secret replaces its own alone; the URL's host follows it.
	c, err = f.s.UpdateChannel(ctx, f.admin, hook.ID, ChannelPatch{Secrets: Secrets{URL: "https://other.example.net/h"}})
	if err != nil || c.Settings.URLHost != "other.example.net" {
		t.Fatalf("new url: %+v %v", c, err)
	}
	if sec := secrets(hook); sec.URL != "https://other.example.net/h" || sec.SigningSecret != signingSecret {
		t.Errorf("secrets after a new url: %+v", sec)
	}
	// A refused patch writes nothing.
	for _, p := range []struct {
		patch ChannelPatch
		field string
	}{
		{ChannelPatch{Name: ptr("again"), Secrets: Secrets{SigningSecret: "short"}}, "secrets.signing_secret"},
		{ChannelPatch{Name: ptr("again"), SMTPPort: ptr(25)}, "settings"},
		{ChannelPatch{Name: ptr("")}, "name"},
		{ChannelPatch{Contacts: ptr(true)}, "contacts"},
	} {
		var ve *ValidationError
		if _, err := f.s.UpdateChannel(ctx, f.admin, hook.ID, p.patch); !errors.As(err, &ve) || ve.Field != p.field {
			t.Errorf("patch %+v: %v, want %s", p.patch, err, p.field)
		}
	}
	if got, _ := f.s.Channel(ctx, f.admin, hook.ID); got.Name != "renamed" {
		t.Errorf("a refused patch was written: %+v", got)
	}
	// An e-mail channel's settings change one by one; dropping the
	// username drops the password.
	mail, err := f.s.CreateChannel(ctx, f.admin, emailChannel())
	if err != nil {
		t.Fatal(err)
	}
	c, err = f.s.UpdateChannel(ctx, f.admin, mail.ID, ChannelPatch{SMTPPort: ptr(465), TLS: ptr(TLSImplicit), Username: ptr("")})
	if err != nil || c.Settings.SMTPPort != 465 || c.Settings.TLS != TLSImplicit || c.Settings.SMTPHost != "smtp.example.com" || c.Settings.Username != "" {
		t.Fatalf("mail patch: %+v %v", c, err)
	}
	if sec := secrets(mail); sec.Password != "" {
		t.Errorf("the password outlived the username: %+v", sec)
	}
	if _, err := f.s.UpdateChannel(ctx, f.admin, "00000000-0000-4000-8000-000000000000", ChannelPatch{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown channel: %v", err)
	}
}

func testSubscriptions(t *testing.T, f *fixture) {
	ctx := context.Background()
	inst, err := f.s.CreateChannel(ctx, f.admin, emailChannel())
	if err != nil {
		t.Fatal(err)
	}
	mine, err := f.s.CreateChannel(ctx, f.userA, NewChannel{Name: "A", Kind: KindSlack, TenantID: &f.a, Secrets: Secrets{URL: slackURL}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n     NewSubscription
		field string
	}{
		{NewSubscription{ChannelID: "nope"}, "channel_id"},
		{NewSubscription{ChannelID: inst.ID, EventTypes: []string{EventSyncFailed, "no.such"}}, "event_types[1]"},
		{NewSubscription{ChannelID: inst.ID, MinSeverity: "loud"}, "min_severity"},
		{NewSubscription{ChannelID: inst.ID, Digest: "weekly"}, "digest"},
		{NewSubscription{ChannelID: inst.ID, TenantIDs: []string{f.a, "00000000-0000-4000-8000-000000000000"}}, "tenant_ids[1]"},
		{NewSubscription{ChannelID: mine.ID, TenantIDs: []string{f.a}}, "tenant_ids"},
	} {
		var ve *ValidationError
		if _, err := f.s.CreateSubscription(ctx, f.admin, c.n); !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("%+v: %v, want %s", c.n, err, c.field)
		}
	}
	if subs, _ := f.s.Subscriptions(ctx, f.admin, ""); len(subs) != 0 {
		t.Fatalf("refused subscriptions written: %+v", subs)
	}
	all, err := f.s.CreateSubscription(ctx, f.admin, NewSubscription{ChannelID: inst.ID, TenantIDs: []string{f.b, f.b}})
	if err != nil || all.MinSeverity != "info" || all.Digest != DigestNone || len(all.EventTypes) != 0 || len(all.TenantIDs) != 1 {
		t.Fatalf("defaults: %+v %v", all, err)
	}
	own, err := f.s.CreateSubscription(ctx, f.userA, NewSubscription{ChannelID: mine.ID, EventTypes: []string{"costs.budget_threshold"}, MinSeverity: "warning", Digest: DigestDaily})
	if err != nil {
		t.Fatal(err)
	}
	if subs, err := f.s.Subscriptions(ctx, f.userA, ""); err != nil || len(subs) != 1 || subs[0].ID != own.ID {
		t.Errorf("the user's subscriptions: %+v %v", subs, err)
	}
	if _, err := f.s.Subscription(ctx, f.userA, all.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the user reads an installation subscription: %v", err)
	}
	if _, err := f.s.UpdateSubscription(ctx, f.userA, all.ID, SubscriptionPatch{Digest: ptr(DigestDaily)}); !errors.Is(err, ErrNotFound) {
		t.Errorf("the user changes an installation subscription: %v", err)
	}
	if _, _, err := f.s.DeleteSubscription(ctx, f.userA, all.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the user deletes an installation subscription: %v", err)
	}
	var ve *ValidationError
	if _, err := f.s.UpdateSubscription(ctx, f.userA, own.ID, SubscriptionPatch{MinSeverity: ptr("error"), EventTypes: ptr([]string{"x.y"})}); !errors.As(err, &ve) || ve.Field != "event_types[0]" {
		t.Errorf("a bad patch: %v", err)
	}
	got, err := f.s.UpdateSubscription(ctx, f.userA, own.ID, SubscriptionPatch{MinSeverity: ptr("error")})
	if err != nil || got.MinSeverity != "error" || got.Digest != DigestDaily || len(got.EventTypes) != 1 {
		t.Errorf("a patch: %+v %v", got, err)
	}

	// A subscription hears what it says: an error of tenant A reaches
	// A's channel (its subscription's minimum is error) but not the
	// installation's, which hears tenant B only.
	e, _, err := f.s.Raise(ctx, Event{Source: "costs", Kind: "costs.budget_threshold", Severity: "error", TenantID: &f.a, Title: "Budget", DedupeKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	ds, _, err := f.s.Deliveries(ctx, f.admin, DeliveryFilter{EventID: e.ID})
	if err != nil || len(ds) != 1 || ds[0].ChannelID != mine.ID || ds[0].Digest != DigestDaily {
		t.Errorf("deliveries: %+v %v", ds, err)
	}
	if _, _, err := f.s.DeleteSubscription(ctx, f.userA, own.ID); err != nil {
		t.Error(err)
	}
	if _, err := f.s.DeleteChannel(ctx, f.admin, inst.ID); err != nil {
		t.Error(err)
	}
	if subs, _ := f.s.Subscriptions(ctx, f.admin, ""); len(subs) != 0 {
		t.Errorf("subscriptions outlive their channel or deletion: %+v", subs)
	}
}

func testTestAndRetry(t *testing.T, f *fixture) {
	ctx := context.Background()
	mine, err := f.s.CreateChannel(ctx, f.userA, NewChannel{Name: "A", Kind: KindSlack, TenantID: &f.a, Secrets: Secrets{URL: slackURL}})
	if err != nil {
		t.Fatal(err)
	}
	e, d, err := f.s.TestChannel(ctx, f.userA, mine.ID, "user@a.example")
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != EventNotificationTest || e.TenantID == nil || *e.TenantID != f.a || d.ID == 0 || d.ChannelID != mine.ID || d.Status != StatusPending || !d.NextAttemptAt.Equal(*f.clock) {
		t.Errorf("test: %+v %+v", e, d)
	}
	if f.woken != 1 {
		t.Errorf("the worker was woken %d times", f.woken)
	}
	// Two tests are two events.
	if e2, _, err := f.s.TestChannel(ctx, f.userA, mine.ID, "u"); err != nil || e2.ID == e.ID {
		t.Errorf("a second test: %+v %v", e2, err)
	}
	if _, err := f.s.UpdateChannel(ctx, f.userA, mine.ID, ChannelPatch{Enabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.s.TestChannel(ctx, f.userA, mine.ID, "u"); !errors.Is(err, ErrConflict) {
		t.Errorf("testing a disabled channel: %v", err)
	}

	if _, err := f.s.RetryDelivery(ctx, f.userA, d.ID); !errors.Is(err, ErrConflict) {
		t.Errorf("retrying a pending delivery: %v", err)
	}
	if _, err := f.s.db.NewUpdate().Model((*Delivery)(nil)).Set("status = ?, attempts = 8, last_error = 'refused'", StatusDead).Where("id = ?", d.ID).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.RetryDelivery(ctx, Scope{TenantIDs: []string{f.b}}, d.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("retrying another tenant's delivery: %v", err)
	}
	*f.clock = f.clock.Add(time.Hour)
	got, err := f.s.RetryDelivery(ctx, f.userA, d.ID)
	if err != nil || got.Status != StatusPending || got.Attempts != 0 || !got.NextAttemptAt.Equal(*f.clock) {
		t.Errorf("retry: %+v %v", got, err)
	}
	ds, _, err := f.s.Deliveries(ctx, f.userA, DeliveryFilter{Status: StatusPending, ChannelID: mine.ID, Limit: 10})
	if err != nil || len(ds) != 2 || ds[1].ID != d.ID || ds[1].Attempts != 0 || ds[1].LastError != "refused" {
		t.Errorf("pending deliveries after the retry: %+v %v", ds, err)
	}
	if _, err := f.s.RetryDelivery(ctx, f.userA, 987654321); !errors.Is(err, ErrNotFound) {
		t.Errorf("retrying an unknown delivery: %v", err)
	}
}

func testReads(t *testing.T, f *fixture) {
	ctx := context.Background()
	inst, err := f.s.CreateChannel(ctx, f.admin, emailChannel())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.CreateSubscription(ctx, f.admin, NewSubscription{ChannelID: inst.ID}); err != nil {
		t.Fatal(err)
	}
	raise := func(kind, severity string, tenant *string, key string) Event {
		t.Helper()
		*f.clock = f.clock.Add(time.Minute)
		e, _, err := f.s.Raise(ctx, Event{Source: "host", Kind: kind, Severity: severity, TenantID: tenant, Title: key, DedupeKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	start := *f.clock
	ea := raise(EventSyncFailed, "error", &f.a, "a1")
	raise(EventSyncFailed, "warning", &f.b, "b1")
	ei := raise("costs.budget_threshold", "info", nil, "i1")
	ea2 := raise("costs.budget_threshold", "critical", &f.a, "a2")

	es, n, err := f.s.Events(ctx, f.admin, EventFilter{Limit: 2})
	if err != nil || n != 4 || len(es) != 2 || es[0].ID != ea2.ID || es[1].ID != ei.ID {
		t.Errorf("the newest two of four: %d %+v %v", n, es, err)
	}
	es, n, err = f.s.Events(ctx, f.userA, EventFilter{Limit: 10})
	if err != nil || n != 2 || es[0].ID != ea2.ID || es[1].ID != ea.ID {
		t.Errorf("the user's events: %d %+v %v", n, es, err)
	}
	for _, c := range []struct {
		f           EventFilter
		total, page int
	}{
		{EventFilter{Kind: EventSyncFailed}, 2, 2},
		{EventFilter{Severity: "critical"}, 1, 1},
		{EventFilter{TenantID: f.b}, 1, 1},
		{EventFilter{Since: start.Add(3 * time.Minute)}, 2, 2},
		{EventFilter{Offset: 3}, 4, 1},
	} {
		c.f.Limit = 10
		if es, n, err := f.s.Events(ctx, f.admin, c.f); err != nil || n != c.total || len(es) != c.page {
			t.Errorf("%+v: %d of %d, want %d of %d (%v)", c.f, len(es), n, c.page, c.total, err)
		}
	}
	if _, _, err := f.s.Event(ctx, f.userA, ei.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the user reads an installation event: %v", err)
	}
	// The user sees its tenant's event, not its delivery to the
	// installation's channel.
	e, ds, err := f.s.Event(ctx, f.userA, ea.ID)
	if err != nil || e.ID != ea.ID || len(ds) != 0 {
		t.Errorf("the user's event: %+v %+v %v", e, ds, err)
	}
	if _, ds, err := f.s.Event(ctx, f.admin, ea.ID); err != nil || len(ds) != 1 || ds[0].ChannelID != inst.ID {
		t.Errorf("the admin's view of the event: %+v %v", ds, err)
	}
	if ds, n, err := f.s.Deliveries(ctx, f.admin, DeliveryFilter{Limit: 3}); err != nil || n != 4 || len(ds) != 3 || ds[0].EventID != ea2.ID {
		t.Errorf("deliveries, newest first: %d %+v %v", n, ds, err)
	}
	if _, n, err := f.s.Deliveries(ctx, f.userA, DeliveryFilter{Limit: 3}); err != nil || n != 0 {
		t.Errorf("the user sees deliveries to the installation's channel: %d %v", n, err)
	}
}
