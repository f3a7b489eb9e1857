-- Steward's own exemptions of compliance findings: each is one tenant's,
-- of one scope (finding: resource_id and policy_definition_id; resource:
-- resource_id; policy: policy_definition_id; control: framework_id and
-- control_id), the other columns empty. ARM ids are stored lower case, as
-- ARM compares them. An exemption is active until expires_at; the expiry
-- job sets lapse_recorded_at once it has recorded the lapse in the audit
-- log. DELETE removes the row.
CREATE TABLE compliance_exemptions (
    id                   INTEGER   PRIMARY KEY AUTOINCREMENT,
    tenant_id            TEXT      NOT NULL,
    scope                TEXT      NOT NULL,
    resource_id          TEXT      NOT NULL,
    policy_definition_id TEXT      NOT NULL,
    framework_id         TEXT      NOT NULL,
    control_id           TEXT      NOT NULL,
    reason               TEXT      NOT NULL,
    owner                TEXT      NOT NULL,
    expires_at           TIMESTAMP NOT NULL,
    created_by           TEXT      NOT NULL,
    created_at           TIMESTAMP NOT NULL,
    updated_at           TIMESTAMP NOT NULL,
    lapse_recorded_at    TIMESTAMP
);
--bun:split
CREATE INDEX compliance_exemptions_tenant ON compliance_exemptions (tenant_id, expires_at);
--bun:split
CREATE INDEX compliance_exemptions_lapse ON compliance_exemptions (expires_at) WHERE lapse_recorded_at IS NULL;
--bun:split

-- A counter per tenant that each change of its exemptions raises in the
-- same transaction, for the framework coverage's cache; a create also
-- takes the tenant's row first, so two creates of one tenant are
-- serialised and a duplicate is seen.
CREATE TABLE compliance_exemption_revisions (
    tenant_id TEXT   NOT NULL PRIMARY KEY,
    revision  BIGINT NOT NULL
);
