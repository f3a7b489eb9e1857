-- The same on both databases.

-- Daily exchange rates: units of quote per 1 of base (the reporting
-- currency) on day (days since 1970-01-01), exactly, as an integer of
-- 1e-10 units (rate_e10); source names where the rate came from. Days
-- without a published rate (weekends, holidays) have no row. The sync
-- writes a day again when it fetches it again.
CREATE TABLE cost_exchange_rates (
    base      TEXT      NOT NULL,
    quote     TEXT      NOT NULL,
    day       INTEGER   NOT NULL,
    rate_e10  BIGINT    NOT NULL,
    source    TEXT      NOT NULL,
    synced_at TIMESTAMP NOT NULL,
    PRIMARY KEY (base, quote, day)
);
