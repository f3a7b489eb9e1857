CREATE TABLE acme_evidence (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id    TEXT NOT NULL,
    control      TEXT NOT NULL,
    resources    INTEGER NOT NULL,
    collected_at TIMESTAMP NOT NULL
);
--bun:split
CREATE INDEX acme_evidence_tenant ON acme_evidence (tenant_id, id);
