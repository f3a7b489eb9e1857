-- The tenants of a run spread over replicas (a job that works tenant by
-- tenant): one row per tenant, worked as a job of the queue
-- (queue_job_id, River's river_job) by whichever replica has room. The run
-- finishes when its last tenant does.
CREATE TABLE job_run_tenants (
    run_id            TEXT NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
    tenant_id         TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    replica           TEXT NOT NULL DEFAULT '',
    attempts          INTEGER NOT NULL DEFAULT 0,
    records_processed BIGINT NOT NULL DEFAULT 0,
    error_message     TEXT,
    started_at        TIMESTAMP,
    completed_at      TIMESTAMP,
    queue_job_id      BIGINT NOT NULL,
    PRIMARY KEY (run_id, tenant_id)
);

--bun:split

-- The unfinished tenants, which every replica's pass looks through for
-- work the queue gave up on.
CREATE INDEX job_run_tenants_unfinished_idx ON job_run_tenants (run_id)
    WHERE status IN ('queued', 'running');
