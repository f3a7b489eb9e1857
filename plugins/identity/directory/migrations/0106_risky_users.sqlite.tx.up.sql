-- Each tenant's users Identity Protection judged at risk, as its latest
-- sync read them; and, on the daily snapshot, how many are at risk now
-- and how many of those at high risk. Snapshots taken before this
-- migration did not count them and keep NULL.
CREATE TABLE identity_risky_users (
    tenant_id           TEXT NOT NULL,
    user_id             TEXT NOT NULL,
    display_name        TEXT NOT NULL DEFAULT '',
    user_principal_name TEXT NOT NULL DEFAULT '',
    risk_level          TEXT NOT NULL,
    risk_state          TEXT NOT NULL,
    risk_detail         TEXT NOT NULL DEFAULT '',
    risk_updated_at     TIMESTAMP,
    PRIMARY KEY (tenant_id, user_id)
);
--bun:split
CREATE INDEX identity_risky_users_state ON identity_risky_users (tenant_id, risk_state, risk_level);
--bun:split
ALTER TABLE identity_snapshots ADD COLUMN risky_users INTEGER;
--bun:split
ALTER TABLE identity_snapshots ADD COLUMN high_risk_users INTEGER;
