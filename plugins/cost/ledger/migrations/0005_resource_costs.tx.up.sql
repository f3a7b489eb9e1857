-- The same on both databases.

-- Each resource's actual cost over its subscription's resource-cost
-- period (cost_resource_period), in cents of its currency: what Cost
-- Management reports grouped by ResourceId, the resource id in lower case.
-- The costs of no resource are not kept. Replaced per subscription.
CREATE TABLE cost_resource (
    subscription_id TEXT   NOT NULL,
    resource_id     TEXT   NOT NULL,
    currency        TEXT   NOT NULL,
    tenant_id       TEXT   NOT NULL,
    cost_cents      BIGINT NOT NULL,
    PRIMARY KEY (subscription_id, resource_id, currency)
);
--bun:split
CREATE INDEX cost_resource_tenant ON cost_resource (tenant_id, resource_id);
--bun:split

-- The days, first_day through last_day, a subscription's resource costs
-- sum, and when they were fetched.
CREATE TABLE cost_resource_period (
    subscription_id TEXT      NOT NULL PRIMARY KEY,
    tenant_id       TEXT      NOT NULL,
    first_day       INTEGER   NOT NULL,
    last_day        INTEGER   NOT NULL,
    synced_at       TIMESTAMP NOT NULL
);
