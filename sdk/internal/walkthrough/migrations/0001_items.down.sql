DROP TABLE acme_evidence_items;
