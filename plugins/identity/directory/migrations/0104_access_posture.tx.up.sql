-- The same on both databases. Each tenant's Conditional Access policies
-- as its latest sync read them, with what each one carries of the three
-- controls the posture is judged on; and, on the daily snapshot, whether
-- the tenant enforces security defaults and the state each control is
-- in. Snapshots taken before this migration did not read them and keep
-- NULL: their posture is unknown, not absent.
CREATE TABLE identity_ca_policies (
    tenant_id          TEXT    NOT NULL,
    policy_id          TEXT    NOT NULL,
    name               TEXT    NOT NULL DEFAULT '',
    state              TEXT    NOT NULL,
    grant_operator     TEXT    NOT NULL DEFAULT '',
    grant_controls     TEXT    NOT NULL DEFAULT '',
    client_app_types   TEXT    NOT NULL DEFAULT '',
    include_users      TEXT    NOT NULL DEFAULT '',
    include_roles      TEXT    NOT NULL DEFAULT '',
    exclusions         INTEGER NOT NULL DEFAULT 0,
    mfa_all_users      BOOLEAN NOT NULL,
    mfa_admins         BOOLEAN NOT NULL,
    blocks_legacy_auth BOOLEAN NOT NULL,
    PRIMARY KEY (tenant_id, policy_id)
);
--bun:split
ALTER TABLE identity_snapshots ADD COLUMN security_defaults BOOLEAN;
--bun:split
ALTER TABLE identity_snapshots ADD COLUMN ca_mfa_all_users TEXT;
--bun:split
ALTER TABLE identity_snapshots ADD COLUMN ca_mfa_admins TEXT;
--bun:split
ALTER TABLE identity_snapshots ADD COLUMN ca_legacy_auth_blocked TEXT;
