DROP TABLE cost_savings_plan_days;
--bun:split
ALTER TABLE cost_reservation_recommendations DROP COLUMN coverage;
--bun:split
ALTER TABLE cost_reservation_recommendations DROP COLUMN average_utilization;
--bun:split
ALTER TABLE cost_reservation_recommendations DROP COLUMN commitment_amount;
--bun:split
ALTER TABLE cost_reservation_recommendations DROP COLUMN kind;
--bun:split
ALTER TABLE cost_commitments DROP COLUMN hourly_commitment;
--bun:split
ALTER TABLE cost_commitments DROP COLUMN savings_plan_id;
--bun:split
ALTER TABLE cost_commitments DROP COLUMN kind;
