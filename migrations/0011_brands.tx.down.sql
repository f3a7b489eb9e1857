DROP INDEX tenants_brand_id_idx;

--bun:split

ALTER TABLE tenants DROP COLUMN brand_id;

--bun:split

DROP TABLE brands;
