-- API keys for scripts and integrations; see 0004_api_keys.sqlite.tx.up.sql
-- for why the table looks as it does. Only the column types differ.
CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'standard')),
    tenant_ids   TEXT NOT NULL DEFAULT '[]',
    secret_hash  TEXT NOT NULL,
    created_by   TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at   TIMESTAMPTZ,
    last_used_at TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ
);
