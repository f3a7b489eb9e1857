-- Each tenant's assessment against the partner's catalogue, one day's per
-- run (a later run of the same day replaces it): the day's score and
-- counts, and each requirement's result. Evidence's own tables come from
-- migrations 0010 on.
CREATE TABLE partner_snapshots (
    tenant_id          TEXT NOT NULL,
    day                TEXT NOT NULL,
    maturity           REAL NOT NULL,
    target_maturity    REAL NOT NULL,
    requirements       INTEGER NOT NULL,
    met                INTEGER NOT NULL,
    not_met            INTEGER NOT NULL,
    unknown            INTEGER NOT NULL,
    awaiting_evidence  INTEGER NOT NULL,
    gaps               INTEGER NOT NULL,
    critical_gaps      INTEGER NOT NULL,
    days_left          INTEGER NOT NULL,
    checked_at         TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, day)
);
--bun:split
CREATE TABLE partner_results (
    tenant_id        TEXT NOT NULL,
    day              TEXT NOT NULL,
    requirement_id   TEXT NOT NULL,
    category         TEXT NOT NULL,
    priority         TEXT NOT NULL,
    priority_rank    INTEGER NOT NULL,
    status           TEXT NOT NULL,
    status_rank      INTEGER NOT NULL,
    check_status     TEXT NOT NULL,
    metric           TEXT NOT NULL,
    framework        TEXT NOT NULL,
    value            REAL,
    target           REAL,
    reason           TEXT NOT NULL,
    evidence_status  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, day, requirement_id)
);
