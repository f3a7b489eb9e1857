-- A user is the identity provider's immutable pair (directory, subject);
-- see 0005_user_identity.postgres.tx.up.sql for the reasons and for what
-- becomes of existing rows.
--
-- SQLite cannot drop the e-mail's UNIQUE constraint, so the table is
-- rebuilt. Foreign keys stay on inside the migration's transaction, and
-- dropping users would cascade to tenant_members: the memberships move to
-- a new table first, whose reference follows users_new when it is renamed
-- to users (SQLite rewrites references on RENAME since 3.26).
CREATE TABLE users_new (
    id                  TEXT NOT NULL PRIMARY KEY,
    directory_tenant_id TEXT NOT NULL DEFAULT '',
    subject             TEXT NOT NULL,
    email               TEXT NOT NULL,
    name                TEXT NOT NULL DEFAULT '',
    is_admin            BOOLEAN NOT NULL DEFAULT FALSE,
    roles               TEXT NOT NULL DEFAULT '[]',
    "groups"            TEXT NOT NULL DEFAULT '[]',
    created_at          TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    last_login_at       TIMESTAMP
);

--bun:split

INSERT INTO users_new (id, directory_tenant_id, subject, email, name, is_admin, roles, "groups", created_at, last_login_at)
SELECT id, '', email, email, name, is_admin, roles, "groups", created_at, last_login_at FROM users;

--bun:split

CREATE TABLE tenant_members_new (
    tenant_id  TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users_new (id) ON DELETE CASCADE,
    created_at TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    PRIMARY KEY (tenant_id, user_id)
);

--bun:split

INSERT INTO tenant_members_new (tenant_id, user_id, created_at)
SELECT tenant_id, user_id, created_at FROM tenant_members;

--bun:split

DROP TABLE tenant_members;

--bun:split

DROP TABLE users;

--bun:split

ALTER TABLE users_new RENAME TO users;

--bun:split

ALTER TABLE tenant_members_new RENAME TO tenant_members;

--bun:split

CREATE INDEX tenant_members_user_id_idx ON tenant_members (user_id);

--bun:split

CREATE UNIQUE INDEX users_identity_idx ON users (directory_tenant_id, subject);

--bun:split

-- Before this migration a row could have been taken over by an account of
-- another directory with the same address, or made admin by any
-- directory's Governance.Admin role, and a refresh reads the admin flag
-- from the row. So no session and no admin flag of before outlives it:
-- everyone signs in again, and the sign-in sets the flag anew.
UPDATE refresh_tokens SET revoked_at = strftime('%Y-%m-%d %H:%M:%f+00:00', 'now') WHERE revoked_at IS NULL;

--bun:split

UPDATE users SET is_admin = FALSE;
