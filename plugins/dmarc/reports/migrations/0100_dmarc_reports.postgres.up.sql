CREATE TABLE dmarc_reports (
    id            BIGSERIAL PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    org_name      TEXT NOT NULL,
    report_id     TEXT NOT NULL,
    email         TEXT NOT NULL,
    domain        TEXT NOT NULL,
    date_begin    TIMESTAMPTZ NOT NULL,
    date_end      TIMESTAMPTZ NOT NULL,
    adkim         TEXT NOT NULL,
    aspf          TEXT NOT NULL,
    p             TEXT NOT NULL,
    sp            TEXT NOT NULL,
    pct           INTEGER NOT NULL,
    source        TEXT NOT NULL,
    file_name     TEXT NOT NULL,
    sha256        TEXT NOT NULL,
    records       INTEGER NOT NULL,
    messages      BIGINT NOT NULL,
    passed        BIGINT NOT NULL,
    received_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (tenant_id, org_name, report_id)
);
--bun:split
CREATE INDEX dmarc_reports_tenant_begin ON dmarc_reports (tenant_id, date_begin);
--bun:split
CREATE TABLE dmarc_report_records (
    report_pk     BIGINT NOT NULL REFERENCES dmarc_reports (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    tenant_id     TEXT NOT NULL,
    domain        TEXT NOT NULL,
    day           TEXT NOT NULL,
    source_ip     TEXT NOT NULL,
    count         BIGINT NOT NULL,
    disposition   TEXT NOT NULL,
    dkim          TEXT NOT NULL,
    spf           TEXT NOT NULL,
    pass          BOOLEAN NOT NULL,
    alignment     TEXT NOT NULL,
    header_from   TEXT NOT NULL,
    envelope_from TEXT NOT NULL,
    auth_dkim     TEXT NOT NULL,
    auth_spf      TEXT NOT NULL,
    PRIMARY KEY (report_pk, seq)
);
--bun:split
CREATE INDEX dmarc_report_records_tenant_day ON dmarc_report_records (tenant_id, day);
--bun:split
CREATE TABLE dmarc_report_files (
    sha256        TEXT PRIMARY KEY,
    file_name     TEXT NOT NULL,
    status        TEXT NOT NULL,
    reason        TEXT NOT NULL,
    report_pk     BIGINT,
    file_size     BIGINT NOT NULL,
    modified_at   TIMESTAMPTZ NOT NULL,
    processed_at  TIMESTAMPTZ NOT NULL
);
