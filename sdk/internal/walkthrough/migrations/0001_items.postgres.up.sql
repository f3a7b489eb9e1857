CREATE TABLE acme_evidence_items (
    id           BIGSERIAL PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    control      TEXT NOT NULL,
    status       TEXT NOT NULL,
    collected_at TIMESTAMPTZ NOT NULL
);
--bun:split
CREATE INDEX acme_evidence_items_tenant ON acme_evidence_items (tenant_id);
