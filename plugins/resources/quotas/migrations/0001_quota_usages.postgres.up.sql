CREATE TABLE resources_quota_usages (
    tenant_id       TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    location        TEXT NOT NULL,
    provider        TEXT NOT NULL,
    name            TEXT NOT NULL,
    localized_name  TEXT NOT NULL DEFAULT '',
    current_value   DOUBLE PRECISION NOT NULL,
    limit_value     DOUBLE PRECISION NOT NULL,
    unit            TEXT NOT NULL DEFAULT '',
    synced_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (subscription_id, location, provider, name)
);
--bun:split
CREATE INDEX resources_quota_usages_tenant ON resources_quota_usages (tenant_id, location, provider);
