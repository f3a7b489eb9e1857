-- When each access review's latest instance ends, as the identity sync last
-- read it: a review not finished past it is overdue. NULL for a review
-- synced before this column, until its next sync.
ALTER TABLE identity_access_reviews ADD COLUMN ends_at TIMESTAMP;
