-- Outbound notifications: where to send (channels), what to send there
-- (subscriptions), what happened (events, each once per kind and dedupe
-- key) and the durable outbox of deliveries the host works through.
-- Kept in step with 0012_notifications.postgres.tx.up.sql.

-- A channel with no tenant is the installation's, managed by admins; one
-- with a tenant is that tenant's. settings are the channel's non-secret
-- settings as JSON; secret is its secret settings (an SMTP password, a
-- webhook's URL and signing secret) sealed with AES-256-GCM, never
-- returned by the API.
CREATE TABLE notification_channels (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('email', 'slack', 'teams', 'webhook')),
    tenant_id  TEXT REFERENCES tenants (id) ON DELETE CASCADE,
    settings   TEXT NOT NULL DEFAULT '{}',
    secret     BLOB,
    contacts   BOOLEAN NOT NULL DEFAULT FALSE,
    enabled    BOOLEAN NOT NULL DEFAULT TRUE,
    created_by TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);

--bun:split

CREATE INDEX notification_channels_tenant_id_idx ON notification_channels (tenant_id);

--bun:split

-- event_types and tenant_ids are JSON lists; an empty list matches every
-- event type, or every tenant.
CREATE TABLE notification_subscriptions (
    id           TEXT PRIMARY KEY,
    channel_id   TEXT NOT NULL REFERENCES notification_channels (id) ON DELETE CASCADE,
    event_types  TEXT NOT NULL DEFAULT '[]',
    min_severity TEXT NOT NULL CHECK (min_severity IN ('info', 'warning', 'error', 'critical')),
    tenant_ids   TEXT NOT NULL DEFAULT '[]',
    digest       TEXT NOT NULL DEFAULT 'none' CHECK (digest IN ('none', 'hourly', 'daily')),
    created_by   TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL
);

--bun:split

CREATE INDEX notification_subscriptions_channel_id_idx ON notification_subscriptions (channel_id);

--bun:split

-- An event is stored once per (kind, dedupe_key): raising it again, from a
-- retried sync or another replica, changes nothing.
CREATE TABLE notification_events (
    id          TEXT PRIMARY KEY,
    source      TEXT NOT NULL,
    kind        TEXT NOT NULL,
    severity    TEXT NOT NULL,
    tenant_id   TEXT REFERENCES tenants (id) ON DELETE CASCADE,
    title       TEXT NOT NULL,
    message     TEXT NOT NULL DEFAULT '',
    link        TEXT NOT NULL DEFAULT '',
    details     TEXT NOT NULL DEFAULT '{}',
    recipients  TEXT NOT NULL DEFAULT '[]',
    dedupe_key  TEXT NOT NULL,
    occurred_at TIMESTAMP NOT NULL,
    created_at  TIMESTAMP NOT NULL
);

--bun:split

CREATE UNIQUE INDEX notification_events_kind_dedupe_key_idx ON notification_events (kind, dedupe_key);

--bun:split

CREATE INDEX notification_events_tenant_id_created_at_idx ON notification_events (tenant_id, created_at);

--bun:split

CREATE INDEX notification_events_created_at_idx ON notification_events (created_at);

--bun:split

-- The outbox: one delivery of an event to a channel (and, for a contacts
-- channel, to one of the event's recipients). A replica claims a due
-- delivery by setting claimed_until; a delivery that fails waits for
-- next_attempt_at, and after the last attempt is dead until retried.
CREATE TABLE notification_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id        TEXT NOT NULL REFERENCES notification_events (id) ON DELETE CASCADE,
    channel_id      TEXT NOT NULL REFERENCES notification_channels (id) ON DELETE CASCADE,
    recipient       TEXT NOT NULL DEFAULT '',
    digest          TEXT NOT NULL DEFAULT 'none' CHECK (digest IN ('none', 'hourly', 'daily')),
    status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMP NOT NULL,
    claimed_until   TIMESTAMP,
    last_error      TEXT NOT NULL DEFAULT '',
    delivered_at    TIMESTAMP,
    created_at      TIMESTAMP NOT NULL
);

--bun:split

CREATE UNIQUE INDEX notification_deliveries_event_channel_recipient_idx ON notification_deliveries (event_id, channel_id, recipient);

--bun:split

CREATE INDEX notification_deliveries_due_idx ON notification_deliveries (status, next_attempt_at);

--bun:split

CREATE INDEX notification_deliveries_channel_id_idx ON notification_deliveries (channel_id, created_at);
