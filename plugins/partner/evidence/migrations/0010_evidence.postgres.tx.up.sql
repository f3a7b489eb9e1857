-- Evidence a tenant keeps for one requirement of the partner's catalogue:
-- one record per tenant and requirement, whose status moves through the
-- lifecycle the evidence package documents (not_started, in_progress,
-- submitted, accepted, rejected, expired). links is a JSON array of URLs.
-- review_* describe the last review; expires_at, when set, is when
-- accepted evidence lapses (the daily expiry job marks it expired).
CREATE TABLE partner_evidence (
    id             TEXT        PRIMARY KEY,
    tenant_id      TEXT        NOT NULL,
    requirement_id TEXT        NOT NULL,
    status         TEXT        NOT NULL,
    owner          TEXT,
    due_date       TEXT,
    notes          TEXT,
    links          TEXT        NOT NULL DEFAULT '[]',
    expires_at     TIMESTAMPTZ,
    review_reason  TEXT,
    reviewed_by    TEXT,
    reviewed_at    TIMESTAMPTZ,
    created_by     TEXT        NOT NULL,
    updated_by     TEXT        NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL
);
--bun:split
CREATE UNIQUE INDEX partner_evidence_requirement ON partner_evidence (tenant_id, requirement_id);
--bun:split
CREATE INDEX partner_evidence_expiry ON partner_evidence (status, expires_at);
--bun:split

-- Files uploaded as evidence. The blob lives in the blob store under id,
-- never under the client's name; file_name is the sanitised original name,
-- kept only for the download's Content-Disposition.
CREATE TABLE partner_evidence_files (
    id           TEXT        PRIMARY KEY,
    evidence_id  TEXT        NOT NULL REFERENCES partner_evidence (id),
    tenant_id    TEXT        NOT NULL,
    file_name    TEXT        NOT NULL,
    content_type TEXT        NOT NULL,
    size_bytes   BIGINT      NOT NULL,
    sha256       TEXT        NOT NULL,
    uploaded_by  TEXT        NOT NULL,
    uploaded_at  TIMESTAMPTZ NOT NULL
);
--bun:split
CREATE INDEX partner_evidence_files_evidence ON partner_evidence_files (evidence_id, uploaded_at);
