ALTER TABLE identity_snapshots DROP COLUMN ca_legacy_auth_blocked;
--bun:split
ALTER TABLE identity_snapshots DROP COLUMN ca_mfa_admins;
--bun:split
ALTER TABLE identity_snapshots DROP COLUMN ca_mfa_all_users;
--bun:split
ALTER TABLE identity_snapshots DROP COLUMN security_defaults;
--bun:split
DROP TABLE identity_ca_policies;
