// Package notifications tells people what happened: a budget crossed, an
// anomaly found, a compliance regression, a domain's mail weakened, a sync
// that failed.
//
// Something that happened is an [Event]. A plugin raises one through the
// SDK (the host's RaiseEvent), the host raises its own (sync.failed), and
// [Store.Raise] keeps it once per kind and dedupe key, so an event raised
// again (a retried sync, a second replica) is not sent again. In the same
// transaction Raise writes a [Delivery] for each channel whose
// subscriptions match the event: the outbox, which the host's delivery
// worker works through, at least once, with retries and a dead letter.
//
// A [Channel] is where to send: e-mail over SMTP, a Slack or Microsoft
// Teams incoming webhook, or a generic webhook signed with HMAC-SHA256.
// A channel without a tenant is the installation's and only admins manage
// it; a tenant's channel hears only its tenant's events. A channel's
// secrets (an SMTP password, a webhook's URL and signing secret) are
// sealed in the database and never returned. A [Subscription] says which
// event types of which severity a channel hears, optionally as an hourly
// or daily digest.
package notifications

import (
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/sdk/protocol"
)

// Channel kinds.
const (
	KindEmail   = "email"
	KindSlack   = "slack"
	KindTeams   = "teams"
	KindWebhook = "webhook"
)

// ChannelKinds are the kinds a channel may have.
var ChannelKinds = []string{KindEmail, KindSlack, KindTeams, KindWebhook}

// Severities an event may have, mildest first; a subscription hears its
// minimum severity and every one after it.
var Severities = protocol.EventSeverities

// Digest periods of a subscription: none delivers each event on its own.
const (
	DigestNone   = "none"
	DigestHourly = "hourly"
	DigestDaily  = "daily"
)

// Digests are the digest periods a subscription may have.
var Digests = []string{DigestNone, DigestHourly, DigestDaily}

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusDead      = "dead"
)

// Host event kinds: the events the host raises itself.
const (
	// EventSyncFailed is a tenant's sync of a data domain that failed; it
	// is raised once per run of failures, until the domain syncs again.
	EventSyncFailed = "sync.failed"
	// EventNotificationTest is a test of one channel, asked for through
	// the API; it is delivered to that channel alone.
	EventNotificationTest = "notification.test"
)

// Settings are a channel's settings that are not secret; which apply
// depends on the channel's kind.
type Settings struct {
	// SMTPHost and SMTPPort are the e-mail channel's server.
	SMTPHost string `json:"smtp_host,omitempty"`
	SMTPPort int    `json:"smtp_port,omitempty"`
	// TLS is how the e-mail channel protects the connection: starttls
	// (the default, required), tls (implicit TLS, usually port 465) or
	// none (only for a relay on a trusted network).
	TLS string `json:"tls,omitempty"`
	// Username, with the secret password, authenticates to the server;
	// none sends without authentication.
	Username string   `json:"username,omitempty"`
	From     string   `json:"from,omitempty"`
	To       []string `json:"to,omitempty"`
	// URLHost is the host of a webhook's URL, shown in place of the URL,
	// which is secret.
	URLHost string `json:"url_host,omitempty"`
}

// Secrets are a channel's secret settings, sealed at rest and never
// returned.
type Secrets struct {
	// Password is the e-mail channel's SMTP password.
	Password string `json:"password,omitempty"`
	// URL is the webhook's URL (Slack's and Teams' carry their token).
	URL string `json:"url,omitempty"`
	// SigningSecret signs a generic webhook's requests.
	SigningSecret string `json:"signing_secret,omitempty"`
}

// Channel is where notifications go.
type Channel struct {
	bun.BaseModel `bun:"table:notification_channels,alias:nc" json:"-"`

	ID       string   `bun:"id,pk" json:"channel_id"`
	Name     string   `bun:"name,notnull" json:"name"`
	Kind     string   `bun:"kind,notnull" json:"kind"`
	TenantID *string  `bun:"tenant_id" json:"tenant_id" doc:"The tenant whose events the channel hears; null for the installation's channel"`
	Settings Settings `bun:"settings,type:json,notnull" json:"settings"`
	// Secret is Secrets sealed; it never leaves the store.
	Secret    []byte    `bun:"secret" json:"-"`
	Contacts  bool      `bun:"contacts,notnull" json:"contacts" doc:"An installation e-mail channel that also delivers to the addresses an event names, such as a budget threshold's contact e-mails"`
	Enabled   bool      `bun:"enabled,notnull" json:"enabled"`
	CreatedBy string    `bun:"created_by,notnull" json:"created_by"`
	CreatedAt time.Time `bun:"created_at,notnull" json:"created_at"`
	UpdatedAt time.Time `bun:"updated_at,notnull" json:"updated_at"`
}

// Subscription is what a channel hears.
type Subscription struct {
	bun.BaseModel `bun:"table:notification_subscriptions,alias:ns" json:"-"`

	ID          string    `bun:"id,pk" json:"subscription_id"`
	ChannelID   string    `bun:"channel_id,notnull" json:"channel_id"`
	EventTypes  []string  `bun:"event_types,type:json,notnull" json:"event_types" doc:"Event types heard; empty for every type"`
	MinSeverity string    `bun:"min_severity,notnull" json:"min_severity"`
	TenantIDs   []string  `bun:"tenant_ids,type:json,notnull" json:"tenant_ids" doc:"For an installation channel, the tenants whose events are heard; empty for every tenant and the installation's own events"`
	Digest      string    `bun:"digest,notnull" json:"digest"`
	CreatedBy   string    `bun:"created_by,notnull" json:"created_by"`
	CreatedAt   time.Time `bun:"created_at,notnull" json:"created_at"`
	UpdatedAt   time.Time `bun:"updated_at,notnull" json:"updated_at"`
}

// Event is something that happened that subscribers are told of.
type Event struct {
	bun.BaseModel `bun:"table:notification_events,alias:ne" json:"-"`

	ID string `bun:"id,pk" json:"event_id"`
	// Source is the plugin that raised the event, or "host".
	Source   string  `bun:"source,notnull" json:"source"`
	Kind     string  `bun:"kind,notnull" json:"kind"`
	Severity string  `bun:"severity,notnull" json:"severity"`
	TenantID *string `bun:"tenant_id" json:"tenant_id"`
	Title    string  `bun:"title,notnull" json:"title"`
	Message  string  `bun:"message,notnull" json:"message"`
	// Link is the path in Steward that shows what happened.
	Link    string         `bun:"link,notnull" json:"link"`
	Details map[string]any `bun:"details,type:json,notnull" json:"details"`
	// Recipients are e-mail addresses the event names (a budget
	// threshold's contacts); the installation's contacts channel delivers
	// to each.
	Recipients []string `bun:"recipients,type:json,notnull" json:"recipients"`
	// DedupeKey makes the event once: a second event of the kind with the
	// key is the first.
	DedupeKey  string    `bun:"dedupe_key,notnull" json:"dedupe_key"`
	OccurredAt time.Time `bun:"occurred_at,notnull" json:"occurred_at"`
	CreatedAt  time.Time `bun:"created_at,notnull" json:"created_at"`
}

// Delivery is one event's delivery to one channel: a row of the outbox.
type Delivery struct {
	bun.BaseModel `bun:"table:notification_deliveries,alias:nd" json:"-"`

	ID        int64  `bun:"id,pk,autoincrement" json:"delivery_id"`
	EventID   string `bun:"event_id,notnull" json:"event_id"`
	ChannelID string `bun:"channel_id,notnull" json:"channel_id"`
	// Recipient is the address a contacts channel delivers to; empty for
	// the channel's own destination.
	Recipient     string     `bun:"recipient,notnull" json:"recipient"`
	Digest        string     `bun:"digest,notnull" json:"digest"`
	Status        string     `bun:"status,notnull" json:"status"`
	Attempts      int        `bun:"attempts,notnull" json:"attempts"`
	NextAttemptAt time.Time  `bun:"next_attempt_at,notnull" json:"next_attempt_at"`
	ClaimedUntil  *time.Time `bun:"claimed_until" json:"-"`
	LastError     string     `bun:"last_error,notnull" json:"last_error"`
	DeliveredAt   *time.Time `bun:"delivered_at" json:"delivered_at"`
	CreatedAt     time.Time  `bun:"created_at,notnull" json:"created_at"`
}

// EventType is a kind of event a subscription can name.
type EventType struct {
	Name string `json:"name"`
	// Source is the plugin that raises the events, or "host".
	Source      string `json:"source"`
	Description string `json:"description"`
}

// HostEventTypes are the events the host raises itself.
var HostEventTypes = []EventType{
	{Name: EventSyncFailed, Source: "host", Description: "A tenant's sync of a data domain failed; raised once until the domain syncs again."},
	{Name: EventNotificationTest, Source: "host", Description: "A test of one channel, asked for through the API or the Notifications page; delivered to that channel alone."},
}
