-- Custom compliance rules: a JSON Schema (draft 2020-12) a tenant's
-- records of one category must satisfy. A rule is never removed: DELETE
-- marks it deleted (deleted, deleted_at, is_active false) and every read
-- skips it. evaluated_at, subjects_evaluated and violation_count describe
-- the last evaluation the sync stored; a change of the rule clears them.
CREATE TABLE compliance_rules (
    id                 BIGSERIAL   PRIMARY KEY,
    tenant_id          TEXT        NOT NULL,
    rule_name          TEXT        NOT NULL,
    rule_description   TEXT,
    category           TEXT        NOT NULL,
    resource_type      TEXT,
    severity           TEXT        NOT NULL,
    effect             TEXT        NOT NULL,
    schema             TEXT        NOT NULL,
    is_active          BOOLEAN     NOT NULL DEFAULT TRUE,
    deleted            BOOLEAN     NOT NULL DEFAULT FALSE,
    deleted_at         TIMESTAMPTZ,
    created_by         TEXT        NOT NULL,
    created_at         TIMESTAMPTZ NOT NULL,
    updated_at         TIMESTAMPTZ NOT NULL,
    evaluated_at       TIMESTAMPTZ,
    subjects_evaluated INTEGER     NOT NULL DEFAULT 0,
    violation_count    INTEGER     NOT NULL DEFAULT 0
);
--bun:split
CREATE INDEX compliance_rules_tenant ON compliance_rules (tenant_id, deleted, id);
--bun:split

-- What a rule's last stored evaluation found: one row per failed schema
-- keyword of a subject (a resource's ARM id, or the tenant for the
-- tenant-wide categories), replaced whole at each evaluation.
CREATE TABLE compliance_rule_violations (
    id            BIGSERIAL   PRIMARY KEY,
    rule_id       BIGINT      NOT NULL,
    tenant_id     TEXT        NOT NULL,
    subject       TEXT        NOT NULL,
    subject_name  TEXT        NOT NULL,
    instance_path TEXT        NOT NULL,
    keyword       TEXT        NOT NULL,
    schema_path   TEXT        NOT NULL,
    message       TEXT        NOT NULL,
    evaluated_at  TIMESTAMPTZ NOT NULL
);
--bun:split
CREATE INDEX compliance_rule_violations_rule ON compliance_rule_violations (rule_id, tenant_id);
--bun:split
CREATE INDEX compliance_rule_violations_tenant ON compliance_rule_violations (tenant_id, rule_id);
