DROP TABLE compliance_snapshots;
--bun:split
DROP TABLE compliance_subscriptions;
--bun:split
DROP TABLE compliance_policy_states;
