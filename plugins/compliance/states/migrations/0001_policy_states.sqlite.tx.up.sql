-- The latest policy state of each resource under each policy assignment,
-- as Policy Insights reported it at the subscription's last sync; a
-- subscription's rows are replaced whole by each sync of it.
-- compliance_state is Compliant, NonCompliant, Exempt, Conflict or Unknown;
-- state_rank orders it for the aggregates: 2 NonCompliant, 1 Compliant or
-- Exempt, 0 any other. severity is High, Medium or Low, severity_rank 3,
-- 2 or 1. group_names is a JSON array; evaluated_unix is the state's
-- evaluation time in seconds since 1970 UTC.
CREATE TABLE compliance_policy_states (
    tenant_id              TEXT     NOT NULL,
    subscription_id        TEXT     NOT NULL,
    resource_id            TEXT     NOT NULL,
    resource_type          TEXT     NOT NULL,
    policy_assignment_id   TEXT     NOT NULL,
    policy_definition_id   TEXT     NOT NULL,
    policy_definition_name TEXT     NOT NULL,
    policy_name            TEXT     NOT NULL,
    category               TEXT     NOT NULL,
    group_names            TEXT     NOT NULL,
    compliance_state       TEXT     NOT NULL,
    state_rank             SMALLINT NOT NULL,
    severity               TEXT     NOT NULL,
    severity_rank          SMALLINT NOT NULL,
    evaluated_unix         BIGINT   NOT NULL
);
--bun:split
CREATE INDEX compliance_policy_states_subscription ON compliance_policy_states (subscription_id);
--bun:split
CREATE INDEX compliance_policy_states_policy ON compliance_policy_states (tenant_id, policy_definition_id, state_rank);
--bun:split
CREATE INDEX compliance_policy_states_resource ON compliance_policy_states (tenant_id, resource_id, state_rank);
--bun:split

-- Each subscription's last successful sync: its tenant, how many states
-- it holds and when they were read.
CREATE TABLE compliance_subscriptions (
    subscription_id TEXT    NOT NULL PRIMARY KEY,
    tenant_id       TEXT    NOT NULL,
    policy_states   BIGINT  NOT NULL,
    synced_at       TIMESTAMP NOT NULL
);
--bun:split
CREATE INDEX compliance_subscriptions_tenant ON compliance_subscriptions (tenant_id);
--bun:split

-- A tenant's figures on a day (YYYY-MM-DD, UTC), from its states once
-- every subscription of it synced; a later sync the same day replaces
-- them. Kept for the trend.
CREATE TABLE compliance_snapshots (
    tenant_id               TEXT    NOT NULL,
    day                     TEXT    NOT NULL,
    compliant_resources     BIGINT  NOT NULL,
    non_compliant_resources BIGINT  NOT NULL,
    total_resources         BIGINT  NOT NULL,
    compliant_policies      BIGINT  NOT NULL,
    non_compliant_policies  BIGINT  NOT NULL,
    total_policies          BIGINT  NOT NULL,
    policy_states           BIGINT  NOT NULL,
    taken_at                TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, day)
);
