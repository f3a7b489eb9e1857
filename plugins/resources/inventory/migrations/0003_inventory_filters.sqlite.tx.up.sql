-- A tag row carries its resource's type (a sync rewrites a resource's tags
-- when either changes), so that a filter on type and tag is counted from
-- the tag index alone. A page sorted by last seen, of one type or of all,
-- walks an index in order and stops once it is full.
ALTER TABLE resources_inventory_tags ADD COLUMN type TEXT NOT NULL DEFAULT '';
--bun:split
UPDATE resources_inventory_tags SET type = (SELECT i.type FROM resources_inventory i WHERE i.uid = resources_inventory_tags.uid);
--bun:split
DROP INDEX resources_inventory_tags_key;
--bun:split
CREATE INDEX resources_inventory_tags_filter ON resources_inventory_tags (tenant_id, key, value, type);
--bun:split
CREATE INDEX resources_inventory_tenant_type_seen ON resources_inventory (tenant_id, type, last_seen, uid);
--bun:split
CREATE INDEX resources_inventory_tenant_seen ON resources_inventory (tenant_id, last_seen, uid);
