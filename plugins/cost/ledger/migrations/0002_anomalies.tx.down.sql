DROP TABLE cost_anomalies;
