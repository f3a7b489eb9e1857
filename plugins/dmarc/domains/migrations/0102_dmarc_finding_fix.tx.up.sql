-- What to change to resolve a finding, where the check says.
ALTER TABLE dmarc_findings ADD COLUMN fix TEXT NOT NULL DEFAULT '';
