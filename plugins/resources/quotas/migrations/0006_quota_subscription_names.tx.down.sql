ALTER TABLE resources_quota_usages DROP COLUMN subscription_name;
