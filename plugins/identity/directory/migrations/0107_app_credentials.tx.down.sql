ALTER TABLE identity_snapshots DROP COLUMN expiring_credentials;
--bun:split
ALTER TABLE identity_snapshots DROP COLUMN expired_credentials;
--bun:split
DROP TABLE identity_app_credentials;
