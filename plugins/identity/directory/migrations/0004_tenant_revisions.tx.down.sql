DROP TABLE identity_tenant_revisions;
