-- Timestamps default to the text format bun writes (UTC, "+00:00" offset),
-- so rows written by the database and by the application compare and sort
-- alike. Text primary keys need an explicit NOT NULL on SQLite.
CREATE TABLE tenants (
    id                  TEXT NOT NULL PRIMARY KEY,
    name                TEXT NOT NULL,
    description         TEXT NOT NULL DEFAULT '',
    directory_tenant_id TEXT NOT NULL UNIQUE,
    subscription_id     TEXT NOT NULL DEFAULT '',
    use_delegation      BOOLEAN NOT NULL DEFAULT FALSE,
    billing_account_id  TEXT,
    access_groups       TEXT NOT NULL DEFAULT '[]',
    is_active           BOOLEAN NOT NULL DEFAULT TRUE,
    created_at          TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    updated_at          TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now'))
);

--bun:split

CREATE TABLE users (
    id            TEXT NOT NULL PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL DEFAULT '',
    is_admin      BOOLEAN NOT NULL DEFAULT FALSE,
    roles         TEXT NOT NULL DEFAULT '[]',
    "groups"      TEXT NOT NULL DEFAULT '[]',
    created_at    TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    last_login_at TIMESTAMP
);

--bun:split

CREATE TABLE tenant_members (
    tenant_id  TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    PRIMARY KEY (tenant_id, user_id)
);

--bun:split

-- The primary key serves lookups by tenant; this one serves "tenants of a user".
CREATE INDEX tenant_members_user_id_idx ON tenant_members (user_id);

--bun:split

-- AUTOINCREMENT keeps ids from being reused after pruning, so ids stay in
-- insertion order for the life of the log. tenant_id deliberately has no
-- foreign key: the audit trail must outlive the tenants it mentions.
CREATE TABLE audit_logs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    "timestamp"   TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    actor_id      TEXT NOT NULL DEFAULT '',
    actor_email   TEXT NOT NULL DEFAULT '',
    action        TEXT NOT NULL,
    category      TEXT NOT NULL,
    status        TEXT NOT NULL,
    tenant_id     TEXT,
    resource_type TEXT NOT NULL DEFAULT '',
    resource_id   TEXT NOT NULL DEFAULT '',
    client_addr   TEXT NOT NULL DEFAULT '',
    request_id    TEXT NOT NULL DEFAULT '',
    details       TEXT NOT NULL DEFAULT '{}'
);

--bun:split

CREATE INDEX audit_logs_timestamp_idx ON audit_logs ("timestamp");

--bun:split

CREATE INDEX audit_logs_actor_id_timestamp_idx ON audit_logs (actor_id, "timestamp");

--bun:split

CREATE INDEX audit_logs_tenant_id_timestamp_idx ON audit_logs (tenant_id, "timestamp");

--bun:split

CREATE INDEX audit_logs_action_idx ON audit_logs (action);
