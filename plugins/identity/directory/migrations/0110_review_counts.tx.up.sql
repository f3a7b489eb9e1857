-- The same on both databases. On the daily snapshot, how many approvals of
-- directory role holders without MFA the tenant's access reviews hold and
-- how many of its reviews were overdue at the sync. Snapshots taken before
-- this migration did not count them and keep NULL.
ALTER TABLE identity_snapshots ADD COLUMN access_review_findings INTEGER;
--bun:split
ALTER TABLE identity_snapshots ADD COLUMN overdue_access_reviews INTEGER;
