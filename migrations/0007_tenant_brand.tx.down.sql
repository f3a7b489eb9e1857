ALTER TABLE tenants DROP COLUMN brand_color;
