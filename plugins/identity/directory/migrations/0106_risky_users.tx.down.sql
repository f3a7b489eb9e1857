ALTER TABLE identity_snapshots DROP COLUMN high_risk_users;
--bun:split
ALTER TABLE identity_snapshots DROP COLUMN risky_users;
--bun:split
DROP TABLE identity_risky_users;
