ALTER TABLE identity_snapshots DROP COLUMN member_mfa_users;
--bun:split
ALTER TABLE identity_snapshots DROP COLUMN member_users;
