ALTER TABLE identity_snapshots DROP COLUMN global_admins_eligible;
--bun:split
ALTER TABLE identity_snapshots DROP COLUMN global_admins;
--bun:split
DROP TABLE identity_global_admins;
