-- Each tenant's result of each framework control (passed, failed,
-- not_applicable or manual) as the end of its last compliance sync
-- counted it, kept by package regressions so that the next sync can tell
-- a control that went from passed to failed.
CREATE TABLE compliance_control_results (
    tenant_id    TEXT   NOT NULL,
    framework_id TEXT   NOT NULL,
    control_id   TEXT   NOT NULL,
    result       TEXT   NOT NULL,
    synced_unix  BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, framework_id, control_id)
);
