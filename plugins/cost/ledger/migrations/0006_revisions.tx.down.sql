DROP TABLE cost_tenant_revisions;
