DROP TABLE acme_evidence;
