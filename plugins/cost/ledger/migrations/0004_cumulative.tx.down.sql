DROP TABLE cost_cumulative_extent;
--bun:split
DROP TABLE cost_tenant_cumulative;
--bun:split
DROP TABLE cost_service_cumulative;
