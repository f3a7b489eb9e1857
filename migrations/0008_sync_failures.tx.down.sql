DROP TABLE data_sync_failures;
