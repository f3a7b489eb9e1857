DROP TABLE cost_exchange_rates;
