CREATE TABLE acme_evidence (
    id           BIGSERIAL PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    control      TEXT NOT NULL,
    resources    BIGINT NOT NULL,
    collected_at TIMESTAMPTZ NOT NULL
);
--bun:split
CREATE INDEX acme_evidence_tenant ON acme_evidence (tenant_id, id);
