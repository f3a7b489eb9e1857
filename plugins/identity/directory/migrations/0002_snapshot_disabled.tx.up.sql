-- The same on both databases. The daily snapshot counts the disabled
-- accounts too, so that a tenant's summary reads its latest snapshot
-- instead of counting its users at each read. Each tenant's latest
-- snapshot is given the count of the directory stored with it; earlier
-- days were not counted and keep 0, which no read shows.
ALTER TABLE identity_snapshots ADD COLUMN disabled_users INTEGER NOT NULL DEFAULT 0;
--bun:split
UPDATE identity_snapshots SET disabled_users = (
    SELECT COUNT(*) FROM identity_users u WHERE u.tenant_id = identity_snapshots.tenant_id AND NOT u.account_enabled)
WHERE day = (SELECT MAX(s.day) FROM identity_snapshots s WHERE s.tenant_id = identity_snapshots.tenant_id);
