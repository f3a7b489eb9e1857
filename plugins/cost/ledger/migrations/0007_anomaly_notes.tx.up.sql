-- The note a person gave when acknowledging an anomaly; null without one,
-- and cleared with the acknowledgement when it is undone.
ALTER TABLE cost_anomalies ADD COLUMN acknowledgement_note TEXT;
--bun:split
-- The anomaly list filters a tenant's anomalies by the day of the cost.
CREATE INDEX cost_anomalies_tenant_day ON cost_anomalies (tenant_id, day);
