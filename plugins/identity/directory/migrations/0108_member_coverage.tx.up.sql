-- The same on both databases. MFA coverage counts the enabled members
-- only: guests and disabled accounts are counted apart. Each tenant's
-- latest snapshot is given the counts of the directory stored with it;
-- earlier days were not counted and keep NULL, which the trend leaves out.
ALTER TABLE identity_snapshots ADD COLUMN member_users INTEGER;
--bun:split
ALTER TABLE identity_snapshots ADD COLUMN member_mfa_users INTEGER;
--bun:split
UPDATE identity_snapshots SET
    member_users = (SELECT COUNT(*) FROM identity_users u
        WHERE u.tenant_id = identity_snapshots.tenant_id AND u.account_enabled AND u.user_type <> 'Guest'),
    member_mfa_users = (SELECT COUNT(*) FROM identity_users u
        WHERE u.tenant_id = identity_snapshots.tenant_id AND u.account_enabled AND u.user_type <> 'Guest' AND u.mfa_registered)
WHERE day = (SELECT MAX(s.day) FROM identity_snapshots s WHERE s.tenant_id = identity_snapshots.tenant_id);
