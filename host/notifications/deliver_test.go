package notifications

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/internal/testsinks"
	"github.com/stewardhq/steward/migrations"
	"github.com/stewardhq/steward/sdk/webhook"
)

const origin = "https://steward.example"

var testSecret = []byte("0123456789abcdef0123456789abcdef")

func newDeliveryStore(t testing.TB, dialect string) *Store {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, migrations.FS, migrations.Table); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	s, err := New(db, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func addDeliveryTenant(t testing.TB, s *Store, id, name string) {
	t.Helper()
	now := time.Now().UTC()
	_, err := s.db.NewRaw("INSERT INTO tenants (id, name, directory_tenant_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
		id, name, "dir-"+id, now, now).Exec(context.Background())
	if err != nil {
		t.Fatal(err)
	}
}

// addChannel stores a channel with its secrets sealed and, unless digest
// is empty, a subscription of the digest period to every event.
func addDeliveryChannel(t testing.TB, s *Store, ch Channel, sec Secrets, digest string) Channel {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	ch.ID, ch.Enabled, ch.CreatedAt, ch.UpdatedAt = uuid.NewString(), true, now, now
	if ch.Name == "" {
		ch.Name = ch.Kind
	}
	var err error
	if ch.Secret, err = s.seal.seal(ch.ID, sec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.NewInsert().Model(&ch).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if digest != "" {
		sub := Subscription{ID: uuid.NewString(), ChannelID: ch.ID, EventTypes: []string{}, MinSeverity: "info", TenantIDs: []string{}, Digest: digest, CreatedAt: now, UpdatedAt: now}
		if _, err := s.db.NewInsert().Model(&sub).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return ch
}

func raiseEvent(t testing.TB, s *Store, e Event) Event {
	t.Helper()
	if e.Source == "" {
		e.Source = "budgets"
	}
	if e.Kind == "" {
		e.Kind = "budget.threshold_crossed"
	}
	if e.Severity == "" {
		e.Severity = "warning"
	}
	if e.Title == "" {
		e.Title = "Budget over 80%"
	}
	if e.DedupeKey == "" {
		e.DedupeKey = uuid.NewString()
	}
	stored, dup, err := s.Raise(context.Background(), e)
	if err != nil || dup {
		t.Fatalf("Raise: %v (duplicate %v)", err, dup)
	}
	return stored
}

func outbox(t testing.TB, s *Store) []Delivery {
	t.Helper()
	var ds []Delivery
	if err := s.db.NewSelect().Model(&ds).Order("id").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ds
}

func waitUntil(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func allStatus(t testing.TB, s *Store, status string) func() bool {
	return func() bool {
		ds := outbox(t, s)
		for _, d := range ds {
			if d.Status != status {
				return false
			}
		}
		return len(ds) > 0
	}
}

// fastOptions retry quickly and trust the SMTP sink's certificate.
func fastOptions(sink *testsinks.SMTP) DeliveryOptions {
	o := DeliveryOptions{PollInterval: 50 * time.Millisecond, RetryMin: 30 * time.Millisecond, RetryMax: 100 * time.Millisecond,
		Timeout: 5 * time.Second, AllowPrivateNetworks: true, PublicOrigin: origin, Logger: hclog.NewNullLogger()}
	if sink != nil {
		o.RootCAs = sink.Pool
	}
	return o
}

func startWorker(t testing.TB, s *Store, o DeliveryOptions) *Worker {
	t.Helper()
	w := NewWorker(s, o)
	w.Start(context.Background())
	t.Cleanup(w.Stop)
	return w
}

func eachDialect(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, d := range storetest.Dialects() {
		t.Run(d, func(t *testing.T) { fn(t, d) })
	}
}

func TestDeliverEachKind(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		s := newDeliveryStore(t, dialect)
		addDeliveryTenant(t, s, "t1", "Contoso")
		sink := testsinks.NewSMTP(t, testsinks.SMTPOptions{})
		tlsSink := testsinks.NewSMTP(t, testsinks.SMTPOptions{ImplicitTLS: true})
		hook := testsinks.NewWebhook(t)
		pool := x509.NewCertPool()
		pool.AddCert(sink.Cert)
		pool.AddCert(tlsSink.Cert)
		addDeliveryChannel(t, s, Channel{Kind: KindEmail, Settings: Settings{SMTPHost: sink.Host, SMTPPort: sink.Port, Username: testsinks.SMTPUser,
			From: "steward@example.com", To: []string{"ops@example.com", "finance@example.com"}}}, Secrets{Password: testsinks.SMTPPassword}, DigestNone)
		addDeliveryChannel(t, s, Channel{Kind: KindEmail, Name: "implicit", Settings: Settings{SMTPHost: tlsSink.Host, SMTPPort: tlsSink.Port, TLS: TLSImplicit,
			Username: testsinks.SMTPUser, From: "steward@example.com", To: []string{"sec@example.com"}}}, Secrets{Password: testsinks.SMTPPassword}, DigestNone)
		addDeliveryChannel(t, s, Channel{Kind: KindEmail, Name: "contacts", Contacts: true, Settings: Settings{SMTPHost: sink.Host, SMTPPort: sink.Port,
			Username: testsinks.SMTPUser, From: "steward@example.com"}}, Secrets{Password: testsinks.SMTPPassword}, "")
		addDeliveryChannel(t, s, Channel{Kind: KindSlack}, Secrets{URL: hook.URL + "/slack/T0/B0/token"}, DigestNone)
		addDeliveryChannel(t, s, Channel{Kind: KindTeams}, Secrets{URL: hook.URL + "/teams"}, DigestNone)
		addDeliveryChannel(t, s, Channel{Kind: KindWebhook}, Secrets{URL: hook.URL + "/hook", SigningSecret: "whsec-1"}, DigestNone)

		tenant := "t1"
		e := raiseEvent(t, s, Event{TenantID: &tenant, Title: "Budget <Prod> over 80%", Message: "Spent 8,000 of 10,000 EUR.", Link: "/budgets/b1",
			Details: map[string]any{"budget_id": "b1"}, Recipients: []string{"owner@example.com"}})
		o := fastOptions(sink)
		o.RootCAs = pool
		reg := prometheus.NewRegistry()
		o.Registerer = reg
		startWorker(t, s, o)
		waitUntil(t, "every delivery delivered", 20*time.Second, allStatus(t, s, StatusDelivered))
		if n := len(outbox(t, s)); n != 6 {
			t.Fatalf("%d deliveries; want 6 (two e-mail channels and a contact, slack, teams, webhook)", n)
		}

		msgs := sink.Messages()
		if len(msgs) != 2 {
			t.Fatalf("STARTTLS sink got %d messages; want the channel's and the contact's", len(msgs))
		}
		var toChannel, toContact testsinks.Message
		for _, m := range msgs {
			if len(m.To) == 1 && m.To[0] == "owner@example.com" {
				toContact = m
			} else {
				toChannel = m
			}
		}
		if strings.Join(toChannel.To, ",") != "ops@example.com,finance@example.com" || toContact.Raw == nil {
			t.Fatalf("recipients %v and %v", toChannel.To, toContact.To)
		}
		for _, m := range append(msgs, tlsSink.Messages()...) {
			if !m.TLS || m.User != testsinks.SMTPUser || m.From != "steward@example.com" {
				t.Fatalf("message sent with TLS %v as %q from %q", m.TLS, m.User, m.From)
			}
			if got := m.Header.Get("X-Steward-Event-Id"); got != e.ID {
				t.Fatalf("X-Steward-Event-Id %q; want %q", got, e.ID)
			}
			if !strings.HasPrefix(m.Header.Get("Message-Id"), "<"+e.ID+".") {
				t.Fatalf("Message-ID %q", m.Header.Get("Message-Id"))
			}
			if subj := m.Header.Get("Subject"); subj != "[Steward] [warning] Budget <Prod> over 80%" {
				t.Fatalf("subject %q", subj)
			}
			for _, want := range []string{"Tenant: Contoso", "Severity: warning", "Spent 8,000 of 10,000 EUR.", origin + "/budgets/b1", "text/html", "Budget &lt;Prod&gt;"} {
				if !strings.Contains(string(m.Raw), want) {
					t.Fatalf("message lacks %q:\n%s", want, m.Raw)
				}
			}
		}
		if n := len(tlsSink.Messages()); n != 1 {
			t.Fatalf("implicit TLS sink got %d messages", n)
		}

		byPath := map[string][]testsinks.Request{}
		for _, r := range hook.Requests() {
			byPath[r.Path] = append(byPath[r.Path], r)
		}
		for _, p := range []string{"/slack/T0/B0/token", "/teams", "/hook"} {
			if len(byPath[p]) != 1 || byPath[p][0].Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%s got %d requests; want one JSON request", p, len(byPath[p]))
			}
		}
		var slack struct {
			Text   string `json:"text"`
			Blocks []struct {
				Type string `json:"type"`
				Text struct {
					Text string `json:"text"`
				} `json:"text"`
			} `json:"blocks"`
		}
		mustJSON(t, byPath["/slack/T0/B0/token"][0].Body, &slack)
		if slack.Text != "[warning] Budget <Prod> over 80%" || slack.Blocks[0].Type != "header" || slack.Blocks[1].Type != "section" ||
			!strings.Contains(slack.Blocks[1].Text.Text, "<"+origin+"/budgets/b1|Open in Steward>") {
			t.Fatalf("slack payload %s", byPath["/slack/T0/B0/token"][0].Body)
		}
		var teams struct {
			Type        string `json:"type"`
			Attachments []struct {
				ContentType string `json:"contentType"`
				Content     struct {
					Type    string           `json:"type"`
					Version string           `json:"version"`
					Body    []map[string]any `json:"body"`
				} `json:"content"`
			} `json:"attachments"`
		}
		mustJSON(t, byPath["/teams"][0].Body, &teams)
		if teams.Type != "message" || len(teams.Attachments) != 1 || teams.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" ||
			teams.Attachments[0].Content.Type != "AdaptiveCard" || teams.Attachments[0].Content.Version != "1.4" ||
			!strings.Contains(string(byPath["/teams"][0].Body), `"Contoso"`) {
			t.Fatalf("teams payload %s", byPath["/teams"][0].Body)
		}

		req := byPath["/hook"][0]
		var body webhookEvent
		mustJSON(t, req.Body, &body)
		if body.EventID != e.ID || body.TenantName != "Contoso" || *body.TenantID != "t1" || body.Link != origin+"/budgets/b1" ||
			body.Details["budget_id"] != "b1" || body.Kind != "budget.threshold_crossed" || body.DeliveryID == 0 || !body.OccurredAt.Equal(e.OccurredAt.Truncate(time.Microsecond)) {
			t.Fatalf("webhook body %s", req.Body)
		}
		if req.Header.Get(webhook.HeaderEventID) != e.ID || req.Header.Get(webhook.HeaderDeliveryID) != fmt.Sprint(body.DeliveryID) {
			t.Fatalf("webhook headers %v", req.Header)
		}
		ts, sig := req.Header.Get(webhook.HeaderTimestamp), req.Header.Get(webhook.HeaderSignature)
		if err := webhook.VerifySignature([]byte("whsec-1"), ts, sig, req.Body, time.Now(), 0); err != nil {
			t.Fatalf("signature does not verify: %v", err)
		}
		tampered := []byte(strings.Replace(string(req.Body), "Contoso", "Fabrikam", 1))
		if err := webhook.VerifySignature([]byte("whsec-1"), ts, sig, tampered, time.Now(), 0); !errors.Is(err, webhook.ErrMismatch) {
			t.Fatalf("tampered body: %v; want ErrMismatch", err)
		}
		if err := webhook.VerifySignature([]byte("whsec-2"), ts, sig, req.Body, time.Now(), 0); !errors.Is(err, webhook.ErrMismatch) {
			t.Fatalf("other secret: %v; want ErrMismatch", err)
		}
		if err := webhook.VerifySignature([]byte("whsec-1"), ts, sig, req.Body, time.Now().Add(6*time.Minute), 0); !errors.Is(err, webhook.ErrStale) {
			t.Fatalf("replayed after 6 minutes: %v; want ErrStale", err)
		}

		if got := metricValue(t, reg, "steward_notification_deliveries_total", "kind", "email", "result", "delivered"); got != 3 {
			t.Fatalf("delivered e-mail metric %v; want 3", got)
		}
		if got := metricValue(t, reg, "steward_notification_outbox_deliveries", "status", "pending"); got != 0 {
			t.Fatalf("pending gauge %v; want 0", got)
		}
		if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
			t.Fatalf("metrics lint: %v %+v", err, problems)
		}
	})
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

// metricValue is the value of a registered counter's or gauge's series, found
// by name and label pairs.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue series
				}
			}
			return m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s %v", name, labels)
	return 0
}

func TestDeliveryFailsThenDies(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		s := newDeliveryStore(t, dialect)
		hook := testsinks.NewWebhook(t)
		hook.Down(http.StatusServiceUnavailable)
		addDeliveryChannel(t, s, Channel{Kind: KindWebhook}, Secrets{URL: hook.URL + "/hook/sekret-path?token=sekret-query", SigningSecret: "sekret-signing"}, DigestNone)
		o := fastOptions(nil)
		o.MaxAttempts = 3
		startWorker(t, s, o)
		raiseEvent(t, s, Event{})
		waitUntil(t, "the delivery dead", 10*time.Second, allStatus(t, s, StatusDead))
		d := outbox(t, s)[0]
		if d.Attempts != 3 || len(hook.Requests()) != 3 {
			t.Fatalf("%d attempts, %d requests; want 3 of each", d.Attempts, len(hook.Requests()))
		}
		if !strings.Contains(d.LastError, "503 Service Unavailable") || !strings.Contains(d.LastError, "127.0.0.1") {
			t.Fatalf("last error %q; want the answer and the host", d.LastError)
		}
		if strings.Contains(d.LastError, "sekret") {
			t.Fatalf("last error %q holds a secret", d.LastError)
		}
	})
}

func TestSecretsNeverInLastError(t *testing.T) {
	s := newDeliveryStore(t, store.DialectSQLite)
	hook := testsinks.NewWebhook(t)
	hook.Down(0)
	addDeliveryChannel(t, s, Channel{Kind: KindSlack}, Secrets{URL: hook.URL + "/services/T0/B0/sekret-token"}, DigestNone)
	addDeliveryChannel(t, s, Channel{Kind: KindEmail, Settings: Settings{SMTPHost: "127.0.0.1", SMTPPort: closedPort(t), Username: "u", From: "a@example.com", To: []string{"b@example.com"}}},
		Secrets{Password: "sekret-password"}, DigestNone)
	o := fastOptions(nil)
	o.MaxAttempts = 1
	startWorker(t, s, o)
	raiseEvent(t, s, Event{})
	waitUntil(t, "deliveries dead", 10*time.Second, allStatus(t, s, StatusDead))
	for _, d := range outbox(t, s) {
		if d.LastError == "" || strings.Contains(d.LastError, "sekret") {
			t.Fatalf("channel %s: last error %q", d.ChannelID, d.LastError)
		}
	}
}

// closedPort is a port on 127.0.0.1 that nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

func TestScrub(t *testing.T) {
	sec := Secrets{URL: "https://hooks.example/services/T0/B0/tok%20en?sig=abc123", Password: "pw-123", SigningSecret: "whsec"}
	msg := `Post "https://hooks.example/services/T0/B0/tok%20en?sig=abc123": path /services/T0/B0/tok en, sig=abc123, auth pw-123 whsec`
	got := scrub(msg, sec)
	for _, bad := range []string{"tok", "abc123", "pw-123", "whsec"} {
		if strings.Contains(got, bad) {
			t.Fatalf("scrubbed %q still holds %q", got, bad)
		}
	}
}

func TestDeliveryRecovers(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		s := newDeliveryStore(t, dialect)
		hook := testsinks.NewWebhook(t)
		hook.Down(0)
		addDeliveryChannel(t, s, Channel{Kind: KindWebhook}, Secrets{URL: hook.URL, SigningSecret: "k"}, DigestNone)
		startWorker(t, s, fastOptions(nil))
		e := raiseEvent(t, s, Event{})
		waitUntil(t, "two failed attempts", 10*time.Second, func() bool { return len(hook.Requests()) >= 2 })
		if d := outbox(t, s)[0]; d.Status != StatusPending || d.LastError == "" {
			t.Fatalf("delivery %+v; want pending with an error while the receiver is down", d)
		}
		hook.Up()
		waitUntil(t, "the delivery delivered", 10*time.Second, allStatus(t, s, StatusDelivered))
		got := hook.Delivered()
		if len(got) != 1 || got[0].Header.Get(webhook.HeaderEventID) != e.ID {
			t.Fatalf("%d delivered requests; want the event once", len(got))
		}
		if d := outbox(t, s)[0]; d.LastError != "" || d.DeliveredAt == nil || d.Attempts < 3 || d.ClaimedUntil != nil {
			t.Fatalf("delivery %+v", d)
		}
	})
}

func TestLeaseExpiryReclaims(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		s := newDeliveryStore(t, dialect)
		hook := testsinks.NewWebhook(t)
		addDeliveryChannel(t, s, Channel{Kind: KindWebhook}, Secrets{URL: hook.URL, SigningSecret: "k"}, DigestNone)
		raiseEvent(t, s, Event{})
		// A replica claims the delivery and dies.
		lease := 700 * time.Millisecond
		claimed := time.Now()
		units, err := s.claim(context.Background(), 4, lease)
		if err != nil || len(units) != 1 {
			t.Fatalf("claim: %v, %d units", err, len(units))
		}
		if again, err := s.claim(context.Background(), 4, lease); err != nil || len(again) != 0 {
			t.Fatalf("claimed again within the lease: %v, %d units", err, len(again))
		}
		startWorker(t, s, fastOptions(nil))
		waitUntil(t, "the delivery delivered", 10*time.Second, allStatus(t, s, StatusDelivered))
		got := hook.Delivered()
		if len(got) != 1 || got[0].At.Sub(claimed) < lease {
			t.Fatalf("%d requests, first %v after the claim; want one after the %v lease", len(got), got[0].At.Sub(claimed), lease)
		}
	})
}

func TestTwoWorkersDeliverOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		s1 := newDeliveryStore(t, dialect)
		s2, err := New(s1.db, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		hook := testsinks.NewWebhook(t)
		hook.Delay(20 * time.Millisecond)
		addDeliveryChannel(t, s1, Channel{Kind: KindWebhook}, Secrets{URL: hook.URL, SigningSecret: "k"}, DigestNone)
		const n = 60
		for range n {
			raiseEvent(t, s1, Event{})
		}
		regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
		for i, s := range []*Store{s1, s2} {
			o := fastOptions(nil)
			o.Registerer = regs[i]
			startWorker(t, s, o)
		}
		waitUntil(t, "every delivery delivered", 20*time.Second, allStatus(t, s1, StatusDelivered))
		seen := map[string]int{}
		for _, r := range hook.Requests() {
			seen[r.Header.Get(webhook.HeaderEventID)]++
		}
		if len(seen) != n || len(hook.Requests()) != n {
			t.Fatalf("%d requests for %d events; want each of %d once", len(hook.Requests()), len(seen), n)
		}
		a := metricValue(t, regs[0], "steward_notification_deliveries_total", "kind", "webhook", "result", "delivered")
		b := metricValue(t, regs[1], "steward_notification_deliveries_total", "kind", "webhook", "result", "delivered")
		if a == 0 || b == 0 || a+b != n {
			t.Fatalf("workers delivered %v and %v; want both a share of %d", a, b, n)
		}
	})
}

func TestDigestIsOneMessage(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		s := newDeliveryStore(t, dialect)
		addDeliveryTenant(t, s, "t1", "Contoso")
		hook := testsinks.NewWebhook(t)
		sink := testsinks.NewSMTP(t, testsinks.SMTPOptions{})
		addDeliveryChannel(t, s, Channel{Kind: KindWebhook}, Secrets{URL: hook.URL + "/hook", SigningSecret: "k"}, DigestHourly)
		addDeliveryChannel(t, s, Channel{Kind: KindSlack}, Secrets{URL: hook.URL + "/slack"}, DigestDaily)
		addDeliveryChannel(t, s, Channel{Kind: KindEmail, Settings: Settings{SMTPHost: sink.Host, SMTPPort: sink.Port, Username: testsinks.SMTPUser,
			From: "steward@example.com", To: []string{"ops@example.com"}}}, Secrets{Password: testsinks.SMTPPassword}, DigestHourly)
		tenant := "t1"
		var ids []string
		for i := range 3 {
			e := raiseEvent(t, s, Event{TenantID: &tenant, Title: fmt.Sprintf("Event %d", i), OccurredAt: time.Now().Add(time.Duration(i) * time.Second)})
			ids = append(ids, e.ID)
		}
		for _, d := range outbox(t, s) {
			if !d.NextAttemptAt.Equal(DigestDue(d.Digest, d.CreatedAt)) || !d.NextAttemptAt.After(time.Now()) {
				t.Fatalf("digest delivery due %v; want its period's end", d.NextAttemptAt)
			}
		}
		// Two replicas, each of which could claim a digest.
		other, err := New(s.db, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		startWorker(t, s, fastOptions(sink))
		startWorker(t, other, fastOptions(sink))
		time.Sleep(300 * time.Millisecond)
		if len(hook.Requests()) != 0 {
			t.Fatal("a digest went out before its period ended")
		}
		// The period ends.
		if _, err := s.db.NewUpdate().Model((*Delivery)(nil)).Set("next_attempt_at = ?", time.Now().UTC().Add(-time.Second)).Where("1 = 1").Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the digests delivered", 10*time.Second, allStatus(t, s, StatusDelivered))
		byPath := map[string][]testsinks.Request{}
		for _, r := range hook.Requests() {
			byPath[r.Path] = append(byPath[r.Path], r)
		}
		if len(byPath["/hook"]) != 1 || len(byPath["/slack"]) != 1 || len(sink.Messages()) != 1 {
			t.Fatalf("%d webhook, %d slack, %d e-mail messages; want one digest each", len(byPath["/hook"]), len(byPath["/slack"]), len(sink.Messages()))
		}
		var digest webhookDigest
		mustJSON(t, byPath["/hook"][0].Body, &digest)
		if !digest.Digest || digest.Period != DigestHourly || len(digest.Events) != 3 {
			t.Fatalf("digest body %s", byPath["/hook"][0].Body)
		}
		for i, e := range digest.Events {
			if e.EventID != ids[i] || e.TenantName != "Contoso" {
				t.Fatalf("digest event %d: %+v; want %s in order", i, e, ids[i])
			}
		}
		if got := byPath["/hook"][0].Header.Get(webhook.HeaderEventID); got != strings.Join(ids, ",") {
			t.Fatalf("digest event ids header %q", got)
		}
		if !strings.Contains(string(byPath["/slack"][0].Body), "3 Steward notifications (daily digest)") {
			t.Fatalf("slack digest %s", byPath["/slack"][0].Body)
		}
		m := sink.Messages()[0]
		if m.Header.Get("Subject") != "[Steward] 3 Steward notifications (hourly digest)" || m.Header.Get("X-Steward-Event-Id") != strings.Join(ids, ",") {
			t.Fatalf("digest e-mail headers %v", m.Header)
		}
		for i := range 3 {
			if !strings.Contains(string(m.Raw), fmt.Sprintf("Event %d", i)) {
				t.Fatalf("digest e-mail lacks event %d", i)
			}
		}
	})
}

func TestPrivateNetworksRefused(t *testing.T) {
	s := newDeliveryStore(t, store.DialectSQLite)
	hook := testsinks.NewWebhook(t)
	sink := testsinks.NewSMTP(t, testsinks.SMTPOptions{})
	addDeliveryChannel(t, s, Channel{Kind: KindWebhook}, Secrets{URL: hook.URL, SigningSecret: "k"}, DigestNone)
	addDeliveryChannel(t, s, Channel{Kind: KindEmail, Settings: Settings{SMTPHost: "localhost", SMTPPort: sink.Port, Username: testsinks.SMTPUser,
		From: "steward@example.com", To: []string{"ops@example.com"}}}, Secrets{Password: testsinks.SMTPPassword}, DigestNone)
	o := fastOptions(sink)
	o.AllowPrivateNetworks = false
	o.MaxAttempts = 1
	startWorker(t, s, o)
	raiseEvent(t, s, Event{})
	waitUntil(t, "the deliveries dead", 10*time.Second, allStatus(t, s, StatusDead))
	for _, d := range outbox(t, s) {
		if !strings.Contains(d.LastError, "refused to connect to 127.0.0.1") && !strings.Contains(d.LastError, "refused to connect to ::1") {
			t.Fatalf("last error %q; want the private address refused", d.LastError)
		}
	}
	if len(hook.Requests()) != 0 || len(sink.Messages()) != 0 {
		t.Fatal("a private address was reached")
	}
}

func TestRefusePrivate(t *testing.T) {
	for _, c := range []struct {
		addr    string
		refused bool
	}{
		{"127.0.0.1:80", true}, {"[::1]:80", true}, {"10.1.2.3:443", true}, {"172.16.0.1:443", true}, {"192.168.1.1:25", true},
		{"169.254.169.254:80", true}, {"[fe80::1]:80", true}, {"0.0.0.0:80", true}, {"[::]:80", true}, {"[::ffff:127.0.0.1]:80", true},
		{"100.64.0.1:80", true}, {"[fd00::1]:80", true}, {"224.0.0.1:80", true},
		{"8.8.8.8:443", false}, {"[2606:4700::1111]:443", false}, {"52.96.0.1:587", false},
	} {
		err := refusePrivate("tcp", c.addr, nil)
		if (err != nil) != c.refused {
			t.Errorf("%s: %v; want refused %v", c.addr, err, c.refused)
		}
	}
}

func TestDisabledAndGoneChannelsDie(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		s := newDeliveryStore(t, dialect)
		hook := testsinks.NewWebhook(t)
		hook.Down(http.StatusGone)
		gone := addDeliveryChannel(t, s, Channel{Kind: KindSlack}, Secrets{URL: hook.URL + "/gone"}, DigestNone)
		off := addDeliveryChannel(t, s, Channel{Kind: KindWebhook}, Secrets{URL: hook.URL + "/off", SigningSecret: "k"}, DigestNone)
		raiseEvent(t, s, Event{})
		if _, err := s.db.NewUpdate().Model((*Channel)(nil)).Set("enabled = ?", false).Where("id = ?", off.ID).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		startWorker(t, s, fastOptions(nil))
		waitUntil(t, "the deliveries dead", 10*time.Second, allStatus(t, s, StatusDead))
		for _, d := range outbox(t, s) {
			switch d.ChannelID {
			case gone.ID:
				if d.Attempts != 1 || !strings.Contains(d.LastError, "410 Gone") {
					t.Fatalf("gone webhook: %+v; want dead after one attempt", d)
				}
			case off.ID:
				if d.Attempts != 0 || !strings.Contains(d.LastError, "channel disabled") {
					t.Fatalf("disabled channel: %+v; want dead unattempted", d)
				}
			}
		}
		if len(hook.Requests()) != 1 {
			t.Fatalf("%d requests; want one to the gone webhook", len(hook.Requests()))
		}
	})
}

func TestBackoff(t *testing.T) {
	w := &Worker{opts: DeliveryOptions{RetryMin: 30 * time.Second, RetryMax: time.Hour}}
	for _, c := range []struct {
		attempts int
		lo, hi   time.Duration
	}{
		{1, 30 * time.Second, 30 * time.Second},
		{2, 45 * time.Second, time.Minute},
		{4, 3 * time.Minute, 4 * time.Minute},
		{8, 45 * time.Minute, time.Hour},
		{30, 45 * time.Minute, time.Hour},
	} {
		for range 20 {
			if d := w.backoff(c.attempts); d < c.lo || d > c.hi {
				t.Fatalf("backoff after %d attempts %v; want within [%v, %v]", c.attempts, d, c.lo, c.hi)
			}
		}
	}
}

func TestStopFinishesInFlight(t *testing.T) {
	s := newDeliveryStore(t, store.DialectSQLite)
	hook := testsinks.NewWebhook(t)
	hook.Delay(500 * time.Millisecond)
	addDeliveryChannel(t, s, Channel{Kind: KindWebhook}, Secrets{URL: hook.URL, SigningSecret: "k"}, DigestNone)
	w := NewWorker(s, fastOptions(nil))
	w.Start(context.Background())
	raiseEvent(t, s, Event{})
	waitUntil(t, "the request", 10*time.Second, func() bool { return len(hook.Requests()) == 1 })
	w.Stop()
	if d := outbox(t, s)[0]; d.Status != StatusDelivered {
		t.Fatalf("delivery %s after Stop; want the send in flight finished and recorded", d.Status)
	}
}

func TestSendTimesOut(t *testing.T) {
	s := newDeliveryStore(t, store.DialectSQLite)
	hook := testsinks.NewWebhook(t)
	hook.Delay(2 * time.Second)
	addDeliveryChannel(t, s, Channel{Kind: KindWebhook}, Secrets{URL: hook.URL, SigningSecret: "k"}, DigestNone)
	o := fastOptions(nil)
	o.Timeout, o.MaxAttempts = 200*time.Millisecond, 1
	startWorker(t, s, o)
	raiseEvent(t, s, Event{})
	waitUntil(t, "the delivery dead", 10*time.Second, allStatus(t, s, StatusDead))
	if d := outbox(t, s)[0]; !strings.Contains(d.LastError, "no answer within 200ms") {
		t.Fatalf("last error %q", d.LastError)
	}
}

// TestEmailNeverAuthenticatesInClear sends through the sink without TLS,
// where the sink, like a careful server, offers no authentication: a
// channel with a username does not fall back to sending without it.
func TestEmailNeverAuthenticatesInClear(t *testing.T) {
	s := newDeliveryStore(t, store.DialectSQLite)
	sink := testsinks.NewSMTP(t, testsinks.SMTPOptions{})
	addDeliveryChannel(t, s, Channel{Kind: KindEmail, Settings: Settings{SMTPHost: sink.Host, SMTPPort: sink.Port, TLS: TLSNone, Username: testsinks.SMTPUser,
		From: "steward@example.com", To: []string{"ops@example.com"}}}, Secrets{Password: testsinks.SMTPPassword}, DigestNone)
	o := fastOptions(sink)
	o.MaxAttempts = 1
	startWorker(t, s, o)
	raiseEvent(t, s, Event{})
	waitUntil(t, "the delivery dead", 10*time.Second, allStatus(t, s, StatusDead))
	if d := outbox(t, s)[0]; !strings.Contains(d.LastError, "does not support SMTP AUTH") {
		t.Fatalf("last error %q; want authentication unavailable without TLS", d.LastError)
	}
	if len(sink.Messages()) != 0 {
		t.Fatal("the sink got a message")
	}
}

func TestHeloName(t *testing.T) {
	for origin, want := range map[string]string{
		"https://steward.example.com": "steward.example.com", "https://steward.example.com:8443": "steward.example.com",
		"http://127.0.0.1:8000": "", "http://localhost:8000": "", "http://[::1]:8000": "",
	} {
		if got := heloName(origin); got != want {
			t.Errorf("heloName(%q) = %q; want %q", origin, got, want)
		}
	}
}

// TestRedirectsStayOnTheWebhooksHost follows a redirect within the
// webhook's host but not one to another host, which would carry the
// signed body where the channel did not say.
func TestRedirectsStayOnTheWebhooksHost(t *testing.T) {
	s := newDeliveryStore(t, store.DialectSQLite)
	elsewhere := testsinks.NewWebhook(t)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusPermanentRedirect)
		case "/away":
			http.Redirect(w, r, elsewhere.URL+"/stolen", http.StatusTemporaryRedirect)
		case "/here":
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(hook.Close)
	moved := addDeliveryChannel(t, s, Channel{Kind: KindWebhook}, Secrets{URL: hook.URL + "/moved", SigningSecret: "k"}, DigestNone)
	away := addDeliveryChannel(t, s, Channel{Kind: KindWebhook}, Secrets{URL: hook.URL + "/away", SigningSecret: "k"}, DigestNone)
	o := fastOptions(nil)
	o.MaxAttempts = 1
	startWorker(t, s, o)
	raiseEvent(t, s, Event{})
	waitUntil(t, "both deliveries finished", 10*time.Second, func() bool {
		for _, d := range outbox(t, s) {
			if d.Status == StatusPending {
				return false
			}
		}
		return true
	})
	for _, d := range outbox(t, s) {
		switch d.ChannelID {
		case moved.ID:
			if d.Status != StatusDelivered {
				t.Fatalf("redirect within the host: %s %q; want delivered", d.Status, d.LastError)
			}
		case away.ID:
			if d.Status != StatusDead || !strings.Contains(d.LastError, "307") {
				t.Fatalf("redirect to another host: %s %q; want dead, the 307 not followed", d.Status, d.LastError)
			}
		}
	}
	if len(elsewhere.Requests()) != 0 {
		t.Fatal("the body was sent to another host")
	}
}
