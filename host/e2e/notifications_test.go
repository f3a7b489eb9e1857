package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store/storetest"
)

// The secrets the test's channels are created with; no answer and no
// audit entry may carry one.
var notificationSecrets = []string{"smtp-Pa55word-e2e", "slacktoken-e2e-secret", "teamstoken-e2e-secret", "signing-secret-e2e-0123456789abcdef0123"}

// TestNotificationsAPI walks the notification routes as an admin and as a
// standard user of tenant A, through the host with its real binaries:
// every answer is checked against the OpenAPI document, none carries a
// channel's secret, and every route refuses the user tenant B's objects.
func TestNotificationsAPI(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := newFixtureOn(t, dialect, hostOpts{env: map[string]string{"STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}})
			f.testNotifications(t)
		})
	}
}

func (f *fixture) testNotifications(t *testing.T) {
	h, a, b := f.h, f.tenantA.ID, f.tenantB.ID
	send := func(method, path, token, body string) response {
		t.Helper()
		var r response
		if body == "" {
			r = h.do(method, path, token, nil)
		} else {
			r = h.do(method, path, token, strings.NewReader(body), "Content-Type", "application/json")
		}
		for _, s := range notificationSecrets {
			if strings.Contains(string(r.body), s) {
				t.Errorf("%s %s: the answer carries the secret %q", method, path, s)
			}
		}
		return r
	}
	type channel struct {
		ID       string  `json:"channel_id"`
		TenantID *string `json:"tenant_id"`
		Settings struct {
			URLHost string `json:"url_host"`
		} `json:"settings"`
	}
	create := func(token, body string) channel {
		t.Helper()
		r := send(http.MethodPost, "/api/v1/notifications/channels", token, body)
		var c channel
		if r.status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", body, r.status, r.body)
		}
		r.json(t, &c)
		return c
	}
	s := notificationSecrets
	mail := create(f.admin, `{"name":"Ops","kind":"email","settings":{"smtp_host":"smtp.example.com","smtp_port":587,"username":"steward","from":"steward@example.com","to":["ops@example.com"]},"secrets":{"password":"`+s[0]+`"}}`)
	slackA := create(f.tokenA, `{"name":"A","kind":"slack","tenant_id":"`+a+`","secrets":{"url":"https://hooks.slack.com/services/T/B/`+s[1]+`"}}`)
	teamsB := create(f.admin, `{"name":"B teams","kind":"teams","tenant_id":"`+b+`","secrets":{"url":"https://prod-1.westeurope.logic.azure.com/workflows/x?sig=`+s[2]+`"}}`)
	hookB := create(f.admin, `{"name":"B hook","kind":"webhook","tenant_id":"`+b+`","secrets":{"url":"https://hooks.example.com/in","signing_secret":"`+s[3]+`"}}`)
	if slackA.Settings.URLHost != "hooks.slack.com" || teamsB.Settings.URLHost != "prod-1.westeurope.logic.azure.com" {
		t.Errorf("url hosts: %+v %+v", slackA, teamsB)
	}
	var sub struct {
		ID string `json:"subscription_id"`
	}
	r := send(http.MethodPost, "/api/v1/notifications/subscriptions", f.admin, `{"channel_id":"`+hookB.ID+`","event_types":["sync.failed"],"min_severity":"error"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("subscribe: %d %s", r.status, r.body)
	}
	r.json(t, &sub)
	send(http.MethodPost, "/api/v1/notifications/subscriptions", f.admin, `{"channel_id":"`+mail.ID+`","tenant_ids":["`+a+`"],"digest":"daily"}`)
	var sent struct {
		Event struct {
			ID string `json:"event_id"`
		} `json:"event"`
		Delivery struct {
			ID int64 `json:"delivery_id"`
		} `json:"delivery"`
	}
	r = send(http.MethodPost, "/api/v1/notifications/channels/"+hookB.ID+"/test", f.admin, "")
	if r.status != http.StatusAccepted {
		t.Fatalf("test: %d %s", r.status, r.body)
	}
	r.json(t, &sent)
	if _, err := h.db().NewUpdate().Table("notification_deliveries").Set("status = 'dead', attempts = 8, last_error = 'refused'").
		Where("id = ?", sent.Delivery.ID).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}

	// The user of tenant A: B's objects and the installation's are
	// missing, naming B is refused, and nothing of B shows.
	leaks := []string{b, f.tenantB.Name, hookB.ID, teamsB.ID, mail.ID}
	retryB := fmt.Sprintf("/api/v1/notifications/deliveries/%d/retry", sent.Delivery.ID)
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{http.MethodGet, "/api/v1/notifications/channels/" + hookB.ID, "", http.StatusNotFound},
		{http.MethodGet, "/api/v1/notifications/channels/" + mail.ID, "", http.StatusNotFound},
		{http.MethodPatch, "/api/v1/notifications/channels/" + hookB.ID, `{"enabled":false}`, http.StatusNotFound},
		{http.MethodDelete, "/api/v1/notifications/channels/" + teamsB.ID, "", http.StatusNotFound},
		{http.MethodPost, "/api/v1/notifications/channels/" + hookB.ID + "/test", "", http.StatusNotFound},
		{http.MethodGet, "/api/v1/notifications/subscriptions/" + sub.ID, "", http.StatusNotFound},
		{http.MethodPatch, "/api/v1/notifications/subscriptions/" + sub.ID, `{"digest":"daily"}`, http.StatusNotFound},
		{http.MethodDelete, "/api/v1/notifications/subscriptions/" + sub.ID, "", http.StatusNotFound},
		{http.MethodGet, "/api/v1/notifications/events/" + sent.Event.ID, "", http.StatusNotFound},
		{http.MethodPost, retryB, "", http.StatusNotFound},
		{http.MethodGet, "/api/v1/notifications/channels?tenant_id=" + b, "", http.StatusForbidden},
		{http.MethodGet, "/api/v1/notifications/events?tenant_id=" + b, "", http.StatusForbidden},
		{http.MethodPost, "/api/v1/notifications/channels", `{"name":"x","kind":"slack","tenant_id":"` + b + `","secrets":{"url":"https://hooks.slack.com/x"}}`, http.StatusForbidden},
		{http.MethodPost, "/api/v1/notifications/channels", `{"name":"x","kind":"slack","secrets":{"url":"https://hooks.slack.com/x"}}`, http.StatusForbidden},
		{http.MethodPost, "/api/v1/notifications/subscriptions", `{"channel_id":"` + hookB.ID + `"}`, http.StatusUnprocessableEntity},
		{http.MethodGet, "/api/v1/notifications/channels", "", http.StatusOK},
		{http.MethodGet, "/api/v1/notifications/subscriptions", "", http.StatusOK},
		{http.MethodGet, "/api/v1/notifications/events", "", http.StatusOK},
		{http.MethodGet, "/api/v1/notifications/deliveries", "", http.StatusOK},
		{http.MethodGet, "/api/v1/notifications/deliveries?channel_id=" + hookB.ID, "", http.StatusOK},
		{http.MethodGet, "/api/v1/notifications/deliveries?event_id=" + sent.Event.ID, "", http.StatusOK},
		{http.MethodGet, "/api/v1/notifications/event-types", "", http.StatusOK},
	} {
		r := send(c.method, c.path, f.tokenA, c.body)
		if r.status != c.want {
			t.Errorf("user A %s %s: %d %s, want %d", c.method, c.path, r.status, r.body, c.want)
		}
		for _, l := range leaks {
			// An id the request itself names may be echoed, as a 422 does.
			if strings.Contains(string(r.body), l) && !strings.Contains(c.path+c.body, l) {
				t.Errorf("user A %s %s: the answer carries %q: %s", c.method, c.path, l, r.body)
			}
		}
	}
	if r := send(http.MethodGet, "/api/v1/notifications/channels", "", ""); r.status != http.StatusUnauthorized {
		t.Errorf("anonymous: %d", r.status)
	}

	// The admin reads, changes and retries.
	var dead struct {
		Items []struct {
			ID        int64  `json:"delivery_id"`
			LastError string `json:"last_error"`
		} `json:"items"`
		Total int `json:"total"`
	}
	send(http.MethodGet, "/api/v1/notifications/deliveries?status=dead", f.admin, "").json(t, &dead)
	if dead.Total != 1 || dead.Items[0].ID != sent.Delivery.ID || dead.Items[0].LastError != "refused" {
		t.Errorf("dead letters: %+v", dead)
	}
	if r := send(http.MethodPost, retryB, f.admin, ""); r.status != http.StatusOK || !strings.Contains(string(r.body), `"status":"pending"`) {
		t.Errorf("retry: %d %s", r.status, r.body)
	}
	if r := send(http.MethodPost, retryB, f.admin, ""); r.status != http.StatusConflict {
		t.Errorf("a second retry: %d %s", r.status, r.body)
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/v1/notifications/channels", ""},
		{http.MethodGet, "/api/v1/notifications/channels/" + hookB.ID, ""},
		{http.MethodPatch, "/api/v1/notifications/channels/" + hookB.ID, `{"name":"B webhook","secrets":{"url":"https://hooks.example.com/v2"}}`},
		{http.MethodPatch, "/api/v1/notifications/channels/" + mail.ID, `{"settings":{"smtp_port":465,"tls":"tls"}}`},
		{http.MethodPatch, "/api/v1/notifications/subscriptions/" + sub.ID, `{"min_severity":"warning"}`},
		{http.MethodGet, "/api/v1/notifications/subscriptions?channel_id=" + hookB.ID, ""},
		{http.MethodGet, "/api/v1/notifications/events?kind=notification.test&limit=5", ""},
		{http.MethodGet, "/api/v1/notifications/events/" + sent.Event.ID, ""},
		{http.MethodDelete, "/api/v1/notifications/subscriptions/" + sub.ID, ""},
		{http.MethodDelete, "/api/v1/notifications/channels/" + teamsB.ID, ""},
	} {
		if r := send(c.method, c.path, f.admin, c.body); r.status >= 300 {
			t.Errorf("admin %s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	r = send(http.MethodPatch, "/api/v1/notifications/channels/"+mail.ID, f.admin, `{"settings":{"smtp_port":70000}}`)
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "body.settings.smtp_port") {
		t.Errorf("a bad port: %d %s", r.status, r.body)
	}

	// The audit log has every change, and no secret.
	var entries struct {
		Items []struct {
			Action string `json:"action"`
		} `json:"items"`
	}
	send(http.MethodGet, "/api/v1/audit-logs?action_prefix=notification_&limit=500", f.admin, "").json(t, &entries)
	seen := map[string]bool{}
	for _, e := range entries.Items {
		seen[e.Action] = true
	}
	for _, action := range []string{"notification_channel.create.success", "notification_channel.update.success", "notification_channel.delete.success",
		"notification_channel.test.success", "notification_subscription.create.success", "notification_subscription.update.success",
		"notification_subscription.delete.success", "notification_delivery.retry.success"} {
		if !seen[action] {
			t.Errorf("no %s in the audit log", action)
		}
	}
}

// TestNotificationsPage: the Notifications page as a browser signed in as
// the admin uses it — adding a channel and a subscription through its
// forms, a refused form shown again without its secrets, a dead letter
// retried — and as a standard user, who sees only its tenants' channels.
func TestNotificationsPage(t *testing.T) {
	f := newFixture(t, "sqlite")
	h := f.h
	b := newBrowser(h)
	if r := b.signIn("/notifications"); r.status != http.StatusSeeOther {
		t.Fatalf("sign in: %d %s", r.status, r.body)
	}
	page := b.do(http.MethodGet, "/notifications", nil)
	m := csrfFieldRE.FindStringSubmatch(string(page.body))
	if page.status != http.StatusOK || m == nil || !strings.Contains(string(page.body), "No channels yet") {
		t.Fatalf("the empty page: %d %s", page.status, page.body)
	}
	csrf := m[1]
	secret := "slacktoken-page-secret"
	add := url.Values{"csrf_token": {csrf}, "name": {"Ops alerts"}, "kind": {"slack"}, "tenant_id": {""}, "url": {"https://hooks.slack.com/services/T/B/" + secret}}
	if r := b.do(http.MethodPost, "/notifications/channels", add); r.status != http.StatusSeeOther || r.header.Get("Location") != "/notifications" {
		t.Fatalf("add a channel: %d %s", r.status, r.body)
	}
	bad := url.Values{"csrf_token": {csrf}, "name": {"Broken"}, "kind": {"webhook"}, "url": {"https://hooks.example.com/" + secret}, "signing_secret": {"short-" + secret}}
	r := b.do(http.MethodPost, "/notifications/channels", bad)
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "secrets.signing_secret") || !strings.Contains(string(r.body), `value="Broken"`) {
		t.Errorf("a refused channel: %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), secret) {
		t.Errorf("the refused form shows a secret again: %s", r.body)
	}
	if r := b.do(http.MethodPost, "/notifications/channels", url.Values{"name": {"No token"}, "kind": {"slack"}}); r.status != http.StatusForbidden {
		t.Errorf("a form without its CSRF token: %d", r.status)
	}

	var channels []struct {
		ID string `json:"channel_id"`
	}
	h.get("/api/v1/notifications/channels", f.admin).json(t, &channels)
	if len(channels) != 1 {
		t.Fatalf("channels: %+v", channels)
	}
	sub := url.Values{"csrf_token": {csrf}, "channel_id": {channels[0].ID}, "event_types": {"sync.failed"}, "min_severity": {"error"}, "digest": {"none"}}
	if r := b.do(http.MethodPost, "/notifications/subscriptions", sub); r.status != http.StatusSeeOther {
		t.Fatalf("add a subscription: %d %s", r.status, r.body)
	}
	var sent struct {
		Delivery struct {
			ID int64 `json:"delivery_id"`
		} `json:"delivery"`
	}
	h.do(http.MethodPost, "/api/v1/notifications/channels/"+channels[0].ID+"/test", f.admin, nil).json(t, &sent)
	if _, err := h.db().NewUpdate().Table("notification_deliveries").Set("status = 'dead', attempts = 8, last_error = 'connection refused'").
		Where("id = ?", sent.Delivery.ID).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	page = b.do(http.MethodGet, "/notifications", nil)
	body := string(page.body)
	for _, want := range []string{"Ops alerts", "hooks.slack.com", "Installation", "sync.failed, error and above", "connection refused", "Test notification", "Retry"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, secret) {
		t.Error("the page shows a secret")
	}
	// Scoped to tenant A, the page shows A's channels alone.
	scoped := b.do(http.MethodGet, "/notifications?tenant_id="+f.tenantA.ID, nil)
	if scoped.status != http.StatusOK || strings.Contains(string(scoped.body), "Ops alerts") || strings.Contains(string(scoped.body), "Installation (every") {
		t.Errorf("the page of tenant A: %d %s", scoped.status, scoped.body)
	}
	retry := fmt.Sprintf("/notifications/deliveries/%d/retry", sent.Delivery.ID)
	if r := b.do(http.MethodPost, retry, url.Values{"csrf_token": {csrf}}); r.status != http.StatusSeeOther {
		t.Errorf("retry: %d %s", r.status, r.body)
	}
	if r := b.do(http.MethodPost, retry, url.Values{"csrf_token": {csrf}}); r.status != http.StatusConflict {
		t.Errorf("a second retry: %d", r.status)
	}

	// The standard user of tenant A sees neither the installation's
	// channel nor its delivery, and may not retry it.
	r = h.do(http.MethodGet, "/notifications", f.tokenA, nil, "Accept", "text/html")
	if r.status != http.StatusOK || strings.Contains(string(r.body), "Ops alerts") || strings.Contains(string(r.body), "Installation (every") {
		t.Errorf("the user's page: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodGet, "/notifications?tenant_id="+f.tenantB.ID, f.tokenA, nil); r.status != http.StatusForbidden {
		t.Errorf("the user's page of tenant B: %d", r.status)
	}
	if r := h.do(http.MethodPost, retry, f.tokenA, strings.NewReader(""), "Content-Type", "application/x-www-form-urlencoded"); r.status != http.StatusNotFound {
		t.Errorf("the user retries the installation's delivery: %d %s", r.status, r.body)
	}
}
