ALTER TABLE identity_snapshots DROP COLUMN overdue_access_reviews;
--bun:split
ALTER TABLE identity_snapshots DROP COLUMN access_review_findings;
