-- Refresh tokens and the access-token revocation list. Kept in step with
-- 0003_tokens.sqlite.tx.up.sql; only the timestamp types differ.

-- One row per refresh token ever issued, keyed by its jti. Only the SHA-256
-- of the token is kept, so a leaked table cannot be replayed. A family is
-- every token descended from one sign-in through rotation; family_id is the
-- jti of its first token. access_id names the access token issued beside
-- each refresh token, so revoking a family can revoke those too.
CREATE TABLE refresh_tokens (
    id                TEXT NOT NULL PRIMARY KEY,
    user_id           TEXT NOT NULL,
    family_id         TEXT NOT NULL,
    token_hash        TEXT NOT NULL,
    access_id         TEXT NOT NULL,
    access_expires_at TIMESTAMPTZ NOT NULL,
    issued_at         TIMESTAMPTZ NOT NULL,
    expires_at        TIMESTAMPTZ NOT NULL,
    used_at           TIMESTAMPTZ,
    revoked_at        TIMESTAMPTZ,
    replaced_by       TEXT
);

--bun:split

CREATE INDEX refresh_tokens_family_id_idx ON refresh_tokens (family_id);

--bun:split

-- Logout finds the family from the access token it presents.
CREATE INDEX refresh_tokens_access_id_idx ON refresh_tokens (access_id);

--bun:split

CREATE INDEX refresh_tokens_expires_at_idx ON refresh_tokens (expires_at);

--bun:split

-- Revoked access tokens, used when no Redis is configured. A row is needed
-- only until the token would have expired anyway; expired rows are pruned.
CREATE TABLE revoked_tokens (
    jti        TEXT NOT NULL PRIMARY KEY,
    expires_at TIMESTAMPTZ NOT NULL
);

--bun:split

CREATE INDEX revoked_tokens_expires_at_idx ON revoked_tokens (expires_at);
