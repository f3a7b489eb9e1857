DROP TABLE dmarc_report_files;
--bun:split
DROP TABLE dmarc_report_records;
--bun:split
DROP TABLE dmarc_reports;
