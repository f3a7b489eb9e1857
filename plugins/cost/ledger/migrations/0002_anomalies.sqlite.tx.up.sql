-- Cost anomalies: a day on which a tenant's spend on one service, in one
-- currency, rose far above its weekly-seasonal baseline (the method is in
-- the anomalies package's documentation). One row per tenant, service,
-- currency and day: re-evaluating a restated day updates its row. Amounts
-- are integer cents of the row's currency; day is days since 1970-01-01
-- and month its yyyymm. AUTOINCREMENT keeps a deleted anomaly's id from
-- being given to another.
CREATE TABLE cost_anomalies (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id         TEXT             NOT NULL,
    service           TEXT             NOT NULL,
    currency          TEXT             NOT NULL,
    day               INTEGER          NOT NULL,
    month             INTEGER          NOT NULL,
    expected_cents    BIGINT           NOT NULL,
    actual_cents      BIGINT           NOT NULL,
    impact_cents      BIGINT           NOT NULL,
    deviation_percent DOUBLE PRECISION NOT NULL,
    score             DOUBLE PRECISION NOT NULL,
    detected_at       TIMESTAMP        NOT NULL,
    evaluated_at      TIMESTAMP        NOT NULL,
    acknowledged      BOOLEAN          NOT NULL DEFAULT FALSE,
    acknowledged_by   TEXT,
    acknowledged_at   TIMESTAMP,
    UNIQUE (tenant_id, service, currency, day)
);
--bun:split
CREATE INDEX cost_anomalies_tenant_detected ON cost_anomalies (tenant_id, detected_at);
--bun:split
CREATE INDEX cost_anomalies_tenant_month ON cost_anomalies (tenant_id, month);
