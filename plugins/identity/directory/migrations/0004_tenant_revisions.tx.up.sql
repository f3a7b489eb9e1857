-- The same on both databases. A counter per tenant that each sync of its
-- directory raises in the transaction that replaces it, so that a reader
-- can tell whether what it read of the tenants' directories (their latest
-- snapshots, the trend, the stale accounts, the lists) is still current
-- without reading them again.
CREATE TABLE identity_tenant_revisions (
    tenant_id TEXT   NOT NULL PRIMARY KEY,
    revision  BIGINT NOT NULL
);
