-- The same on both databases.

-- Savings plans are commitments beside reservation orders: kind tells
-- them apart ('reservation' or 'savings_plan'). A savings plan's row holds
-- its order id in reservation_order_id, its plan id in savings_plan_id and
-- its commitment per hour, as the provider states it, in
-- hourly_commitment; amount_cents is what the whole term commits. Rows
-- synced before are reservations.
ALTER TABLE cost_commitments ADD COLUMN kind TEXT NOT NULL DEFAULT 'reservation';
--bun:split
ALTER TABLE cost_commitments ADD COLUMN savings_plan_id TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE cost_commitments ADD COLUMN hourly_commitment DOUBLE PRECISION NOT NULL DEFAULT 0;
--bun:split

-- Recommendations to buy savings plans beside those to buy reservations:
-- a savings plan's names the hourly commitment to buy (commitment_amount)
-- and the percentages of it the look-back period's usage would have used
-- (average_utilization) and of that usage it would have covered
-- (coverage); a reservation's read 0.
ALTER TABLE cost_reservation_recommendations ADD COLUMN kind TEXT NOT NULL DEFAULT 'reservation';
--bun:split
ALTER TABLE cost_reservation_recommendations ADD COLUMN commitment_amount DOUBLE PRECISION NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE cost_reservation_recommendations ADD COLUMN average_utilization DOUBLE PRECISION NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE cost_reservation_recommendations ADD COLUMN coverage DOUBLE PRECISION NOT NULL DEFAULT 0;
--bun:split

-- A savings plan's utilisation on one day, in percent of its commitment,
-- and the money: committed_cents is the day's commitment (the hourly
-- commitment times 24, to the cent), used_cents its part the usage used
-- (committed times the mean utilisation, to the cent) and unused_cents
-- the rest. Upserted by each sync over the days it restates.
CREATE TABLE cost_savings_plan_days (
    tenant_id             TEXT             NOT NULL,
    savings_plan_id       TEXT             NOT NULL,
    day                   INTEGER          NOT NULL,
    savings_plan_order_id TEXT             NOT NULL,
    min_utilization       DOUBLE PRECISION NOT NULL,
    avg_utilization       DOUBLE PRECISION NOT NULL,
    max_utilization       DOUBLE PRECISION NOT NULL,
    currency              TEXT             NOT NULL,
    committed_cents       BIGINT           NOT NULL,
    used_cents            BIGINT           NOT NULL,
    unused_cents          BIGINT           NOT NULL,
    synced_at             TIMESTAMP        NOT NULL,
    PRIMARY KEY (tenant_id, savings_plan_id, day)
);
