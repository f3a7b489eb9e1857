ALTER TABLE cost_sync_state DROP COLUMN grains_complete;
--bun:split
ALTER TABLE cost_tenant_cumulative DROP COLUMN amortized_cents;
--bun:split
ALTER TABLE cost_service_cumulative DROP COLUMN amortized_cents;
--bun:split
ALTER TABLE cost_tenant_daily DROP COLUMN amortized_cents;
--bun:split
ALTER TABLE cost_service_daily DROP COLUMN amortized_cents;
--bun:split
ALTER TABLE cost_daily DROP COLUMN amortized_cents;
--bun:split
DROP TABLE cost_resource_tags;
--bun:split
DROP TABLE cost_resource_daily;
