DROP TABLE resources_quota_usages;
