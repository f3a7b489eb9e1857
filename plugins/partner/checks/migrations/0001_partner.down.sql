DROP TABLE partner_results;
--bun:split
DROP TABLE partner_snapshots;
