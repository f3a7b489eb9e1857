DROP TABLE audit_logs;

--bun:split

DROP TABLE tenant_members;

--bun:split

DROP TABLE users;

--bun:split

DROP TABLE tenants;
