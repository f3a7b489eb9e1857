DROP STATISTICS resources_inventory_tags_key_value;
--bun:split
DROP INDEX resources_inventory_tenant_seen;
--bun:split
DROP INDEX resources_inventory_tenant_type_seen;
--bun:split
DROP INDEX resources_inventory_tags_filter;
--bun:split
CREATE INDEX resources_inventory_tags_key ON resources_inventory_tags (tenant_id, key, value);
--bun:split
ALTER TABLE resources_inventory_tags DROP COLUMN type;
