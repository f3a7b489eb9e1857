DROP TABLE partner_tenant_revisions;
