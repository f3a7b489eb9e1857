package e2e

import (
	"crypto/tls"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/internal/testsinks"
	"github.com/stewardhq/steward/sdk/webhook"
)

const (
	notifySubA = "aaaaaaaa-0000-0000-0000-000000000001"
	notifySubB = "bbbbbbbb-0000-0000-0000-000000000001"
	// notifySigningSecret signs the webhook channel's requests.
	notifySigningSecret = "a webhook signing secret of 40 bytes....."
)

// notifyWorld is Brand A's and Brand B's estate before (after false) and
// after (after true) the changes the notifications are about: Brand A's
// virtual machines cost 10.00 a day for six weeks, and after, on the day
// before today, 100.00 (an anomaly); its key vault complies with SOC 2's
// CC6.1, and after, does not (a regression); its domain's DMARC policy is
// reject with a DKIM key, and after, none without the key (two
// weakenings).
func notifyWorld(t *testing.T, key string, today time.Time, after bool) string {
	var costs []world.Cost
	last := today.AddDate(0, 0, -2)
	if after {
		last = today
	}
	for d := today.AddDate(0, 0, -42); !d.After(last); d = d.AddDate(0, 0, 1) {
		cost := 10.0
		if after && d.Equal(today.AddDate(0, 0, -1)) {
			cost = 100
		}
		costs = append(costs, world.Cost{SubscriptionID: notifySubA, Date: d.Format(time.DateOnly), Service: "Virtual Machines", ResourceGroup: "rg", Cost: cost, Currency: "USD"})
	}
	vault := "Compliant"
	policy := "v=DMARC1; p=reject; rua=mailto:dmarc@brand-a.example"
	dns := []world.DNSRecord{{Name: "brand-a.example", Type: "TXT", Value: "v=spf1 include:spf.protection.outlook.com -all"}}
	if after {
		vault, policy = "NonCompliant", "v=DMARC1; p=none; rua=mailto:dmarc@brand-a.example"
	} else {
		dns = append(dns, world.DNSRecord{Name: "selector1._domainkey.brand-a.example", Type: "TXT", Value: key})
	}
	dns = append(dns, world.DNSRecord{Name: "_dmarc.brand-a.example", Type: "TXT", Value: policy})
	return writeWorld(t, world.World{
		Tenants: []world.Tenant{
			{Name: "Brand B", DirectoryTenantID: identityDirB, Subscriptions: []world.Subscription{{ID: notifySubB, Name: "B prod"}}, AccessGroups: []string{"grp-b"}},
			{Name: "Brand A", DirectoryTenantID: identityDirA, Subscriptions: []world.Subscription{{ID: notifySubA, Name: "A prod"}},
				AccessGroups: []string{"grp-a"}, Delegated: true, Domains: []string{"brand-a.example"}},
		},
		Costs: costs,
		PolicyStates: []world.PolicyState{
			policyState(notifySubA, "certificate-validity", "Certificates should have the specified maximum validity period", "Key Vault", "Medium",
				"Microsoft.KeyVault/vaults/kva", vault, "SOC_2_CC6.1"),
		},
		DNS: dns,
	})
}

// TestNotificationsThroughTheHost: on PostgreSQL, an installation e-mail
// channel (STARTTLS and AUTH to an SMTP sink, also the contacts channel)
// and a signed webhook channel hear every event; a budget crossing, an
// anomaly, a compliance regression, a DMARC weakening and a failed sync
// each reach both exactly once, and the budget's contact once; the
// outbox outlives a restart; a webhook receiver down for a minute gets its
// event once it is back; every webhook request verifies with the
// documented procedure; Brand B's own channel hears nothing of Brand A.
func TestNotificationsThroughTheHost(t *testing.T) {
	t.Parallel()
	sink := testsinks.NewSMTP(t, testsinks.SMTPOptions{})
	hook, hookB := testsinks.NewWebhook(t), testsinks.NewWebhook(t)
	key := dmarcKey(t)
	now := time.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	env := func(after bool) map[string]string {
		return map[string]string{"STEWARD_SIM_WORLD": notifyWorld(t, key, today, after), "STEWARD_SIM_BOOTSTRAP": fmt.Sprint(!after),
			"STEWARD_NOTIFY_CA_FILE": sink.CAFile, "STEWARD_NOTIFY_POLL_INTERVAL": "500ms",
			"STEWARD_NOTIFY_RETRY_MIN": "2s", "STEWARD_NOTIFY_RETRY_MAX": "8s", "STEWARD_NOTIFY_MAX_ATTEMPTS": "30",
			"STEWARD_RATE_LIMIT_PER_MINUTE": "1000"}
	}
	o := hostOpts{dataDir: t.TempDir(), databaseURL: storetest.PostgresURL(t),
		pluginsHCL: costPlugins("") + compliancePlugins("") + dmarcPlugins(""), env: env(false)}
	h := startHost(t, o)
	admin := h.login()
	for _, job := range []string{"costs", "compliance", "dmarc"} {
		waitStartupSync(t, h, admin, job)
	}
	tenantA, tenantB := tenantID(t, h, identityDirA), tenantID(t, h, identityDirB)

	post := func(token, path string, body any) response {
		t.Helper()
		r := h.do(http.MethodPost, path, token, jsonBody(t, body), "Content-Type", "application/json")
		if r.status != http.StatusCreated && r.status != http.StatusOK && r.status != http.StatusAccepted {
			t.Fatalf("POST %s: %d %s", path, r.status, r.body)
		}
		return r
	}
	var email, hooked, theirs struct {
		ID string `json:"channel_id"`
	}
	post(admin, "/api/v1/notifications/channels", map[string]any{"name": "Operations mail", "kind": "email", "contacts": true,
		"settings": map[string]any{"smtp_host": sink.Host, "smtp_port": sink.Port, "tls": "starttls", "username": testsinks.SMTPUser,
			"from": "steward@ops.example", "to": []string{"ops@ops.example"}},
		"secrets": map[string]any{"password": testsinks.SMTPPassword}}).json(t, &email)
	post(admin, "/api/v1/notifications/channels", map[string]any{"name": "Incident hook", "kind": "webhook",
		"secrets": map[string]any{"url": hook.URL + "/steward", "signing_secret": notifySigningSecret}}).json(t, &hooked)
	post(admin, "/api/v1/notifications/channels", map[string]any{"name": "Brand B hook", "kind": "webhook", "tenant_id": tenantB,
		"secrets": map[string]any{"url": hookB.URL + "/b", "signing_secret": notifySigningSecret}}).json(t, &theirs)
	for _, c := range []string{email.ID, hooked.ID, theirs.ID} {
		post(admin, "/api/v1/notifications/subscriptions", map[string]any{"channel_id": c, "min_severity": "info"})
	}
	since := time.Now().UTC()

	// The world changes; the restarted host's syncs find the anomaly, the
	// regression and the weakenings.
	h.stop(syscall.SIGTERM)
	o.env = env(true)
	h = startHost(t, o)
	admin = h.login()
	f := &fixture{h: h, admin: admin}
	for _, job := range []string{"costs", "compliance", "dmarc"} {
		if r := f.waitRun(t, f.trigger(t, job)); r.Status != "completed" {
			t.Fatalf("%s sync after the change: %+v", job, r)
		}
	}

	// A budget this month's spend crosses, with a contact.
	monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	post(admin, "/api/v1/budgets", map[string]any{"tenant_id": tenantA, "name": "A monthly", "amount": 5, "time_grain": "Monthly", "start_date": monthStart,
		"thresholds": []any{map[string]any{"percentage": 80, "contact_emails": []string{"finops@brand-a.example"}}}})
	kinds := []string{"cost.anomaly", "compliance.regression", "dmarc.weakening", "cost.budget_threshold"}
	waitDelivered(t, h, admin, since, kinds, sink, hook)

	// The receiver goes down; Brand A's costs sync fails; the e-mail goes
	// out, the webhook waits for the receiver to come back a minute later.
	hook.Down(http.StatusServiceUnavailable)
	down := time.Now()
	injectFault(t, h, fmt.Sprintf(`{"prefix": "/subscriptions/%s/providers/Microsoft.CostManagement/query", "status": 403}`, notifySubA))
	if r := f.waitRun(t, f.trigger(t, "costs")); r.Status != "failed" {
		t.Fatalf("the costs sync with a fault: %+v", r)
	}
	failed := waitEvents(t, h, admin, since, "sync.failed", 1)[0]
	h.waitFor("the sync.failed e-mail", time.Minute, func() bool { return len(mailsOf(sink, failed.ID, "")) == 1 })
	h.waitFor("a failed webhook attempt", time.Minute, func() bool { return len(requestsOf(hook.Requests(), failed.ID)) > 0 })
	time.Sleep(time.Until(down.Add(time.Minute)))
	if got := requestsOf(hook.Delivered(), failed.ID); len(got) != 0 {
		t.Fatalf("delivered while the receiver was down: %d", len(got))
	}
	hook.Up()
	h.waitFor("the sync.failed webhook after the receiver is back", time.Minute, func() bool { return len(requestsOf(hook.Delivered(), failed.ID)) == 1 })
	if n := len(requestsOf(hook.Requests(), failed.ID)); n < 2 {
		t.Errorf("the webhook was tried %d times for sync.failed, want failed attempts before the success", n)
	}
	want := map[string]int{"cost.anomaly": 1, "compliance.regression": 1, "dmarc.weakening": 2, "cost.budget_threshold": 1, "sync.failed": 1}
	checkDeliveredOnce(t, h, admin, since, want, sink, hook)
	if n := len(hookB.Requests()); n != 0 {
		t.Errorf("Brand B's channel got %d requests of Brand A's events", n)
	}
}

// notifyEvent is the part of an event the test reads.
type notifyEvent struct {
	ID         string    `json:"event_id"`
	Kind       string    `json:"kind"`
	TenantID   *string   `json:"tenant_id"`
	CreatedAt  time.Time `json:"created_at"`
	Recipients []string  `json:"recipients"`
}

// eventsSince lists the events created since a time, oldest first.
func eventsSince(t *testing.T, h *host, admin string, since time.Time) []notifyEvent {
	t.Helper()
	var page struct {
		Items []notifyEvent `json:"items"`
		Total int           `json:"total"`
	}
	h.get("/api/v1/notifications/events?limit=200", admin).json(t, &page)
	if page.Total > len(page.Items) {
		t.Fatalf("%d events, more than a page", page.Total)
	}
	var out []notifyEvent
	for _, e := range page.Items {
		if !e.CreatedAt.Before(since) {
			out = append(out, e)
		}
	}
	slices.Reverse(out)
	return out
}

// waitEvents waits for n events of a kind since a time and returns them.
func waitEvents(t *testing.T, h *host, admin string, since time.Time, kind string, n int) []notifyEvent {
	t.Helper()
	var got []notifyEvent
	h.waitFor(fmt.Sprintf("%d %s events", n, kind), time.Minute, func() bool {
		got = got[:0]
		for _, e := range eventsSince(t, h, admin, since) {
			if e.Kind == kind {
				got = append(got, e)
			}
		}
		return len(got) >= n
	})
	return got
}

// mailsOf are the sink's messages of an event to a recipient ("" for the
// channel's own addresses).
func mailsOf(sink *testsinks.SMTP, eventID, recipient string) []testsinks.Message {
	var out []testsinks.Message
	for _, m := range sink.Messages() {
		if !slices.Contains(strings.Split(m.Header.Get("X-Steward-Event-Id"), ","), eventID) {
			continue
		}
		if (recipient == "" && slices.Contains(m.To, "ops@ops.example")) || (recipient != "" && slices.Contains(m.To, recipient)) {
			out = append(out, m)
		}
	}
	return out
}

// requestsOf are the requests of an event among reqs.
func requestsOf(reqs []testsinks.Request, eventID string) []testsinks.Request {
	var out []testsinks.Request
	for _, r := range reqs {
		if slices.Contains(strings.Split(r.Header.Get(webhook.HeaderEventID), ","), eventID) {
			out = append(out, r)
		}
	}
	return out
}

// waitDelivered waits until an event of each kind since a time reached
// the e-mail sink and the webhook receiver.
func waitDelivered(t *testing.T, h *host, admin string, since time.Time, kinds []string, sink *testsinks.SMTP, hook *testsinks.Webhook) {
	t.Helper()
	for _, kind := range kinds {
		e := waitEvents(t, h, admin, since, kind, 1)[0]
		h.waitFor(kind+" at the sink and the receiver", time.Minute, func() bool {
			return len(mailsOf(sink, e.ID, "")) > 0 && len(requestsOf(hook.Delivered(), e.ID)) > 0
		})
	}
}

// checkDeliveredOnce checks that the events since a time are those wanted
// (a count per kind), that each reached the sink and the receiver exactly
// once and its recipients once each, that nothing else was sent, and that
// every request the receiver took verifies.
func checkDeliveredOnce(t *testing.T, h *host, admin string, since time.Time, want map[string]int, sink *testsinks.SMTP, hook *testsinks.Webhook) {
	t.Helper()
	seen := map[string]int{}
	mails, delivered := 0, 0
	for _, e := range eventsSince(t, h, admin, since) {
		seen[e.Kind]++
		mails += 1 + len(e.Recipients)
		delivered++
		if n := len(mailsOf(sink, e.ID, "")); n != 1 {
			t.Errorf("%s event %s reached the SMTP sink %d times", e.Kind, e.ID, n)
		}
		if n := len(requestsOf(hook.Delivered(), e.ID)); n != 1 {
			t.Errorf("%s event %s reached the webhook receiver %d times", e.Kind, e.ID, n)
		}
		for _, r := range e.Recipients {
			if n := len(mailsOf(sink, e.ID, r)); n != 1 {
				t.Errorf("%s event %s reached its recipient %s %d times", e.Kind, e.ID, r, n)
			}
		}
	}
	if !maps.Equal(seen, want) {
		t.Errorf("events by kind %v, want %v", seen, want)
	}
	if n := len(sink.Messages()); n != mails {
		t.Errorf("the SMTP sink took %d messages, want %d", n, mails)
	}
	if n := len(hook.Delivered()); n != delivered {
		t.Errorf("the webhook receiver took %d requests, want %d", n, delivered)
	}
	for _, r := range hook.Requests() {
		err := webhook.VerifySignature([]byte(notifySigningSecret), r.Header.Get(webhook.HeaderTimestamp), r.Header.Get(webhook.HeaderSignature), r.Body, r.At, 0)
		if err != nil {
			t.Errorf("a webhook request of %s does not verify: %v", r.Header.Get(webhook.HeaderEventID), err)
		}
	}
	for _, m := range sink.Messages() {
		if !m.TLS || m.User != testsinks.SMTPUser {
			t.Errorf("a message was sent without TLS or authentication: tls %v, user %q", m.TLS, m.User)
		}
	}
}

// injectFault makes the host's simulated Resource Manager answer a fault.
func injectFault(t *testing.T, h *host, fault string) {
	t.Helper()
	arm := regexp.MustCompile(`resource_manager=(https://\S+)`).FindStringSubmatch(h.logs.String())
	if arm == nil {
		t.Fatal("the host did not log the simulated Resource Manager's address")
	}
	sim := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the simulator's own CA, on loopback
	resp, err := sim.Post(arm[1]+"/_sim/faults", "application/json", strings.NewReader(fault))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("injecting a fault: %v %v", resp, err)
	}
	resp.Body.Close()
}
