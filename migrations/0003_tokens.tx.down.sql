DROP TABLE revoked_tokens;

--bun:split

DROP TABLE refresh_tokens;
