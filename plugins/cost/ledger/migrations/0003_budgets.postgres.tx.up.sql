-- Budgets: a spending limit for a tenant or one of its subscriptions, per
-- period of its time grain. Amounts are integer cents of the budget's
-- currency, days are days since 1970-01-01. subscription_id is '' for a
-- budget of the whole tenant, so the name is unique per tenant and scope.
-- source is 'steward' for a budget created here (its spend comes from the
-- ledger) and 'provider' for one pulled from the cloud (its spend is the
-- provider's). The spend, utilisation and status are those of the period
-- starting on period_start, as last evaluated.
CREATE TABLE cost_budgets (
    id                   TEXT             NOT NULL PRIMARY KEY,
    tenant_id            TEXT             NOT NULL,
    subscription_id      TEXT             NOT NULL DEFAULT '',
    name                 TEXT             NOT NULL,
    name_key             TEXT             NOT NULL,
    amount_cents         BIGINT           NOT NULL,
    currency             TEXT             NOT NULL,
    time_grain           TEXT             NOT NULL,
    start_day            INTEGER          NOT NULL,
    end_day              INTEGER,
    thresholds           TEXT             NOT NULL,
    notifications        TEXT,
    source               TEXT             NOT NULL,
    provider_name        TEXT             NOT NULL DEFAULT '',
    provider_etag        TEXT             NOT NULL DEFAULT '',
    period_start         INTEGER          NOT NULL,
    current_spend_cents  BIGINT           NOT NULL DEFAULT 0,
    forecast_spend_cents BIGINT           NOT NULL DEFAULT 0,
    utilization_percent  DOUBLE PRECISION NOT NULL DEFAULT 0,
    status               TEXT             NOT NULL DEFAULT 'active',
    created_by           TEXT             NOT NULL DEFAULT '',
    created_at           TIMESTAMPTZ      NOT NULL,
    updated_at           TIMESTAMPTZ      NOT NULL,
    evaluated_at         TIMESTAMPTZ,
    synced_at            TIMESTAMPTZ
);
--bun:split
CREATE UNIQUE INDEX cost_budgets_name ON cost_budgets (tenant_id, subscription_id, name_key);
--bun:split
CREATE INDEX cost_budgets_tenant_created ON cost_budgets (tenant_id, created_at);
--bun:split

-- A budget's alerts: one per threshold crossed per period of the budget
-- (the unique index), pending until someone acknowledges it.
CREATE TABLE cost_budget_alerts (
    id                  BIGSERIAL        PRIMARY KEY,
    budget_id           TEXT             NOT NULL,
    tenant_id           TEXT             NOT NULL,
    alert_type          TEXT             NOT NULL,
    threshold           INTEGER          NOT NULL,
    period_start        INTEGER          NOT NULL,
    spend_cents         BIGINT           NOT NULL,
    amount_cents        BIGINT           NOT NULL,
    currency            TEXT             NOT NULL,
    utilization_percent DOUBLE PRECISION NOT NULL,
    contact_emails      TEXT             NOT NULL,
    message             TEXT             NOT NULL,
    status              TEXT             NOT NULL,
    created_at          TIMESTAMPTZ      NOT NULL,
    acknowledged_at     TIMESTAMPTZ,
    acknowledged_by     TEXT,
    resolution_note     TEXT
);
--bun:split
CREATE UNIQUE INDEX cost_budget_alerts_crossing ON cost_budget_alerts (budget_id, period_start, alert_type, threshold);
--bun:split
CREATE INDEX cost_budget_alerts_tenant ON cost_budget_alerts (tenant_id, created_at);
