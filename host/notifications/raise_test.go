package notifications

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/migrations"
	"github.com/stewardhq/steward/sdk/protocol"
)

// raiseWorld is a store with two tenants and a clock.
type raiseWorld struct {
	db     *bun.DB
	s      *Store
	now    time.Time
	a, b   string
	wakes  int
	nextID int
}

func openRaiseWorld(t *testing.T, dialect string) *raiseWorld {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(ctx, db, migrations.FS, migrations.Table); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	s, err := New(db, []byte("a signing secret of thirty-two bytes!"))
	if err != nil {
		t.Fatal(err)
	}
	w := &raiseWorld{db: db, s: s, now: time.Date(2026, 11, 29, 10, 20, 0, 0, time.UTC)}
	s.now = func() time.Time { return w.now }
	s.OnRaise(func() { w.wakes++ })
	ten := tenancy.New(db)
	for _, id := range []*string{&w.a, &w.b} {
		tn := tenancy.Tenant{Name: "T" + string(rune('A'+w.nextID)), DirectoryTenantID: "dir-" + string(rune('a'+w.nextID)), IsActive: true}
		w.nextID++
		if err := ten.CreateTenant(ctx, &tn); err != nil {
			t.Fatal(err)
		}
		*id = tn.ID
	}
	return w
}

// channel inserts an enabled channel with one subscription.
func (w *raiseWorld) channel(t *testing.T, id string, tenant *string, contacts bool, sub Subscription) {
	t.Helper()
	ctx := context.Background()
	c := Channel{ID: id, Name: id, Kind: KindEmail, TenantID: tenant, Contacts: contacts, Enabled: true, CreatedAt: w.now, UpdatedAt: w.now}
	if _, err := w.db.NewInsert().Model(&c).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if sub.MinSeverity == "" {
		return
	}
	sub.ID, sub.ChannelID, sub.CreatedAt, sub.UpdatedAt = id+"-sub", id, w.now, w.now
	if sub.EventTypes == nil {
		sub.EventTypes = []string{}
	}
	if sub.TenantIDs == nil {
		sub.TenantIDs = []string{}
	}
	if sub.Digest == "" {
		sub.Digest = DigestNone
	}
	if _, err := w.db.NewInsert().Model(&sub).Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

func (w *raiseWorld) deliveries(t *testing.T, eventID string) map[string]Delivery {
	t.Helper()
	var ds []Delivery
	if err := w.db.NewSelect().Model(&ds).Where("event_id = ?", eventID).Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := map[string]Delivery{}
	for _, d := range ds {
		out[d.ChannelID+"/"+d.Recipient] = d
	}
	return out
}

func TestRaiseDeliversToMatchingChannelsOnce(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := openRaiseWorld(t, dialect)
			w.channel(t, "all", nil, false, Subscription{MinSeverity: "info"})
			w.channel(t, "install-errors", nil, false, Subscription{MinSeverity: "error"})
			w.channel(t, "install-b-only", nil, false, Subscription{MinSeverity: "info", TenantIDs: []string{w.b}})
			w.channel(t, "install-budgets", nil, false, Subscription{MinSeverity: "info", EventTypes: []string{"cost.budget_threshold"}})
			w.channel(t, "tenant-a", &w.a, false, Subscription{MinSeverity: "warning"})
			w.channel(t, "tenant-b", &w.b, false, Subscription{MinSeverity: "info"})
			w.channel(t, "tenant-a-daily", &w.a, false, Subscription{MinSeverity: "info", Digest: DigestDaily})
			w.channel(t, "contacts", nil, true, Subscription{})
			w.channel(t, "no-subscription", nil, false, Subscription{})

			ev := Event{Source: "cost", Kind: "cost.budget_threshold", Severity: "warning", TenantID: &w.a, Title: "Budget at 80 %",
				Link: "/cost?tenant_id=" + w.a, DedupeKey: "budget-1/80/actual/2026-11", Recipients: []string{"owner@example.com", "cfo@example.com"}}
			got, dup, err := w.s.Raise(ctx, ev)
			if err != nil || dup {
				t.Fatalf("Raise = %v, duplicate %v", err, dup)
			}
			ds := w.deliveries(t, got.ID)
			want := map[string]time.Time{
				"all/": w.now, "install-budgets/": w.now, "tenant-a/": w.now,
				"tenant-a-daily/":            time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
				"contacts/owner@example.com": w.now, "contacts/cfo@example.com": w.now,
			}
			if len(ds) != len(want) {
				t.Fatalf("deliveries %v, want those to %v", keys(ds), want)
			}
			for k, due := range want {
				d, ok := ds[k]
				if !ok || d.Status != StatusPending || d.Attempts != 0 || !d.NextAttemptAt.Equal(due) {
					t.Errorf("delivery %s = %+v, want pending, due %s", k, d, due)
				}
			}
			if w.wakes != 1 {
				t.Errorf("wakes = %d, want 1", w.wakes)
			}

			// The same alert raised again, from a retried sync: nothing new.
			w.now = w.now.Add(time.Minute)
			again, dup, err := w.s.Raise(ctx, ev)
			if err != nil || !dup || again.ID != got.ID {
				t.Fatalf("second Raise = %v, duplicate %v, id %s (want %s)", err, dup, again.ID, got.ID)
			}
			if n := len(w.deliveries(t, got.ID)); n != len(want) || w.wakes != 1 {
				t.Errorf("after a duplicate: %d deliveries, %d wakes; want %d and 1", n, w.wakes, len(want))
			}

			// An installation event reaches only installation channels.
			inst, _, err := w.s.Raise(ctx, Event{Source: "host", Kind: "sync.failed", Severity: "critical", Title: "x", DedupeKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			if ds := w.deliveries(t, inst.ID); len(ds) != 2 || ds["all/"].ID == 0 || ds["install-errors/"].ID == 0 {
				t.Errorf("installation event deliveries %v, want all and install-errors", keys(ds))
			}
			// Tenant B's info event: B's channel and the installation's.
			bev, _, err := w.s.Raise(ctx, Event{Source: "dmarc", Kind: "dmarc.weakening", Severity: "info", TenantID: &w.b, Title: "x", DedupeKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			if ds := w.deliveries(t, bev.ID); len(ds) != 3 || ds["all/"].ID == 0 || ds["install-b-only/"].ID == 0 || ds["tenant-b/"].ID == 0 {
				t.Errorf("tenant B event deliveries %v, want all, install-b-only and tenant-b", keys(ds))
			}
		})
	}
}

func keys(m map[string]Delivery) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRaiseRefusesBadEventsWithoutWriting(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			w := openRaiseWorld(t, dialect)
			nobody := "no-such-tenant"
			good := Event{Source: "cost", Kind: "cost.anomaly", Severity: "warning", Title: "t", DedupeKey: "k"}
			cases := []struct {
				field  string
				change func(*Event)
			}{
				{"source", func(e *Event) { e.Source = "" }},
				{"kind", func(e *Event) { e.Kind = "Cost.Anomaly" }},
				{"kind", func(e *Event) { e.Kind = "anomaly" }},
				{"severity", func(e *Event) { e.Severity = "fatal" }},
				{"title", func(e *Event) { e.Title = "" }},
				{"title", func(e *Event) { e.Title = string(make([]rune, protocol.MaxEventTitle+1)) }},
				{"message", func(e *Event) { e.Message = "\xff" }},
				{"link", func(e *Event) { e.Link = "https://evil.example/" }},
				{"link", func(e *Event) { e.Link = "//evil.example/" }},
				{"dedupe_key", func(e *Event) { e.DedupeKey = "" }},
				{"recipients[1]", func(e *Event) { e.Recipients = []string{"a@example.com", "Bob <b@example.com>"} }},
				{"recipients", func(e *Event) { e.Recipients = make([]string, protocol.MaxEventRecipients+1) }},
				{"details", func(e *Event) { e.Details = map[string]any{"x": make([]byte, protocol.MaxEventDetails)} }},
				{"tenant_id", func(e *Event) { e.TenantID = &nobody }},
			}
			for _, c := range cases {
				e := good
				c.change(&e)
				_, _, err := w.s.Raise(ctx, e)
				var ve *ValidationError
				if !errors.As(err, &ve) || ve.Field != c.field {
					t.Errorf("%s: Raise = %v, want a ValidationError of %s", c.field, err, c.field)
				}
			}
			if n, err := w.db.NewSelect().Model((*Event)(nil)).Count(ctx); err != nil || n != 0 {
				t.Errorf("events stored after refusals: %d (%v)", n, err)
			}
		})
	}
}

func TestDigestDue(t *testing.T) {
	at := time.Date(2026, 11, 29, 23, 59, 59, 0, time.UTC)
	for digest, want := range map[string]time.Time{
		DigestNone:   at,
		DigestHourly: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		DigestDaily:  time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
	} {
		if got := DigestDue(digest, at); !got.Equal(want) {
			t.Errorf("DigestDue(%s) = %s, want %s", digest, got, want)
		}
	}
	if got := DigestDue(DigestHourly, at.Add(-time.Hour)); !got.Equal(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("hourly at 22:59:59 = %s", got)
	}
}

func TestSealedSecretsOpenOnlyOnTheirChannel(t *testing.T) {
	s, err := newSealer([]byte("host secret"))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := s.seal("ch1", Secrets{Password: "hunter2", URL: "https://hooks.example/T/x"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.open("ch1", sealed); err != nil || got.Password != "hunter2" || got.URL != "https://hooks.example/T/x" {
		t.Fatalf("open = %+v, %v", got, err)
	}
	if _, err := s.open("ch2", sealed); err == nil {
		t.Error("a secret sealed for ch1 opened for ch2")
	}
	other, _ := newSealer([]byte("another host secret"))
	if _, err := other.open("ch1", sealed); err == nil {
		t.Error("a secret opened under another host secret")
	}
	if _, err := newSealer(nil); err == nil {
		t.Error("newSealer accepted no secret")
	}
}
