-- The resource states dataset looks states up by ARM id with case ignored
-- (LOWER(resource_id) IN …, within the tenants asked for), which the index
-- on resource_id as stored cannot serve: without this one each lookup
-- reads every state of the tenants.
CREATE INDEX compliance_policy_states_resource_lower ON compliance_policy_states (tenant_id, LOWER(resource_id));
