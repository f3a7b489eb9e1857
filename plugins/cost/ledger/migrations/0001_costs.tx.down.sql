DROP TABLE cost_reservations;
--bun:split
DROP TABLE cost_sync_state;
--bun:split
DROP TABLE cost_tenant_daily;
--bun:split
DROP TABLE cost_service_daily;
--bun:split
DROP TABLE cost_daily;
