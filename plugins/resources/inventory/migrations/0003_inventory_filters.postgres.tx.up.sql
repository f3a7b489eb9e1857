-- A tag row carries its resource's type (a sync rewrites a resource's tags
-- when either changes), so that a filter on type and tag is counted from
-- the tag index alone. A page sorted by last seen, of one type or of all,
-- walks an index in order and stops once it is full.
ALTER TABLE resources_inventory_tags ADD COLUMN type TEXT NOT NULL DEFAULT '';
--bun:split
UPDATE resources_inventory_tags t SET type = i.type FROM resources_inventory i WHERE i.uid = t.uid;
--bun:split
DROP INDEX resources_inventory_tags_key;
--bun:split
CREATE INDEX resources_inventory_tags_filter ON resources_inventory_tags (tenant_id, key, value, type);
--bun:split
CREATE INDEX resources_inventory_tenant_type_seen ON resources_inventory (tenant_id, type, last_seen, uid);
--bun:split
CREATE INDEX resources_inventory_tenant_seen ON resources_inventory (tenant_id, last_seen, uid);
--bun:split
-- Keys and values are correlated (a value such as "prod" belongs to one
-- key); without these statistics the planner takes them as independent,
-- expects a third of a tag filter's matches, and may plan a page of 100
-- rows with parallel workers whose start-up costs more than the page.
CREATE STATISTICS resources_inventory_tags_key_value (mcv) ON key, value FROM resources_inventory_tags;
