DROP TABLE data_freshness;

--bun:split

DROP TABLE sync_alerts;

--bun:split

DROP TABLE job_runs;
