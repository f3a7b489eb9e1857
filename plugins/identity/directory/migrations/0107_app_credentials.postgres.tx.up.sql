-- Each tenant's applications' and service principals' client secrets and
-- certificates as its latest sync read them; and, on the daily snapshot,
-- how many had ended at the sync and how many ended within 30 days of it.
-- Snapshots taken before this migration did not count them and keep NULL.
CREATE TABLE identity_app_credentials (
    tenant_id       TEXT NOT NULL,
    object_id       TEXT NOT NULL,
    key_id          TEXT NOT NULL,
    object_kind     TEXT NOT NULL,
    app_id          TEXT NOT NULL DEFAULT '',
    app_name        TEXT NOT NULL DEFAULT '',
    credential_type TEXT NOT NULL,
    credential_name TEXT NOT NULL DEFAULT '',
    starts_at       TIMESTAMPTZ,
    ends_at         TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, object_id, key_id)
);
--bun:split
CREATE INDEX identity_app_credentials_end ON identity_app_credentials (tenant_id, ends_at);
--bun:split
ALTER TABLE identity_snapshots ADD COLUMN expired_credentials INTEGER;
--bun:split
ALTER TABLE identity_snapshots ADD COLUMN expiring_credentials INTEGER;
