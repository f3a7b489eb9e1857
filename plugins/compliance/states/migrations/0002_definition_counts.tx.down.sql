DROP TABLE compliance_tenant_revisions;
--bun:split
DROP TABLE compliance_definition_counts;
