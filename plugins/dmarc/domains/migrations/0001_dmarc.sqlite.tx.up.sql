-- The domains whose mail authentication is checked: each tenant's verified
-- domains from Microsoft Graph and those an admin added, with the latest
-- posture on the row. A domain is watched for one tenant only.
CREATE TABLE dmarc_domains (
    id            TEXT        PRIMARY KEY,
    tenant_id     TEXT        NOT NULL,
    domain        TEXT        NOT NULL,
    source        TEXT        NOT NULL,
    is_default    BOOLEAN     NOT NULL DEFAULT FALSE,
    selectors     TEXT        NOT NULL DEFAULT '',
    created_by    TEXT        NOT NULL DEFAULT '',
    created_at    TIMESTAMP   NOT NULL,
    checked_at    TIMESTAMP,
    score         INTEGER,
    grade         TEXT,
    dmarc_policy  TEXT,
    spf_lookups   INTEGER,
    dkim_present  INTEGER,
    result        TEXT,
    dns_error     TEXT        NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX dmarc_domains_domain ON dmarc_domains (domain);
CREATE INDEX dmarc_domains_tenant ON dmarc_domains (tenant_id, domain);
CREATE INDEX dmarc_domains_score ON dmarc_domains (tenant_id, score);

-- The findings of each domain's latest check.
CREATE TABLE dmarc_findings (
    domain_id  TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    tenant_id  TEXT    NOT NULL,
    code       TEXT    NOT NULL,
    severity   TEXT    NOT NULL,
    message    TEXT    NOT NULL,
    PRIMARY KEY (domain_id, position)
);
CREATE INDEX dmarc_findings_code ON dmarc_findings (tenant_id, code);

-- Every check of a domain, for its trend, with the lookups DNS failed.
CREATE TABLE dmarc_history (
    domain_id     TEXT        NOT NULL,
    checked_at    TIMESTAMP   NOT NULL,
    tenant_id     TEXT        NOT NULL,
    score         INTEGER,
    grade         TEXT,
    dmarc_policy  TEXT,
    spf_lookups   INTEGER,
    dkim_present  INTEGER,
    dns_error     TEXT        NOT NULL DEFAULT '',
    PRIMARY KEY (domain_id, checked_at)
);

-- The weakenings a check found against what was known before it.
CREATE TABLE dmarc_events (
    id           INTEGER     PRIMARY KEY AUTOINCREMENT,
    tenant_id    TEXT        NOT NULL,
    domain_id    TEXT        NOT NULL,
    domain       TEXT        NOT NULL,
    code         TEXT        NOT NULL,
    severity     TEXT        NOT NULL,
    message      TEXT        NOT NULL,
    occurred_at  TIMESTAMP   NOT NULL
);
CREATE INDEX dmarc_events_tenant ON dmarc_events (tenant_id, occurred_at);
