DROP TABLE cost_budget_alerts;
--bun:split
DROP TABLE cost_budgets;
