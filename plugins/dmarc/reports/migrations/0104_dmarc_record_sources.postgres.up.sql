ALTER TABLE dmarc_report_records ADD COLUMN source_ptr TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE dmarc_report_records ADD COLUMN source_org TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE dmarc_report_records ADD COLUMN enriched_at TIMESTAMPTZ;
--bun:split
CREATE INDEX dmarc_report_records_unenriched ON dmarc_report_records (tenant_id, source_ip) WHERE enriched_at IS NULL;
