ALTER TABLE identity_access_reviews DROP COLUMN ends_at;
