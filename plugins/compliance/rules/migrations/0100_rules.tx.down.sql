DROP TABLE compliance_rule_violations;
--bun:split
DROP TABLE compliance_rules;
