-- Each usage carries its subscription's display name as the sync found it
-- listed, so that the resources page and the quota API name a subscription
-- rather than show its id alone. Usages synced before read '' until the
-- next sync rewrites them.
ALTER TABLE resources_quota_usages ADD COLUMN subscription_name TEXT NOT NULL DEFAULT '';
