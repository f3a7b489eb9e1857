-- A run interrupted by an upgrade of its plugin is started again; attempts
-- counts its starts.
ALTER TABLE job_runs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;
