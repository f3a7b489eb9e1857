DROP TABLE cost_reservation_recommendations;
--bun:split
DROP TABLE cost_commitments;
--bun:split
ALTER TABLE cost_reservations DROP COLUMN unused_cents;
--bun:split
ALTER TABLE cost_reservations DROP COLUMN cost_cents;
--bun:split
ALTER TABLE cost_reservations DROP COLUMN currency;
--bun:split
ALTER TABLE cost_reservations DROP COLUMN normalized_ratio;
--bun:split
ALTER TABLE cost_reservations DROP COLUMN flexibility_group;
