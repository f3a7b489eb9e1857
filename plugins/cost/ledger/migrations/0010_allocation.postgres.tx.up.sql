-- A brand's cost allocation rules, in the order they are tried
-- (position, from 0): the first rule a cost matches allocates it. kind is
-- subscription (subscription_id), resource_group (subscription_id and
-- resource_group, compared without case), tag (tag_key, lower case, and
-- tag_value) or cost_centre_tag (tag_key, whose value names the cost
-- centre). A rule of any kind but cost_centre_tag gives its cost to
-- cost_centre, or, when split is even, proportional or fixed, shares it
-- between the cost centres of shares (a JSON list of names with, for
-- fixed, each one's hundredths of a percent). A brand's rules are
-- replaced together.
CREATE TABLE cost_allocation_rules (
    brand_id        TEXT        NOT NULL,
    position        INTEGER     NOT NULL,
    kind            TEXT        NOT NULL,
    subscription_id TEXT        NOT NULL DEFAULT '',
    resource_group  TEXT        NOT NULL DEFAULT '',
    tag_key         TEXT        NOT NULL DEFAULT '',
    tag_value       TEXT        NOT NULL DEFAULT '',
    cost_centre     TEXT        NOT NULL DEFAULT '',
    split           TEXT        NOT NULL DEFAULT '',
    shares          TEXT,
    updated_by      TEXT        NOT NULL DEFAULT '',
    updated_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (brand_id, position)
);
