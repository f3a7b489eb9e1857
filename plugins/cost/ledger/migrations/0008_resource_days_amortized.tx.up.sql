-- The same on both databases.

-- Daily actual and amortised cost per resource and service, as Cost
-- Management reports them grouped by ResourceId and ServiceName: one grain finer than
-- cost_daily, which it sums to per subscription, day, service and
-- currency. The cost analysis reads it by resource and by tag, and an
-- anomaly's day by resource. resource_id is lower case, empty for the
-- costs of no resource; resource_group is the group the id names (empty
-- for no resource). Replaced with cost_daily, window by window, in the
-- same transaction.
CREATE TABLE cost_resource_daily (
    subscription_id TEXT    NOT NULL,
    day             INTEGER NOT NULL,
    resource_id     TEXT    NOT NULL,
    service         TEXT    NOT NULL,
    currency        TEXT    NOT NULL,
    tenant_id       TEXT    NOT NULL,
    resource_group  TEXT    NOT NULL,
    month           INTEGER NOT NULL,
    cost_cents      BIGINT  NOT NULL,
    amortized_cents BIGINT  NOT NULL,
    PRIMARY KEY (subscription_id, day, resource_id, service, currency)
);
--bun:split
CREATE INDEX cost_resource_daily_tenant_day ON cost_resource_daily (tenant_id, day);
--bun:split

-- Each resource's tags as Resource Graph listed them at its subscription's
-- last cost sync: keys in lower case, as Azure compares tag names without
-- case, values as written. Replaced per subscription.
CREATE TABLE cost_resource_tags (
    subscription_id TEXT NOT NULL,
    resource_id     TEXT NOT NULL,
    tag_key         TEXT NOT NULL,
    tag_value       TEXT NOT NULL,
    tenant_id       TEXT NOT NULL,
    PRIMARY KEY (subscription_id, resource_id, tag_key)
);
--bun:split
CREATE INDEX cost_resource_tags_tenant_key ON cost_resource_tags (tenant_id, tag_key, tag_value);
--bun:split

-- Amortised cost beside actual cost (cost_cents), in every table of days
-- and running totals: commitments' purchases spread over their terms. A
-- ledger holding actual cost only had no commitments to amortise as far
-- as it knew, so its amortised cost starts as its actual cost.
ALTER TABLE cost_daily ADD COLUMN amortized_cents BIGINT NOT NULL DEFAULT 0;
--bun:split
UPDATE cost_daily SET amortized_cents = cost_cents;
--bun:split
ALTER TABLE cost_service_daily ADD COLUMN amortized_cents BIGINT NOT NULL DEFAULT 0;
--bun:split
UPDATE cost_service_daily SET amortized_cents = cost_cents;
--bun:split
ALTER TABLE cost_tenant_daily ADD COLUMN amortized_cents BIGINT NOT NULL DEFAULT 0;
--bun:split
UPDATE cost_tenant_daily SET amortized_cents = cost_cents;
--bun:split
ALTER TABLE cost_service_cumulative ADD COLUMN amortized_cents BIGINT NOT NULL DEFAULT 0;
--bun:split
UPDATE cost_service_cumulative SET amortized_cents = cost_cents;
--bun:split
ALTER TABLE cost_tenant_cumulative ADD COLUMN amortized_cents BIGINT NOT NULL DEFAULT 0;
--bun:split
UPDATE cost_tenant_cumulative SET amortized_cents = cost_cents;
--bun:split

-- Whether a subscription's costs were fetched, since its first day, at
-- both grains and as both actual and amortised cost. A ledger synced
-- before then fetches the subscription from its first day again, once.
ALTER TABLE cost_sync_state ADD COLUMN grains_complete BOOLEAN NOT NULL DEFAULT FALSE;
