CREATE TABLE testplugin_items (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    cost DOUBLE PRECISION NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX testplugin_items_tenant ON testplugin_items (tenant_id, id);
