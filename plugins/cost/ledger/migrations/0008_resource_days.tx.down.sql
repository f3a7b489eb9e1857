ALTER TABLE cost_sync_state DROP COLUMN resource_grain;
--bun:split
DROP TABLE cost_resource_tags;
--bun:split
DROP TABLE cost_resource_daily;
