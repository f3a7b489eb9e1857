-- The same on both databases.

-- What each reservation day is worth: its SKU's instance size flexibility
-- (normalised_ratio: how many of its group's smallest size one instance
-- counts as), and its share of the purchase price in cents of currency,
-- with the part of that share its unused hours wasted. Days synced before
-- read ratio 1 and no cost until a sync restates them.
ALTER TABLE cost_reservations ADD COLUMN flexibility_group TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE cost_reservations ADD COLUMN normalized_ratio DOUBLE PRECISION NOT NULL DEFAULT 1;
--bun:split
ALTER TABLE cost_reservations ADD COLUMN currency TEXT NOT NULL DEFAULT '';
--bun:split
ALTER TABLE cost_reservations ADD COLUMN cost_cents BIGINT NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE cost_reservations ADD COLUMN unused_cents BIGINT NOT NULL DEFAULT 0;
--bun:split

-- A tenant's reservation purchases, one per reservation order, as the
-- billing account's transactions give them; replaced whole by each sync.
-- The order is bought on purchase_day and ends on expiry_day, its term
-- later; amount_cents is the price of the whole term.
CREATE TABLE cost_commitments (
    tenant_id            TEXT             NOT NULL,
    reservation_order_id TEXT             NOT NULL,
    name                 TEXT             NOT NULL,
    sku                  TEXT             NOT NULL,
    region               TEXT             NOT NULL,
    term                 TEXT             NOT NULL,
    purchase_day         INTEGER          NOT NULL,
    expiry_day           INTEGER          NOT NULL,
    quantity             DOUBLE PRECISION NOT NULL,
    currency             TEXT             NOT NULL,
    amount_cents         BIGINT           NOT NULL,
    synced_at            TIMESTAMP        NOT NULL,
    PRIMARY KEY (tenant_id, reservation_order_id)
);
--bun:split

-- The provider's recommendations to buy reservations for a tenant's
-- billing account, in the provider's order (position); replaced whole by
-- each sync. The costs are those of the look-back period without and with
-- the recommended reservations, in cents of currency.
CREATE TABLE cost_reservation_recommendations (
    tenant_id            TEXT             NOT NULL,
    position             INTEGER          NOT NULL,
    sku                  TEXT             NOT NULL,
    location             TEXT             NOT NULL,
    term                 TEXT             NOT NULL,
    scope                TEXT             NOT NULL,
    look_back_days       INTEGER          NOT NULL,
    recommended_quantity DOUBLE PRECISION NOT NULL,
    normalized_size      TEXT             NOT NULL,
    flexibility_group    TEXT             NOT NULL,
    flexibility_ratio    DOUBLE PRECISION NOT NULL,
    currency             TEXT             NOT NULL,
    cost_without_cents   BIGINT           NOT NULL,
    cost_with_cents      BIGINT           NOT NULL,
    net_savings_cents    BIGINT           NOT NULL,
    first_usage_day      INTEGER          NOT NULL,
    synced_at            TIMESTAMP        NOT NULL,
    PRIMARY KEY (tenant_id, position)
);
