DROP INDEX dmarc_report_records_unenriched;
--bun:split
ALTER TABLE dmarc_report_records DROP COLUMN enriched_at;
--bun:split
ALTER TABLE dmarc_report_records DROP COLUMN source_org;
--bun:split
ALTER TABLE dmarc_report_records DROP COLUMN source_ptr;
