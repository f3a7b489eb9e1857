DROP TABLE dmarc_events;
DROP TABLE dmarc_history;
DROP TABLE dmarc_findings;
DROP TABLE dmarc_domains;
