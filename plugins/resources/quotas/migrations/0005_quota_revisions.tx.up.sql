-- A counter per tenant that each change of its quota usages (a
-- subscription's usages of a region and provider replaced) raises in the
-- same transaction, so that a reader can tell whether what it read from
-- the tenants' usages is still current without reading them again.
CREATE TABLE resources_quota_revisions (
    tenant_id TEXT   NOT NULL PRIMARY KEY,
    revision  BIGINT NOT NULL
);
