DROP TABLE identity_snapshots;
--bun:split
DROP TABLE identity_review_decisions;
--bun:split
DROP TABLE identity_access_reviews;
--bun:split
DROP TABLE identity_devices;
--bun:split
DROP TABLE identity_role_members;
--bun:split
DROP TABLE identity_users;
