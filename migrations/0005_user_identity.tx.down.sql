-- Going back makes e-mail addresses unique again; with two users of one
-- address (possible only since 0005) this fails and changes nothing.
DROP INDEX users_identity_idx;

--bun:split

ALTER TABLE users DROP COLUMN subject;

--bun:split

ALTER TABLE users DROP COLUMN directory_tenant_id;

--bun:split

CREATE UNIQUE INDEX users_email_key ON users (email);
