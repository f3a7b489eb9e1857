CREATE TABLE acme_evidence_items (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id    TEXT NOT NULL,
    control      TEXT NOT NULL,
    status       TEXT NOT NULL,
    collected_at TIMESTAMP NOT NULL
);
--bun:split
CREATE INDEX acme_evidence_items_tenant ON acme_evidence_items (tenant_id);
