-- Daily actual cost as the cloud reports it: one row per subscription,
-- day, service, resource group and currency. Amounts are integer cents of
-- the row's currency; days are days since 1970-01-01 (UTC), months yyyymm.
CREATE TABLE cost_daily (
    subscription_id TEXT    NOT NULL,
    day             INTEGER NOT NULL,
    service         TEXT    NOT NULL,
    resource_group  TEXT    NOT NULL,
    currency        TEXT    NOT NULL,
    tenant_id       TEXT    NOT NULL,
    month           INTEGER NOT NULL,
    cost_cents      BIGINT  NOT NULL,
    PRIMARY KEY (subscription_id, day, service, resource_group, currency)
);
--bun:split
CREATE INDEX cost_daily_tenant_day ON cost_daily (tenant_id, day);
--bun:split

-- Rollup: one row per tenant, day, service and currency (subscriptions and
-- resource groups summed). Rebuilt by the sync for the days it wrote.
CREATE TABLE cost_service_daily (
    tenant_id  TEXT    NOT NULL,
    day        INTEGER NOT NULL,
    service    TEXT    NOT NULL,
    currency   TEXT    NOT NULL,
    month      INTEGER NOT NULL,
    cost_cents BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, day, service, currency)
);
--bun:split
CREATE INDEX cost_service_daily_day ON cost_service_daily (day, tenant_id);
--bun:split

-- Rollup: one row per tenant, day and currency.
CREATE TABLE cost_tenant_daily (
    tenant_id  TEXT    NOT NULL,
    day        INTEGER NOT NULL,
    currency   TEXT    NOT NULL,
    month      INTEGER NOT NULL,
    cost_cents BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, day, currency)
);
--bun:split
CREATE INDEX cost_tenant_daily_day ON cost_tenant_daily (day, tenant_id);
--bun:split

-- How far each subscription's costs have been synced, so a later sync
-- re-fetches only the most recent days.
CREATE TABLE cost_sync_state (
    subscription_id TEXT        NOT NULL PRIMARY KEY,
    tenant_id       TEXT        NOT NULL,
    first_day       INTEGER     NOT NULL,
    last_day        INTEGER     NOT NULL,
    synced_at       TIMESTAMPTZ NOT NULL
);
--bun:split

-- Reservation utilisation of a tenant's billing account, per day.
CREATE TABLE cost_reservations (
    tenant_id            TEXT             NOT NULL,
    reservation_id       TEXT             NOT NULL,
    day                  INTEGER          NOT NULL,
    reservation_order_id TEXT             NOT NULL DEFAULT '',
    sku                  TEXT             NOT NULL DEFAULT '',
    reserved_hours       DOUBLE PRECISION NOT NULL,
    used_hours           DOUBLE PRECISION NOT NULL,
    min_utilization      DOUBLE PRECISION NOT NULL,
    avg_utilization      DOUBLE PRECISION NOT NULL,
    max_utilization      DOUBLE PRECISION NOT NULL,
    synced_at            TIMESTAMPTZ      NOT NULL,
    PRIMARY KEY (tenant_id, reservation_id, day)
);
