-- Brands group tenants, so that a scope, a page or a report can name a
-- brand instead of listing its tenants. A name is unique whatever its
-- case, as people tell brands apart by name.
CREATE TABLE brands (
    id          TEXT NOT NULL PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    updated_at  TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00', 'now'))
);

--bun:split

CREATE UNIQUE INDEX brands_name_idx ON brands (lower(name));

--bun:split

-- A tenant is in at most one brand: the column, not a join table, says so.
-- No foreign key, which SQLite would not let the down migration drop: the
-- store clears the column in the transaction that deletes a brand.
ALTER TABLE tenants ADD COLUMN brand_id TEXT;

--bun:split

CREATE INDEX tenants_brand_id_idx ON tenants (brand_id);
