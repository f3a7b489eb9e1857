DROP TABLE cost_resource_period;
--bun:split
DROP TABLE cost_resource;
