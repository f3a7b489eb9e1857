-- The same on both databases. Indexes for the lists the identity page
-- shows first: noncompliant devices, longest unsynced first, and guests,
-- oldest first. Without them each read scans the tenant's devices or
-- users; at 50,000 users (43,000 devices) on SQLite a page of either took
-- four times as long.
CREATE INDEX identity_devices_state ON identity_devices (tenant_id, compliance_state, last_sync);
--bun:split
CREATE INDEX identity_users_type ON identity_users (tenant_id, user_type, created_at);
