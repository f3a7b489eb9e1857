-- A tenant's brand colour (#rrggbb) accents the web pages scoped to it;
-- empty keeps the default.
ALTER TABLE tenants ADD COLUMN brand_color TEXT NOT NULL DEFAULT '';
