-- The revision of each tenant's freshness (data_freshness and
-- data_sync_failures), raised in the transaction of every write to either,
-- so that their reads can be kept until it changes (core/revcache).
CREATE TABLE data_freshness_revisions (
    tenant_id TEXT PRIMARY KEY,
    revision BIGINT NOT NULL
);
