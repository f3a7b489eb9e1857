DROP TABLE compliance_defender_revisions;
--bun:split
DROP TABLE compliance_defender_controls;
--bun:split
DROP TABLE compliance_defender_scores;
--bun:split
DROP TABLE compliance_defender_assessments;
