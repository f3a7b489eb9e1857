CREATE TABLE identity_users (
    tenant_id          TEXT NOT NULL,
    user_id            TEXT NOT NULL,
    display_name       TEXT NOT NULL DEFAULT '',
    user_principal_name TEXT NOT NULL DEFAULT '',
    mail               TEXT NOT NULL DEFAULT '',
    user_type          TEXT NOT NULL,
    account_enabled    BOOLEAN NOT NULL,
    created_at         TIMESTAMP,
    last_sign_in       TIMESTAMP,
    is_admin           BOOLEAN NOT NULL,
    mfa_registered     BOOLEAN NOT NULL,
    mfa_capable        BOOLEAN NOT NULL,
    mfa_methods        TEXT NOT NULL DEFAULT '',
    default_mfa_method TEXT NOT NULL DEFAULT '',
    synced_at          TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);
--bun:split
CREATE INDEX identity_users_sign_in ON identity_users (tenant_id, last_sign_in);
--bun:split
CREATE TABLE identity_role_members (
    tenant_id          TEXT NOT NULL,
    role_id            TEXT NOT NULL,
    role_name          TEXT NOT NULL,
    role_template_id   TEXT NOT NULL DEFAULT '',
    member_id          TEXT NOT NULL,
    member_type        TEXT NOT NULL,
    member_name        TEXT NOT NULL DEFAULT '',
    member_upn         TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, role_id, member_id)
);
--bun:split
CREATE INDEX identity_role_members_member ON identity_role_members (tenant_id, member_id);
--bun:split
CREATE TABLE identity_devices (
    tenant_id          TEXT NOT NULL,
    device_id          TEXT NOT NULL,
    name               TEXT NOT NULL DEFAULT '',
    user_id            TEXT NOT NULL DEFAULT '',
    user_principal_name TEXT NOT NULL DEFAULT '',
    operating_system   TEXT NOT NULL DEFAULT '',
    os_version         TEXT NOT NULL DEFAULT '',
    compliance_state   TEXT NOT NULL,
    is_encrypted       BOOLEAN NOT NULL,
    last_sync          TIMESTAMP,
    PRIMARY KEY (tenant_id, device_id)
);
--bun:split
CREATE TABLE identity_access_reviews (
    tenant_id          TEXT NOT NULL,
    review_id          TEXT NOT NULL,
    name               TEXT NOT NULL DEFAULT '',
    status             TEXT NOT NULL,
    created_at         TIMESTAMP,
    PRIMARY KEY (tenant_id, review_id)
);
--bun:split
CREATE TABLE identity_review_decisions (
    tenant_id          TEXT NOT NULL,
    review_id          TEXT NOT NULL,
    instance_id        TEXT NOT NULL,
    decision_id        TEXT NOT NULL,
    decision           TEXT NOT NULL,
    recommendation     TEXT NOT NULL DEFAULT '',
    principal_id       TEXT NOT NULL DEFAULT '',
    principal_name     TEXT NOT NULL DEFAULT '',
    principal_upn      TEXT NOT NULL DEFAULT '',
    reviewed_by        TEXT NOT NULL DEFAULT '',
    reviewed_at        TIMESTAMP,
    PRIMARY KEY (tenant_id, review_id, instance_id, decision_id)
);
--bun:split
CREATE TABLE identity_snapshots (
    tenant_id          TEXT NOT NULL,
    day                TEXT NOT NULL,
    total_users        INTEGER NOT NULL,
    admin_users        INTEGER NOT NULL,
    mfa_users          INTEGER NOT NULL,
    admin_mfa_users    INTEGER NOT NULL,
    guest_users        INTEGER NOT NULL,
    devices            INTEGER NOT NULL,
    compliant_devices  INTEGER NOT NULL,
    synced_at          TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, day)
);
