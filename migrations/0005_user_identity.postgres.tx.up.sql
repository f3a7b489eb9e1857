-- A user is the identity provider's immutable pair (directory, subject):
-- the directory tenant it belongs to (Entra ID's tid) and its id there (oid,
-- or sub from a provider without one). An e-mail address is neither unique
-- across directories nor permanent, so it becomes a plain attribute.
-- Kept in step with 0005_user_identity.sqlite.tx.up.sql, which has to
-- rebuild the table to drop the e-mail's UNIQUE constraint.
--
-- The directory '' is Steward's own sign-in (the development login), whose
-- subject is the lower-cased user name. Rows from before this migration
-- cannot be tied to a provider identity, as their tid and oid were never
-- kept: they become accounts of that directory keyed by their e-mail
-- address, which keeps the development admin's id, assignments and audit
-- trail. A user of a provider signs in as a new user with its own pair, so
-- no account of another directory can take an old row over by its address;
-- an admin assigns its tenants again (groups apply at once). Sessions and
-- admin flags of before end here (below).
ALTER TABLE users ADD COLUMN directory_tenant_id TEXT NOT NULL DEFAULT '';

--bun:split

ALTER TABLE users ADD COLUMN subject TEXT;

--bun:split

UPDATE users SET subject = email;

--bun:split

ALTER TABLE users ALTER COLUMN subject SET NOT NULL;

--bun:split

ALTER TABLE users DROP CONSTRAINT users_email_key;

--bun:split

CREATE UNIQUE INDEX users_identity_idx ON users (directory_tenant_id, subject);

--bun:split

-- Before this migration a row could have been taken over by an account of
-- another directory with the same address, or made admin by any
-- directory's Governance.Admin role, and a refresh reads the admin flag
-- from the row. So no session and no admin flag of before outlives it:
-- everyone signs in again, and the sign-in sets the flag anew.
UPDATE refresh_tokens SET revoked_at = now() WHERE revoked_at IS NULL;

--bun:split

UPDATE users SET is_admin = FALSE;
