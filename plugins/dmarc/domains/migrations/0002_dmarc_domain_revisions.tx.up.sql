-- A counter per tenant that each change of its domains, their checks,
-- findings, history or weakenings raises in the same transaction, so that
-- a reader can tell whether the posture figures it read of the tenants are
-- still current without counting them again.
CREATE TABLE dmarc_domain_revisions (
    tenant_id TEXT   NOT NULL PRIMARY KEY,
    revision  BIGINT NOT NULL
);
