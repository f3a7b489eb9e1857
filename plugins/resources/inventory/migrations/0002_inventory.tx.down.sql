DROP TABLE resources_events;
--bun:split
DROP TABLE resources_inventory_tags;
--bun:split
DROP TABLE resources_inventory;
