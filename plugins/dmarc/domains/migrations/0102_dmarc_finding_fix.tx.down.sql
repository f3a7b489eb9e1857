ALTER TABLE dmarc_findings DROP COLUMN fix;
