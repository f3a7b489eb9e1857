-- The latest failed sync of each data domain per tenant, with the reason
-- the plugin gave; it counts while it is later than the domain's last
-- success in data_freshness.
CREATE TABLE data_sync_failures (
    tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    domain    TEXT NOT NULL,
    failed_at TIMESTAMP NOT NULL,
    reason    TEXT NOT NULL,
    PRIMARY KEY (tenant_id, domain)
);
