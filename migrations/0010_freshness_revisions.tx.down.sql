DROP TABLE data_freshness_revisions;
