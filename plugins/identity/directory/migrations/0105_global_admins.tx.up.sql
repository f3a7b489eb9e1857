-- The same on both databases. Each tenant's Global Administrators as its
-- latest sync read them from Privileged Identity Management: every
-- principal holding the role actively or eligible for it, a group's
-- members in its stead; and, on the daily snapshot, how many there are
-- and how many of them are only eligible. Snapshots taken before this
-- migration did not count them and keep NULL.
CREATE TABLE identity_global_admins (
    tenant_id           TEXT    NOT NULL,
    principal_id        TEXT    NOT NULL,
    principal_type      TEXT    NOT NULL,
    display_name        TEXT    NOT NULL DEFAULT '',
    user_principal_name TEXT    NOT NULL DEFAULT '',
    active              BOOLEAN NOT NULL,
    eligible            BOOLEAN NOT NULL,
    via_groups          TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, principal_id)
);
--bun:split
ALTER TABLE identity_snapshots ADD COLUMN global_admins INTEGER;
--bun:split
ALTER TABLE identity_snapshots ADD COLUMN global_admins_eligible INTEGER;
