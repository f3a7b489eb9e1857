-- Each subscription's policy definitions with their resources by
-- compliance, written with the subscription's states by each sync of it,
-- so that the framework coverage reads one row per definition and
-- subscription rather than every state. A resource belongs to one
-- subscription, so the distinct resources of a definition over several
-- subscriptions are the sum of theirs. group_names holds the distinct
-- group_names arrays of the definition's states joined by commas (a JSON
-- array of them once bracketed); compliant counts resources compliant or
-- exempt under the definition (state_rank 1), non_compliant those
-- non-compliant (state_rank 2).
CREATE TABLE compliance_definition_counts (
    tenant_id            TEXT   NOT NULL,
    subscription_id      TEXT   NOT NULL,
    policy_definition_id TEXT   NOT NULL,
    policy_name          TEXT   NOT NULL,
    group_names          TEXT   NOT NULL,
    compliant            BIGINT NOT NULL,
    non_compliant        BIGINT NOT NULL,
    PRIMARY KEY (subscription_id, policy_definition_id)
);
--bun:split
CREATE INDEX compliance_definition_counts_tenant ON compliance_definition_counts (tenant_id, policy_definition_id);
--bun:split
INSERT INTO compliance_definition_counts (tenant_id, subscription_id, policy_definition_id, policy_name, group_names, compliant, non_compliant)
SELECT MIN(tenant_id), subscription_id, policy_definition_id, MIN(policy_name), string_agg(DISTINCT group_names, ','),
       COUNT(DISTINCT CASE WHEN state_rank = 1 THEN resource_id END),
       COUNT(DISTINCT CASE WHEN state_rank = 2 THEN resource_id END)
FROM compliance_policy_states
GROUP BY subscription_id, policy_definition_id;
--bun:split

-- A counter per tenant that each change of its stored states (a
-- subscription replaced, subscriptions dropped) raises in the same
-- transaction, so that a reader can tell whether what it read from the
-- tenants' states is still current without reading them again.
CREATE TABLE compliance_tenant_revisions (
    tenant_id TEXT   NOT NULL PRIMARY KEY,
    revision  BIGINT NOT NULL
);
