-- The same on both databases: recursive CTEs and window functions are
-- common to PostgreSQL and SQLite.

-- Running totals, so a sum over any range of days reads two rows per
-- series whatever the range's length: cost_cents is the series' cost from
-- its tenant's first rolled-up day through day (inclusive) and days how
-- many of those days have a row in the daily rollup. The cost of days
-- a..b is the row of b (or of the tenant's last day, when b is later)
-- minus the row of a − 1; a series without a row on a day had no costs
-- up to it. Rows are dense: every series of a tenant has a row on every
-- day from the tenant's first rolled-up day, or the series' first, through
-- cost_cumulative_extent.last_day. Rebuilt by the ledger's rollup from the
-- first day it rewrites on.
CREATE TABLE cost_service_cumulative (
    tenant_id  TEXT    NOT NULL,
    day        INTEGER NOT NULL,
    service    TEXT    NOT NULL,
    currency   TEXT    NOT NULL,
    cost_cents BIGINT  NOT NULL,
    days       INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, day, service, currency)
);
--bun:split

-- The same per tenant and currency.
CREATE TABLE cost_tenant_cumulative (
    tenant_id  TEXT    NOT NULL,
    day        INTEGER NOT NULL,
    currency   TEXT    NOT NULL,
    cost_cents BIGINT  NOT NULL,
    days       INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, day, currency)
);
--bun:split

-- The last day of each tenant's running totals: its last day with costs
-- when it was last rolled up.
CREATE TABLE cost_cumulative_extent (
    tenant_id TEXT    NOT NULL PRIMARY KEY,
    last_day  INTEGER NOT NULL
);
--bun:split

-- The running totals of the costs already rolled up, from each tenant's
-- first day with costs, written in the order reads fetch them: a tenant's
-- day together.
INSERT INTO cost_service_cumulative (tenant_id, day, service, currency, cost_cents, days)
WITH RECURSIVE bounds AS (SELECT tenant_id, MIN(day) AS first_day, MAX(day) AS last_day FROM cost_tenant_daily GROUP BY tenant_id),
span (tenant_id, day, last_day) AS (
    SELECT tenant_id, first_day, last_day FROM bounds
    UNION ALL SELECT tenant_id, day + 1, last_day FROM span WHERE day < last_day),
series AS (SELECT DISTINCT tenant_id, service, currency FROM cost_service_daily)
SELECT series.tenant_id, span.day, series.service, series.currency,
    SUM(COALESCE(d.cost_cents, 0)) OVER w, COUNT(d.day) OVER w
FROM series JOIN span ON span.tenant_id = series.tenant_id
LEFT JOIN cost_service_daily d ON d.tenant_id = series.tenant_id AND d.day = span.day AND d.service = series.service AND d.currency = series.currency
WINDOW w AS (PARTITION BY series.tenant_id, series.service, series.currency ORDER BY span.day ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
ORDER BY series.tenant_id, span.day;
--bun:split
INSERT INTO cost_tenant_cumulative (tenant_id, day, currency, cost_cents, days)
WITH RECURSIVE bounds AS (SELECT tenant_id, MIN(day) AS first_day, MAX(day) AS last_day FROM cost_tenant_daily GROUP BY tenant_id),
span (tenant_id, day, last_day) AS (
    SELECT tenant_id, first_day, last_day FROM bounds
    UNION ALL SELECT tenant_id, day + 1, last_day FROM span WHERE day < last_day),
series AS (SELECT DISTINCT tenant_id, currency FROM cost_tenant_daily)
SELECT series.tenant_id, span.day, series.currency,
    SUM(COALESCE(d.cost_cents, 0)) OVER w, COUNT(d.day) OVER w
FROM series JOIN span ON span.tenant_id = series.tenant_id
LEFT JOIN cost_tenant_daily d ON d.tenant_id = series.tenant_id AND d.day = span.day AND d.currency = series.currency
WINDOW w AS (PARTITION BY series.tenant_id, series.currency ORDER BY span.day ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
ORDER BY series.tenant_id, span.day;
--bun:split
INSERT INTO cost_cumulative_extent (tenant_id, last_day)
SELECT tenant_id, MAX(day) FROM cost_tenant_daily GROUP BY tenant_id;
