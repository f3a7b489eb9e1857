DROP INDEX cost_anomalies_tenant_day;
--bun:split
ALTER TABLE cost_anomalies DROP COLUMN acknowledgement_note;
