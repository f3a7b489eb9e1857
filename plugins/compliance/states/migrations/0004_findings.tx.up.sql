-- The framework coverage reads each resource's states under each policy
-- definition of the tenants (GROUP BY policy_definition_id, resource_id),
-- and the findings list groups the states by resource and definition
-- within a definition's states; this index holds every column both read,
-- so neither reads the table.
CREATE INDEX compliance_policy_states_definition_resource ON compliance_policy_states
    (tenant_id, policy_definition_id, resource_id, state_rank, compliance_state);
