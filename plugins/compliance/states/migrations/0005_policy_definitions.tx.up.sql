-- The policy definitions the tenants' states name, as the compliance sync
-- last read them from Microsoft.Authorization: the display name,
-- description and category, and the remediation guidance of the
-- definition's metadata (securityCenter.RemediationDescription; empty
-- when it has none). An id is one definition in every tenant (a custom
-- one's id holds its subscription), so rows are keyed by it alone and
-- upserted by each sync that reads them; the findings read a row only
-- through a tenant's own states.
CREATE TABLE compliance_policy_definitions (
    policy_definition_id TEXT   NOT NULL PRIMARY KEY,
    display_name         TEXT   NOT NULL,
    description          TEXT   NOT NULL,
    category             TEXT   NOT NULL,
    remediation          TEXT   NOT NULL,
    synced_unix          BIGINT NOT NULL
);
