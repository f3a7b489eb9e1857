DROP TABLE cost_allocation_rules;
