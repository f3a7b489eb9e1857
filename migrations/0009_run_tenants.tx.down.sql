DROP TABLE job_run_tenants;
