-- Defender for Cloud's assessments of each subscription's resources, as
-- the defender sync last read them; a subscription's rows are replaced
-- whole by each sync of it. status is Healthy, Unhealthy or NotApplicable;
-- severity is High, Medium or Low, severity_rank 3, 2 or 1 (0 when the
-- assessment names none); policy_definition_id is the policy the
-- recommendation is built on, or empty.
CREATE TABLE compliance_defender_assessments (
    tenant_id            TEXT        NOT NULL,
    subscription_id      TEXT        NOT NULL,
    assessment_id        TEXT        NOT NULL,
    assessment_name      TEXT        NOT NULL,
    resource_id          TEXT        NOT NULL,
    resource_type        TEXT        NOT NULL,
    display_name         TEXT        NOT NULL,
    status               TEXT        NOT NULL,
    severity             TEXT        NOT NULL,
    severity_rank        SMALLINT    NOT NULL,
    policy_definition_id TEXT        NOT NULL,
    remediation          TEXT        NOT NULL,
    category             TEXT        NOT NULL,
    synced_at            TIMESTAMP NOT NULL
);
--bun:split
CREATE INDEX compliance_defender_assessments_subscription ON compliance_defender_assessments (subscription_id);
--bun:split
CREATE INDEX compliance_defender_assessments_tenant ON compliance_defender_assessments (tenant_id, severity_rank);
--bun:split

-- Each subscription's secure score at its last defender sync: the score
-- and its maximum, and the percentage Azure gives (a fraction, 0 to 1).
CREATE TABLE compliance_defender_scores (
    subscription_id TEXT             NOT NULL PRIMARY KEY,
    tenant_id       TEXT             NOT NULL,
    current_score   REAL NOT NULL,
    max_score       BIGINT           NOT NULL,
    percentage      REAL NOT NULL,
    synced_at       TIMESTAMP      NOT NULL
);
--bun:split
CREATE INDEX compliance_defender_scores_tenant ON compliance_defender_scores (tenant_id);
--bun:split

-- Each subscription's secure score by security control, replaced with the
-- score.
CREATE TABLE compliance_defender_controls (
    tenant_id              TEXT             NOT NULL,
    subscription_id        TEXT             NOT NULL,
    control_name           TEXT             NOT NULL,
    display_name           TEXT             NOT NULL,
    current_score          REAL NOT NULL,
    max_score              BIGINT           NOT NULL,
    healthy_resources      BIGINT           NOT NULL,
    unhealthy_resources    BIGINT           NOT NULL,
    not_applicable_resources BIGINT         NOT NULL,
    synced_at              TIMESTAMP      NOT NULL,
    PRIMARY KEY (subscription_id, control_name)
);
--bun:split

-- A counter per tenant that each change of its stored assessments raises
-- in the same transaction, for the framework coverage's cache.
CREATE TABLE compliance_defender_revisions (
    tenant_id TEXT   NOT NULL PRIMARY KEY,
    revision  BIGINT NOT NULL
);
