CREATE TABLE resources_inventory (
    uid             TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    resource_id     TEXT NOT NULL,
    name            TEXT NOT NULL,
    type            TEXT NOT NULL,
    location        TEXT NOT NULL DEFAULT '',
    resource_group  TEXT NOT NULL DEFAULT '',
    sku             TEXT NOT NULL DEFAULT '',
    tags            TEXT NOT NULL DEFAULT '{}',
    properties      TEXT NOT NULL DEFAULT '{}',
    first_seen      TIMESTAMP   NOT NULL,
    last_seen       TIMESTAMP   NOT NULL,
    changed_at      TIMESTAMP   NOT NULL
);
--bun:split
CREATE INDEX resources_inventory_subscription ON resources_inventory (subscription_id);
--bun:split
CREATE INDEX resources_inventory_tenant_type ON resources_inventory (tenant_id, type, location);
--bun:split
CREATE INDEX resources_inventory_tenant_name ON resources_inventory (tenant_id, name);
--bun:split
CREATE INDEX resources_inventory_tenant_group ON resources_inventory (tenant_id, resource_group);
--bun:split
CREATE INDEX resources_inventory_tenant_location ON resources_inventory (tenant_id, location);
--bun:split
CREATE TABLE resources_inventory_tags (
    uid             TEXT NOT NULL,
    tenant_id       TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    key             TEXT NOT NULL,
    value           TEXT NOT NULL,
    PRIMARY KEY (uid, key)
);
--bun:split
CREATE INDEX resources_inventory_tags_key ON resources_inventory_tags (tenant_id, key, value);
--bun:split
CREATE INDEX resources_inventory_tags_subscription ON resources_inventory_tags (subscription_id);
--bun:split
CREATE TABLE resources_events (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id       TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    uid             TEXT NOT NULL,
    resource_id     TEXT NOT NULL,
    name            TEXT NOT NULL,
    type            TEXT NOT NULL,
    kind            TEXT NOT NULL,
    fields          TEXT NOT NULL DEFAULT '',
    at              TIMESTAMP   NOT NULL
);
--bun:split
CREATE INDEX resources_events_tenant ON resources_events (tenant_id, at);
--bun:split
CREATE INDEX resources_events_uid ON resources_events (uid, id);
