-- A counter per tenant that each change of its resources, their tags or
-- its lifecycle events (a subscription synced) raises in the same
-- transaction, so that a reader can tell whether what it read from the
-- tenants' inventory is still current without reading it again.
CREATE TABLE resources_inventory_revisions (
    tenant_id TEXT   NOT NULL PRIMARY KEY,
    revision  BIGINT NOT NULL
);
