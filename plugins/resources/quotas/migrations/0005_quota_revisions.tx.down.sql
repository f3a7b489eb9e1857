DROP TABLE resources_quota_revisions;
