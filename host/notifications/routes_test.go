package notifications_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stewardhq/steward/host/app/apptest"
	"github.com/stewardhq/steward/host/notifications"
)

const (
	password      = "smtp-Pa55word-never-shown"
	slackToken    = "slacktokennevershown"
	signingSecret = "signing-secret-never-shown-0123456789abcdef"
)

var secrets = []string{password, slackToken, signingSecret, "webhooktokennevershown"}

// noSecret fails t when the body carries a channel's secret.
func noSecret(t *testing.T, what string, body []byte) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(string(body), s) {
			t.Errorf("%s carries the secret %q: %s", what, s, body)
		}
	}
}

func TestRoutes(t *testing.T) {
	h := apptest.Start(t, apptest.Options{})
	admin := h.Login()
	a := h.Tenant("Brand A", "dir-a")
	b := h.Tenant("Brand B", "dir-b")
	_, userA := h.User("user@a.example", a)

	create := func(token, body string, status int) notifications.Channel {
		t.Helper()
		r := h.JSON(http.MethodPost, "/api/v1/notifications/channels", token, body)
		var c notifications.Channel
		if r.Expect(t, "create "+body, status) && status == http.StatusCreated {
			r.Decode(t, &c)
			noSecret(t, "a create's answer", r.Body)
		}
		return c
	}
	mail := create(admin, `{"name":"Ops","kind":"email","settings":{"smtp_host":"smtp.example.com","smtp_port":587,"username":"steward","from":"s@example.com","to":["ops@example.com"]},"secrets":{"password":"`+password+`"},"contacts":true}`, http.StatusCreated)
	slackA := create(userA, `{"name":"A alerts","kind":"slack","tenant_id":"`+a.ID+`","secrets":{"url":"https://hooks.slack.com/services/T0/B0/`+slackToken+`"}}`, http.StatusCreated)
	hookB := create(admin, `{"name":"B hook","kind":"webhook","tenant_id":"`+b.ID+`","secrets":{"url":"https://hooks.example.com/x?token=webhooktokennevershown","signing_secret":"`+signingSecret+`"}}`, http.StatusCreated)
	if slackA.Settings.URLHost != "hooks.slack.com" || slackA.TenantID == nil || *slackA.TenantID != a.ID || hookB.Settings.URLHost != "hooks.example.com" {
		t.Errorf("created: %+v %+v", slackA, hookB)
	}

	t.Run("422 names the field", func(t *testing.T) {
		for body, field := range map[string]string{
			`{"name":"x","kind":"email","settings":{"smtp_host":"h","smtp_port":0,"from":"s@example.com","to":["a@example.com"]}}`: "body.settings.smtp_port",
			`{"name":"x","kind":"email","settings":{"smtp_host":"h","smtp_port":25,"from":"s@example.com","to":["nope"]}}`:         "body.settings.to[0]",
			`{"name":"x","kind":"slack","secrets":{"url":"https://example.com/hook"}}`:                                             "body.secrets.url",
			`{"name":"x","kind":"teams"}`: "body.secrets.url",
			`{"name":"x","kind":"webhook","secrets":{"url":"https://example.com/","signing_secret":"short"}}`: "body.secrets.signing_secret",
			`{"name":"x","kind":"pager"}`:                                                           "body.kind",
			`{"kind":"slack","secrets":{"url":"https://hooks.slack.com/x"}}`:                        "body.name",
			`{"name":"x","kind":"slack","secrets":{"url":"https://hooks.slack.com/x","token":"y"}}`: "body.secrets.token",
		} {
			r := h.JSON(http.MethodPost, "/api/v1/notifications/channels", admin, body)
			if r.Expect(t, body, http.StatusUnprocessableEntity) {
				if p := r.Problem(t); !p.Names(field) {
					t.Errorf("%s: %+v, want %s named", body, p, field)
				}
			}
		}
		r := h.JSON(http.MethodPost, "/api/v1/notifications/subscriptions", admin, `{"channel_id":"`+mail.ID+`","event_types":["sync.failed","no.such"]}`)
		if r.Expect(t, "unknown event type", http.StatusUnprocessableEntity) && !r.Problem(t).Names("body.event_types[1]") {
			t.Errorf("unknown event type: %s", r.Body)
		}
		// A second contacts channel.
		create(admin, `{"name":"Ops 2","kind":"email","settings":{"smtp_host":"smtp.example.com","smtp_port":587,"from":"s@example.com","to":["ops@example.com"]},"contacts":true}`, http.StatusConflict)
	})

	t.Run("a standard user keeps to its tenants", func(t *testing.T) {
		var list []notifications.Channel
		r := h.Do(http.MethodGet, "/api/v1/notifications/channels", userA, "", "")
		if r.Expect(t, "list", http.StatusOK) {
			r.Decode(t, &list)
		}
		if len(list) != 1 || list[0].ID != slackA.ID {
			t.Errorf("the user's channels: %+v", list)
		}
		create(userA, `{"name":"mine","kind":"slack","secrets":{"url":"https://hooks.slack.com/x"}}`, http.StatusForbidden)
		create(userA, `{"name":"theirs","kind":"slack","tenant_id":"`+b.ID+`","secrets":{"url":"https://hooks.slack.com/x"}}`, http.StatusForbidden)
		for _, c := range []notifications.Channel{mail, hookB} {
			path := "/api/v1/notifications/channels/" + c.ID
			for _, r := range []apptest.Answer{
				h.Do(http.MethodGet, path, userA, "", ""),
				h.JSON(http.MethodPatch, path, userA, `{"name":"mine"}`),
				h.Do(http.MethodDelete, path, userA, "", ""),
				h.JSON(http.MethodPost, path+"/test", userA, ""),
			} {
				r.Expect(t, path, http.StatusNotFound)
				if strings.Contains(string(r.Body), c.Name) {
					t.Errorf("%s: the answer names the channel: %s", path, r.Body)
				}
			}
			r := h.JSON(http.MethodPost, "/api/v1/notifications/subscriptions", userA, `{"channel_id":"`+c.ID+`"}`)
			if r.Expect(t, "subscribing "+c.Name, http.StatusUnprocessableEntity) && !r.Problem(t).Names("body.channel_id") {
				t.Errorf("subscribing %s: %s", c.Name, r.Body)
			}
		}
		h.Do(http.MethodGet, "/api/v1/notifications/channels?tenant_id="+b.ID, userA, "", "").Expect(t, "B's channels", http.StatusForbidden)
		h.Do(http.MethodGet, "/api/v1/notifications/events?tenant_id="+b.ID, userA, "", "").Expect(t, "B's events", http.StatusForbidden)
		h.Do(http.MethodGet, "/api/v1/notifications/channels", "", "", "").Expect(t, "anonymous", http.StatusUnauthorized)
	})

	t.Run("secrets are never shown", func(t *testing.T) {
		for _, path := range []string{"/api/v1/notifications/channels", "/api/v1/notifications/channels/" + mail.ID, "/api/v1/notifications/channels/" + hookB.ID} {
			r := h.Do(http.MethodGet, path, admin, "", "")
			r.Expect(t, path, http.StatusOK)
			noSecret(t, path, r.Body)
		}
		r := h.JSON(http.MethodPatch, "/api/v1/notifications/channels/"+hookB.ID, admin, `{"name":"B webhook","secrets":{"signing_secret":"`+signingSecret+`-rotated"}}`)
		if r.Expect(t, "patch", http.StatusOK) {
			noSecret(t, "a patch's answer", r.Body)
			var c notifications.Channel
			r.Decode(t, &c)
			if c.Name != "B webhook" || c.Settings.URLHost != "hooks.example.com" {
				t.Errorf("patched: %+v", c)
			}
		}
		for _, action := range []string{"notification_channel.create.success", "notification_channel.update.success"} {
			entries := h.Audit(action)
			if len(entries) == 0 {
				t.Errorf("no %s entry", action)
			}
			raw, _ := json.Marshal(entries)
			noSecret(t, action, raw)
		}
	})

	t.Run("subscriptions, a test and a retry", func(t *testing.T) {
		r := h.JSON(http.MethodPost, "/api/v1/notifications/subscriptions", userA, `{"channel_id":"`+slackA.ID+`","event_types":["sync.failed"],"min_severity":"warning","digest":"hourly"}`)
		var sub notifications.Subscription
		if r.Expect(t, "subscribe", http.StatusCreated) {
			r.Decode(t, &sub)
		}
		r = h.JSON(http.MethodPatch, "/api/v1/notifications/subscriptions/"+sub.ID, userA, `{"tenant_ids":["`+a.ID+`"]}`)
		if r.Expect(t, "tenant_ids on a tenant's channel", http.StatusUnprocessableEntity) && !r.Problem(t).Names("body.tenant_ids") {
			t.Errorf("tenant_ids: %s", r.Body)
		}
		r = h.JSON(http.MethodPost, "/api/v1/notifications/subscriptions", admin, `{"channel_id":"`+mail.ID+`","tenant_ids":["`+b.ID+`"]}`)
		var instSub notifications.Subscription
		if r.Expect(t, "admin subscribes", http.StatusCreated) {
			r.Decode(t, &instSub)
		}
		h.Do(http.MethodGet, "/api/v1/notifications/subscriptions/"+instSub.ID, userA, "", "").Expect(t, "the installation's subscription", http.StatusNotFound)
		h.Do(http.MethodDelete, "/api/v1/notifications/subscriptions/"+instSub.ID, userA, "", "").Expect(t, "deleting it", http.StatusNotFound)

		r = h.JSON(http.MethodPost, "/api/v1/notifications/channels/"+slackA.ID+"/test", userA, "")
		var sent struct {
			Event    notifications.Event    `json:"event"`
			Delivery notifications.Delivery `json:"delivery"`
		}
		if r.Expect(t, "test", http.StatusAccepted) {
			r.Decode(t, &sent)
		}
		if sent.Event.Kind != notifications.EventNotificationTest || sent.Delivery.ChannelID != slackA.ID || sent.Delivery.Status != notifications.StatusPending {
			t.Errorf("test: %+v", sent)
		}
		retry := fmt.Sprintf("/api/v1/notifications/deliveries/%d/retry", sent.Delivery.ID)
		h.JSON(http.MethodPost, retry, userA, "").Expect(t, "retrying a pending delivery", http.StatusConflict)
		if _, err := h.DB.NewUpdate().Table("notification_deliveries").Set("status = 'dead', attempts = 8").Where("id = ?", sent.Delivery.ID).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, userB := h.User("user@b.example", b)
		h.JSON(http.MethodPost, retry, userB, "").Expect(t, "another tenant's user retries", http.StatusNotFound)
		var dead struct {
			Items []notifications.Delivery `json:"items"`
			Total int                      `json:"total"`
		}
		r = h.Do(http.MethodGet, "/api/v1/notifications/deliveries?status=dead", userA, "", "")
		if r.Expect(t, "dead letters", http.StatusOK) {
			r.Decode(t, &dead)
		}
		if dead.Total != 1 || dead.Items[0].ID != sent.Delivery.ID {
			t.Errorf("dead letters: %+v", dead)
		}
		r = h.JSON(http.MethodPost, retry, userA, "")
		var d notifications.Delivery
		if r.Expect(t, "retry", http.StatusOK) {
			r.Decode(t, &d)
		}
		if d.Status != notifications.StatusPending || d.Attempts != 0 {
			t.Errorf("retried: %+v", d)
		}
		r = h.Do(http.MethodGet, "/api/v1/notifications/events/"+sent.Event.ID, userA, "", "")
		var detail struct {
			notifications.Event
			Deliveries []notifications.Delivery `json:"deliveries"`
		}
		if r.Expect(t, "the test event", http.StatusOK) {
			r.Decode(t, &detail)
		}
		if len(detail.Deliveries) != 1 || detail.Deliveries[0].ID != sent.Delivery.ID {
			t.Errorf("the test event's deliveries: %+v", detail)
		}
		h.Do(http.MethodGet, "/api/v1/notifications/events/"+sent.Event.ID, userB, "", "").Expect(t, "another tenant's event", http.StatusNotFound)
		for _, action := range []string{"notification_subscription.create.success", "notification_channel.test.success", "notification_delivery.retry.success"} {
			if len(h.Audit(action)) == 0 {
				t.Errorf("no %s entry", action)
			}
		}
		var types []notifications.EventType
		r = h.Do(http.MethodGet, "/api/v1/notifications/event-types", userA, "", "")
		if r.Expect(t, "event types", http.StatusOK) {
			r.Decode(t, &types)
		}
		if len(types) < 2 {
			t.Errorf("event types: %+v", types)
		}
		h.Do(http.MethodDelete, "/api/v1/notifications/channels/"+slackA.ID, userA, "", "").Expect(t, "the user deletes its channel", http.StatusNoContent)
		h.Do(http.MethodGet, "/api/v1/notifications/subscriptions/"+sub.ID, userA, "", "").Expect(t, "its subscription", http.StatusNotFound)
		if len(h.Audit("notification_channel.delete.success")) != 1 {
			t.Error("no delete entry")
		}
	})
}
