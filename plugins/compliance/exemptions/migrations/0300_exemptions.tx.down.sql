DROP TABLE compliance_exemption_revisions;
--bun:split
DROP TABLE compliance_exemptions;
