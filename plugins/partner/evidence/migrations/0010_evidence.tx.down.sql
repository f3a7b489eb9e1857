DROP TABLE partner_evidence_files;
--bun:split
DROP TABLE partner_evidence;
