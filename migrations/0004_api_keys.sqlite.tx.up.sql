-- API keys for scripts and integrations. Only a SHA-256 of the secret is
-- kept, so a leaked database does not leak working keys. tenant_ids is a
-- JSON list of tenant ids without a foreign key: a key outlives a deleted
-- tenant, and authentication drops the ids that no longer name an active
-- tenant. Kept in step with 0004_api_keys.postgres.tx.up.sql.
CREATE TABLE api_keys (
    id           TEXT NOT NULL PRIMARY KEY,
    name         TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'standard')),
    tenant_ids   TEXT NOT NULL DEFAULT '[]',
    secret_hash  TEXT NOT NULL,
    created_by   TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    expires_at   TIMESTAMP,
    last_used_at TIMESTAMP,
    revoked_at   TIMESTAMP
);
