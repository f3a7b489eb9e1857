ALTER TABLE identity_snapshots DROP COLUMN disabled_users;
