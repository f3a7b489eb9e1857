-- A counter per tenant that each change of its assessments (a day's
-- snapshot and results stored, or replaced by a later run of the day)
-- raises in the same transaction, so that a reader can tell whether what
-- it read of the tenant's assessments is still current without reading
-- them again.
CREATE TABLE partner_tenant_revisions (
    tenant_id TEXT   NOT NULL PRIMARY KEY,
    revision  BIGINT NOT NULL
);
