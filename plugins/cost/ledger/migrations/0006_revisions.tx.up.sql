-- The same on both databases.

-- A counter per tenant that every change of its rollups or running totals
-- (a sync's rollup of the days it wrote) raises in the same transaction,
-- so that a reader can tell whether what it read from the tenant's costs
-- is still current without reading them again (core/revcache). A tenant
-- without a row has not been rolled up since the table was added.
CREATE TABLE cost_tenant_revisions (
    tenant_id TEXT   NOT NULL PRIMARY KEY,
    revision  BIGINT NOT NULL
);
