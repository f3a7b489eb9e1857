-- Sync job runs, the alerts raised by failed runs, and per-tenant data
-- freshness. Kept in step with 0002_jobs.postgres.tx.up.sql; only the column
-- types and the alert id's auto-increment differ. SQLite keeps timestamps as
-- text; the application always writes them in one UTC format, so comparing
-- and ordering them as text agrees with time order.

-- One row per run. scheduled_for holds the slot time of scheduled runs; the
-- unique key on (job_key, scheduled_for) is the claim that lets several
-- replicas race for a slot and run it once. Manual runs leave it NULL, and
-- NULLs never collide.
CREATE TABLE job_runs (
    id                TEXT NOT NULL PRIMARY KEY,
    job_key           TEXT NOT NULL,
    plugin            TEXT NOT NULL,
    job_name          TEXT NOT NULL,
    job_type          TEXT NOT NULL,
    "trigger"         TEXT NOT NULL CHECK ("trigger" IN ('schedule', 'manual')),
    triggered_by      TEXT,
    scheduled_for     TIMESTAMP,
    replica           TEXT NOT NULL DEFAULT '',
    status            TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    queued_at         TIMESTAMP NOT NULL,
    started_at        TIMESTAMP,
    completed_at      TIMESTAMP,
    heartbeat_at      TIMESTAMP NOT NULL,
    error_message     TEXT,
    records_processed BIGINT NOT NULL DEFAULT 0,
    progress_done     BIGINT NOT NULL DEFAULT 0,
    progress_total    BIGINT NOT NULL DEFAULT 0,
    progress_message  TEXT NOT NULL DEFAULT '',
    UNIQUE (job_key, scheduled_for)
);

--bun:split

CREATE INDEX job_runs_job_type_started_at_idx ON job_runs (job_type, started_at);

--bun:split

CREATE INDEX job_runs_started_at_idx ON job_runs (started_at);

--bun:split

-- History lists runs newest first, queued ones included.
CREATE INDEX job_runs_queued_at_idx ON job_runs (queued_at);

--bun:split

-- Every replica scans for unfinished runs whose heartbeat stopped.
CREATE INDEX job_runs_active_heartbeat_idx ON job_runs (heartbeat_at)
    WHERE status IN ('queued', 'running');

--bun:split

-- Before claiming a slot, a replica checks that the job has no unfinished
-- run; the status page counts them.
CREATE INDEX job_runs_active_job_key_idx ON job_runs (job_key)
    WHERE status IN ('queued', 'running');

--bun:split

CREATE TABLE sync_alerts (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id           TEXT NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
    job_type         TEXT NOT NULL,
    severity         TEXT NOT NULL,
    title            TEXT NOT NULL,
    message          TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMP NOT NULL,
    resolved         BOOLEAN NOT NULL DEFAULT FALSE,
    resolved_at      TIMESTAMP,
    resolved_by      TEXT,
    resolution_notes TEXT
);

--bun:split

CREATE INDEX sync_alerts_resolved_created_at_idx ON sync_alerts (resolved, created_at);

--bun:split

CREATE INDEX sync_alerts_job_id_idx ON sync_alerts (job_id);

--bun:split

-- Latest successful sync of each data domain per tenant.
CREATE TABLE data_freshness (
    tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    domain    TEXT NOT NULL,
    synced_at TIMESTAMP NOT NULL,
    PRIMARY KEY (tenant_id, domain)
);
