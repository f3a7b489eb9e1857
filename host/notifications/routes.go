package notifications

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/sdk"
)

// settingsInput are a channel's settings as a create sends them; which
// apply depends on the kind.
type settingsInput struct {
	SMTPHost string   `json:"smtp_host,omitempty" maxLength:"253" doc:"E-mail: the SMTP server's host name or IP address; required"`
	SMTPPort int      `json:"smtp_port,omitempty" minimum:"1" maximum:"65535" doc:"E-mail: the SMTP server's port, 1-65535; omitted, 587 for starttls, 465 for tls, 25 for none"`
	TLS      string   `json:"tls,omitempty" enum:"starttls,tls,none" doc:"E-mail: starttls (the default, required by the server), tls (implicit TLS, usually port 465) or none (a relay on a trusted network)"`
	Username string   `json:"username,omitempty" maxLength:"200" doc:"E-mail: the SMTP user; with it secrets.password is required, without it mail is sent unauthenticated"`
	From     string   `json:"from,omitempty" maxLength:"254" doc:"E-mail: the sender, a bare address; required"`
	To       []string `json:"to,omitempty" maxItems:"50" doc:"E-mail: 1 to 50 bare addresses; required"`
}

// settingsPatch are a channel's settings as an update sends them: each
// given field replaces the stored one.
type settingsPatch struct {
	SMTPHost *string   `json:"smtp_host,omitempty" maxLength:"253"`
	SMTPPort *int      `json:"smtp_port,omitempty" minimum:"1" maximum:"65535"`
	TLS      *string   `json:"tls,omitempty" enum:"starttls,tls,none"`
	Username *string   `json:"username,omitempty" maxLength:"200" doc:"An empty username sends unauthenticated and drops the password"`
	From     *string   `json:"from,omitempty" maxLength:"254"`
	To       *[]string `json:"to,omitempty" maxItems:"50"`
}

// secretsInput are a channel's secrets; they are sealed, and no answer
// carries them.
type secretsInput struct {
	Password      string `json:"password,omitempty" maxLength:"1024" writeOnly:"true" doc:"E-mail: the SMTP password"`
	URL           string `json:"url,omitempty" maxLength:"2000" writeOnly:"true" doc:"Slack, Teams and webhook: the URL to post to; https (http only on a host in development). Slack's is on hooks.slack.com; Teams' on *.webhook.office.com, *.logic.azure.com or *.powerplatform.com (a Workflows webhook). The channel shows only its host, as settings.url_host"`
	SigningSecret string `json:"signing_secret,omitempty" minLength:"32" maxLength:"1024" writeOnly:"true" doc:"Webhook: the HMAC-SHA256 key its requests are signed with, at least 32 bytes; required"`
}

type channelCreateInput struct {
	Body struct {
		Name     string        `json:"name,omitempty" maxLength:"200" doc:"Required; 1-200 characters once trimmed"`
		Kind     string        `json:"kind,omitempty" enum:"email,slack,teams,webhook" doc:"Required"`
		TenantID sdk.TenantID  `json:"tenant_id,omitempty" doc:"The tenant whose events the channel hears; omitted for an installation channel, which only an admin may create"`
		Settings settingsInput `json:"settings,omitempty"`
		Secrets  secretsInput  `json:"secrets,omitempty"`
		Contacts bool          `json:"contacts,omitempty" doc:"An installation e-mail channel that also delivers to the contact addresses an event names (a budget threshold's); at most one channel has it"`
		Enabled  *bool         `json:"enabled,omitempty" doc:"Default true"`
	}
}

type channelUpdateInput struct {
	ChannelID string `path:"channel_id" format:"uuid"`
	Body      struct {
		Name     *string        `json:"name,omitempty" minLength:"1" maxLength:"200"`
		Enabled  *bool          `json:"enabled,omitempty"`
		Contacts *bool          `json:"contacts,omitempty"`
		Settings *settingsPatch `json:"settings,omitempty" doc:"Each given setting replaces the stored one"`
		Secrets  *secretsInput  `json:"secrets,omitempty" doc:"Each given secret replaces the stored one; those omitted are kept"`
	}
}

type channelPathInput struct {
	ChannelID string `path:"channel_id" format:"uuid"`
}

type channelListInput struct {
	TenantID sdk.TenantID `query:"tenant_id" doc:"Only the channels of this tenant"`
}

type subscriptionCreateInput struct {
	Body struct {
		ChannelID   string   `json:"channel_id" maxLength:"64" doc:"A channel the caller may see"`
		EventTypes  []string `json:"event_types,omitempty" maxItems:"100" doc:"Event types from /api/v1/notifications/event-types; omitted or empty for every type"`
		MinSeverity string   `json:"min_severity,omitempty" enum:"info,warning,error,critical" doc:"Default info: every severity"`
		Digest      string   `json:"digest,omitempty" enum:"none,hourly,daily" doc:"Default none: each event on its own; hourly and daily gather the period's events into one message"`
		TenantIDs   []string `json:"tenant_ids,omitempty" maxItems:"1000" doc:"Installation channels only: the tenants whose events are heard; omitted or empty for every tenant and the installation's own events"`
	}
}

type subscriptionUpdateInput struct {
	SubscriptionID string `path:"subscription_id" format:"uuid"`
	Body           struct {
		EventTypes  *[]string `json:"event_types,omitempty" maxItems:"100"`
		MinSeverity *string   `json:"min_severity,omitempty" enum:"info,warning,error,critical"`
		Digest      *string   `json:"digest,omitempty" enum:"none,hourly,daily"`
		TenantIDs   *[]string `json:"tenant_ids,omitempty" maxItems:"1000"`
	}
}

type subscriptionPathInput struct {
	SubscriptionID string `path:"subscription_id" format:"uuid"`
}

type subscriptionListInput struct {
	ChannelID string `query:"channel_id" maxLength:"64" doc:"Only the subscriptions of this channel"`
}

type eventListInput struct {
	Kind     string       `query:"kind" maxLength:"100" doc:"An event type"`
	Severity string       `query:"severity" enum:"info,warning,error,critical"`
	TenantID sdk.TenantID `query:"tenant_id"`
	Since    time.Time    `query:"since" format:"date-time" doc:"Events stored at or after it"`
	Limit    int          `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset   int          `query:"offset" minimum:"0" default:"0"`
}

type eventPathInput struct {
	EventID string `path:"event_id" format:"uuid"`
}

type deliveryListInput struct {
	Status    string `query:"status" enum:"pending,delivered,dead"`
	ChannelID string `query:"channel_id" maxLength:"64"`
	EventID   string `query:"event_id" maxLength:"64"`
	Limit     int    `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset    int    `query:"offset" minimum:"0" default:"0"`
}

type deliveryPathInput struct {
	DeliveryID int64 `path:"delivery_id" minimum:"1"`
}

type eventPage struct {
	Items  []Event `json:"items"`
	Total  int     `json:"total"`
	Limit  int     `json:"limit"`
	Offset int     `json:"offset"`
}

type deliveryPage struct {
	Items  []Delivery `json:"items"`
	Total  int        `json:"total"`
	Limit  int        `json:"limit"`
	Offset int        `json:"offset"`
}

// eventDetail is an event with its deliveries.
type eventDetail struct {
	Event
	Deliveries []Delivery `json:"deliveries" doc:"Its deliveries to the channels the caller may see, oldest first"`
}

// testSent is what a channel's test wrote to the outbox.
type testSent struct {
	Event    Event    `json:"event"`
	Delivery Delivery `json:"delivery"`
}

// Routes serve channels, subscriptions, events and the outbox.
type Routes struct {
	Store *Store
	Audit *audit.Recorder
}

// ScopeOf is what the principal may see.
func ScopeOf(p *api.Principal) Scope {
	return Scope{All: p.IsAdmin, TenantIDs: p.TenantIDs}
}

// routeError maps a store error to its answer.
func routeError(err error, what string) error {
	var ve *ValidationError
	var ce *ConflictError
	switch {
	case errors.As(err, &ve):
		return huma.Error422UnprocessableEntity("validation failed", &huma.ErrorDetail{Location: "body." + ve.Field, Message: ve.Reason, Value: ve.Value})
	case errors.As(err, &ce):
		return huma.Error409Conflict(ce.Reason)
	case errors.Is(err, ErrNotFound):
		return huma.Error404NotFound("no " + what + " with that id")
	case errors.Is(err, ErrForbidden):
		return huma.Error403Forbidden("only an admin manages the installation's channels; a standard user manages the channels of its own tenants")
	}
	return err
}

// channelDetails are what an audit entry records of a channel: never its
// secrets.
func channelDetails(c Channel) map[string]any {
	return map[string]any{"name": c.Name, "kind": c.Kind, "tenant_id": c.TenantID, "url_host": c.Settings.URLHost, "enabled": c.Enabled, "contacts": c.Contacts}
}

func (r Routes) record(ctx context.Context, action, resourceType, id string, tenantID *string, details map[string]any) {
	r.Audit.Record(ctx, audit.Entry{Action: action, Status: audit.StatusSuccess, ResourceType: resourceType, ResourceID: id, TenantID: tenantID, Details: details})
}

const scopeDoc = "An admin sees every channel; a standard user sees the channels of its tenants, and an installation channel, or one of another tenant, is a 404 to it."

// Register adds the notification operations to a.
func (r Routes) Register(a huma.API) {
	r.registerChannels(a)
	r.registerSubscriptions(a)
	r.registerOutbox(a)
}

func (r Routes) registerChannels(a huma.API) {
	tags := []string{"notifications"}
	api.Get(a, "/api/v1/notifications/event-types", sdk.Op{ID: "notifications-event-types", Tags: tags,
		Summary: "Event types a subscription may name", Description: "The host's own and those the plugins declare, by name."},
		func(ctx context.Context, _ *struct{}) (*[]EventType, error) {
			out := r.Store.EventTypes()
			return &out, nil
		})
	api.Get(a, "/api/v1/notifications/channels", sdk.Op{ID: "notifications-channels-list", Tags: tags,
		Summary: "Notification channels", Description: "A JSON array, the installation's channels first, then by tenant and name. " + scopeDoc + " No secret is ever shown: a webhook shows only its URL's host (settings.url_host)."},
		func(ctx context.Context, in *channelListInput) (*[]Channel, error) {
			out, err := r.Store.Channels(ctx, ScopeOf(api.PrincipalFrom(ctx)), string(in.TenantID))
			return &out, err
		})
	api.Get(a, "/api/v1/notifications/channels/{channel_id}", sdk.Op{ID: "notifications-channels-get", Tags: tags,
		Summary: "One notification channel", Description: scopeDoc, Errors: []int{http.StatusNotFound}},
		func(ctx context.Context, in *channelPathInput) (*Channel, error) {
			c, err := r.Store.Channel(ctx, ScopeOf(api.PrincipalFrom(ctx)), in.ChannelID)
			if err != nil {
				return nil, routeError(err, "channel")
			}
			return &c, nil
		})
	api.Post(a, "/api/v1/notifications/channels", sdk.Op{ID: "notifications-channels-create", Tags: tags, Summary: "Add a notification channel",
		Status: http.StatusCreated, Errors: []int{http.StatusConflict},
		Description: "An admin adds installation channels (no tenant_id) and tenants' channels; a standard user adds channels of its own tenants only, and is refused (403) an installation channel or another tenant's. " +
			"Each kind takes its own settings and secrets; a setting or secret the kind does not take, or a missing one, is a 422 naming it. " +
			"Secrets are sealed and never shown again. A second contacts channel is a 409. Nothing is delivered until a subscription says what the channel hears."},
		func(ctx context.Context, in *channelCreateInput) (*Channel, error) {
			p := api.PrincipalFrom(ctx)
			b := in.Body
			var tenant *string
			if b.TenantID != "" {
				id := string(b.TenantID)
				tenant = &id
			}
			c, err := r.Store.CreateChannel(ctx, ScopeOf(p), NewChannel{Name: b.Name, Kind: b.Kind, TenantID: tenant, Contacts: b.Contacts, Enabled: b.Enabled, CreatedBy: p.ActorID(),
				Settings: Settings{SMTPHost: b.Settings.SMTPHost, SMTPPort: b.Settings.SMTPPort, TLS: b.Settings.TLS, Username: b.Settings.Username, From: b.Settings.From, To: b.Settings.To},
				Secrets:  Secrets(b.Secrets)})
			if err != nil {
				return nil, routeError(err, "channel")
			}
			r.record(ctx, "notification_channel.create.success", "notification_channel", c.ID, c.TenantID, channelDetails(c))
			return &c, nil
		})
	api.Patch(a, "/api/v1/notifications/channels/{channel_id}", sdk.Op{ID: "notifications-channels-update", Tags: tags, Summary: "Change a notification channel",
		Errors:      []int{http.StatusNotFound, http.StatusConflict},
		Description: "Only the fields given change; the kind and the tenant do not. Each secret given replaces the stored one, and those omitted are kept. The channel as changed is checked as a create is, and nothing is written when it fails. " + scopeDoc},
		func(ctx context.Context, in *channelUpdateInput) (*Channel, error) {
			b := in.Body
			patch := ChannelPatch{Name: b.Name, Enabled: b.Enabled, Contacts: b.Contacts}
			if s := b.Settings; s != nil {
				patch.SMTPHost, patch.SMTPPort, patch.TLS, patch.Username, patch.From, patch.To = s.SMTPHost, s.SMTPPort, s.TLS, s.Username, s.From, s.To
			}
			if b.Secrets != nil {
				patch.Secrets = Secrets(*b.Secrets)
			}
			c, err := r.Store.UpdateChannel(ctx, ScopeOf(api.PrincipalFrom(ctx)), in.ChannelID, patch)
			if err != nil {
				return nil, routeError(err, "channel")
			}
			details := channelDetails(c)
			details["fields"] = patch.Fields()
			r.record(ctx, "notification_channel.update.success", "notification_channel", c.ID, c.TenantID, details)
			return &c, nil
		})
	api.Delete(a, "/api/v1/notifications/channels/{channel_id}", sdk.Op{ID: "notifications-channels-delete", Tags: tags, Summary: "Delete a notification channel",
		Errors: []int{http.StatusNotFound}, Description: "Its subscriptions and its deliveries, pending or not, go with it. " + scopeDoc},
		func(ctx context.Context, in *channelPathInput) (*sdk.Empty, error) {
			c, err := r.Store.DeleteChannel(ctx, ScopeOf(api.PrincipalFrom(ctx)), in.ChannelID)
			if err != nil {
				return nil, routeError(err, "channel")
			}
			r.record(ctx, "notification_channel.delete.success", "notification_channel", c.ID, c.TenantID, channelDetails(c))
			return nil, nil
		})
	api.Post(a, "/api/v1/notifications/channels/{channel_id}/test", sdk.Op{ID: "notifications-channels-test", Tags: tags, Summary: "Send a test notification",
		Status: http.StatusAccepted, Errors: []int{http.StatusNotFound, http.StatusConflict},
		Description: "Raises a notification.test event delivered to this channel alone, whatever its subscriptions, and answers with the event and its pending delivery; follow the delivery at /api/v1/notifications/deliveries?event_id=…. A disabled channel is a 409. " + scopeDoc},
		func(ctx context.Context, in *channelPathInput) (*testSent, error) {
			p := api.PrincipalFrom(ctx)
			actor := p.Email
			if actor == "" {
				actor = p.ActorID()
			}
			e, d, err := r.Store.TestChannel(ctx, ScopeOf(p), in.ChannelID, actor)
			if err != nil {
				return nil, routeError(err, "channel")
			}
			r.record(ctx, "notification_channel.test.success", "notification_channel", in.ChannelID, e.TenantID, map[string]any{"event_id": e.ID, "delivery_id": d.ID})
			return &testSent{Event: e, Delivery: d}, nil
		})
}

func (r Routes) registerSubscriptions(a huma.API) {
	tags := []string{"notifications"}
	const doc = "A subscription is visible to whoever sees its channel; one of a channel the caller does not see is a 404 to it."
	api.Get(a, "/api/v1/notifications/subscriptions", sdk.Op{ID: "notifications-subscriptions-list", Tags: tags,
		Summary: "Subscriptions of notification channels", Description: "A JSON array, by channel and age. " + doc},
		func(ctx context.Context, in *subscriptionListInput) (*[]Subscription, error) {
			out, err := r.Store.Subscriptions(ctx, ScopeOf(api.PrincipalFrom(ctx)), in.ChannelID)
			return &out, err
		})
	api.Get(a, "/api/v1/notifications/subscriptions/{subscription_id}", sdk.Op{ID: "notifications-subscriptions-get", Tags: tags,
		Summary: "One subscription", Description: doc, Errors: []int{http.StatusNotFound}},
		func(ctx context.Context, in *subscriptionPathInput) (*Subscription, error) {
			sub, err := r.Store.Subscription(ctx, ScopeOf(api.PrincipalFrom(ctx)), in.SubscriptionID)
			if err != nil {
				return nil, routeError(err, "subscription")
			}
			return &sub, nil
		})
	api.Post(a, "/api/v1/notifications/subscriptions", sdk.Op{ID: "notifications-subscriptions-create", Tags: tags,
		Summary: "Subscribe a channel to events", Status: http.StatusCreated,
		Description: "The channel hears the events of the types named (every type when none is) of at least min_severity: a tenant's channel its tenant's events, an installation channel every event, or those of tenant_ids. " +
			"A channel the caller does not see is a 422 naming channel_id, as an unknown one is; an unknown event type or tenant is a 422 naming it."},
		func(ctx context.Context, in *subscriptionCreateInput) (*Subscription, error) {
			p := api.PrincipalFrom(ctx)
			b := in.Body
			sub, err := r.Store.CreateSubscription(ctx, ScopeOf(p), NewSubscription{ChannelID: b.ChannelID, EventTypes: b.EventTypes,
				MinSeverity: b.MinSeverity, Digest: b.Digest, TenantIDs: b.TenantIDs, CreatedBy: p.ActorID()})
			if err != nil {
				return nil, routeError(err, "subscription")
			}
			c, err := r.Store.Channel(ctx, ScopeOf(p), sub.ChannelID)
			if err != nil {
				return nil, err
			}
			r.record(ctx, "notification_subscription.create.success", "notification_subscription", sub.ID, c.TenantID, subscriptionDetails(sub))
			return &sub, nil
		})
	api.Patch(a, "/api/v1/notifications/subscriptions/{subscription_id}", sdk.Op{ID: "notifications-subscriptions-update", Tags: tags,
		Summary: "Change a subscription", Errors: []int{http.StatusNotFound},
		Description: "Only the fields given change; the channel does not. Checked as a create is; nothing is written when the check fails. " + doc},
		func(ctx context.Context, in *subscriptionUpdateInput) (*Subscription, error) {
			p := api.PrincipalFrom(ctx)
			patch := SubscriptionPatch{EventTypes: in.Body.EventTypes, MinSeverity: in.Body.MinSeverity, Digest: in.Body.Digest, TenantIDs: in.Body.TenantIDs}
			sub, err := r.Store.UpdateSubscription(ctx, ScopeOf(p), in.SubscriptionID, patch)
			if err != nil {
				return nil, routeError(err, "subscription")
			}
			c, err := r.Store.Channel(ctx, ScopeOf(p), sub.ChannelID)
			if err != nil {
				return nil, err
			}
			details := subscriptionDetails(sub)
			details["fields"] = patch.Fields()
			r.record(ctx, "notification_subscription.update.success", "notification_subscription", sub.ID, c.TenantID, details)
			return &sub, nil
		})
	api.Delete(a, "/api/v1/notifications/subscriptions/{subscription_id}", sdk.Op{ID: "notifications-subscriptions-delete", Tags: tags,
		Summary: "Delete a subscription", Errors: []int{http.StatusNotFound},
		Description: "The channel hears nothing more of it; deliveries already in the outbox stay. " + doc},
		func(ctx context.Context, in *subscriptionPathInput) (*sdk.Empty, error) {
			sub, c, err := r.Store.DeleteSubscription(ctx, ScopeOf(api.PrincipalFrom(ctx)), in.SubscriptionID)
			if err != nil {
				return nil, routeError(err, "subscription")
			}
			r.record(ctx, "notification_subscription.delete.success", "notification_subscription", sub.ID, c.TenantID, subscriptionDetails(sub))
			return nil, nil
		})
}

// subscriptionDetails are what an audit entry records of a subscription.
func subscriptionDetails(sub Subscription) map[string]any {
	return map[string]any{"channel_id": sub.ChannelID, "event_types": sub.EventTypes, "min_severity": sub.MinSeverity, "digest": sub.Digest, "tenant_ids": sub.TenantIDs}
}

func (r Routes) registerOutbox(a huma.API) {
	tags := []string{"notifications"}
	api.Get(a, "/api/v1/notifications/events", sdk.Op{ID: "notifications-events-list", Tags: tags, Summary: "Notification events, newest first",
		Description: "An admin sees every event; a standard user sees its tenants' events, not the installation's."},
		func(ctx context.Context, in *eventListInput) (*eventPage, error) {
			items, total, err := r.Store.Events(ctx, ScopeOf(api.PrincipalFrom(ctx)), EventFilter{Kind: in.Kind, Severity: in.Severity,
				TenantID: string(in.TenantID), Since: in.Since, Limit: in.Limit, Offset: in.Offset})
			if err != nil {
				return nil, err
			}
			return &eventPage{Items: items, Total: total, Limit: in.Limit, Offset: in.Offset}, nil
		})
	api.Get(a, "/api/v1/notifications/events/{event_id}", sdk.Op{ID: "notifications-events-get", Tags: tags, Summary: "One event with its deliveries",
		Errors: []int{http.StatusNotFound}, Description: "An event the caller may not see is a 404; its deliveries are those to the channels the caller sees."},
		func(ctx context.Context, in *eventPathInput) (*eventDetail, error) {
			e, ds, err := r.Store.Event(ctx, ScopeOf(api.PrincipalFrom(ctx)), in.EventID)
			if err != nil {
				return nil, routeError(err, "event")
			}
			return &eventDetail{Event: e, Deliveries: ds}, nil
		})
	api.Get(a, "/api/v1/notifications/deliveries", sdk.Op{ID: "notifications-deliveries-list", Tags: tags, Summary: "The outbox, newest first",
		Description: "Deliveries to the channels the caller sees: pending (waiting for their next attempt), delivered, or dead (out of attempts, until retried)."},
		func(ctx context.Context, in *deliveryListInput) (*deliveryPage, error) {
			items, total, err := r.Store.Deliveries(ctx, ScopeOf(api.PrincipalFrom(ctx)), DeliveryFilter{Status: in.Status, ChannelID: in.ChannelID,
				EventID: in.EventID, Limit: in.Limit, Offset: in.Offset})
			if err != nil {
				return nil, err
			}
			return &deliveryPage{Items: items, Total: total, Limit: in.Limit, Offset: in.Offset}, nil
		})
	api.Post(a, "/api/v1/notifications/deliveries/{delivery_id}/retry", sdk.Op{ID: "notifications-deliveries-retry", Tags: tags, Summary: "Retry a dead delivery",
		Errors:      []int{http.StatusNotFound, http.StatusConflict},
		Description: "Puts a dead delivery back in the outbox, pending with its attempts counted from 0, due now. A delivery that is not dead is a 409; one to a channel the caller does not see a 404."},
		func(ctx context.Context, in *deliveryPathInput) (*Delivery, error) {
			sc := ScopeOf(api.PrincipalFrom(ctx))
			d, err := r.Store.RetryDelivery(ctx, sc, in.DeliveryID)
			if err != nil {
				return nil, routeError(err, "delivery")
			}
			c, err := r.Store.Channel(ctx, sc, d.ChannelID)
			if err != nil {
				return nil, err
			}
			r.record(ctx, "notification_delivery.retry.success", "notification_delivery", fmt.Sprint(d.ID), c.TenantID, map[string]any{"event_id": d.EventID, "channel_id": d.ChannelID})
			return &d, nil
		})
}
