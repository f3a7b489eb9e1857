DROP TABLE dmarc_domain_revisions;
