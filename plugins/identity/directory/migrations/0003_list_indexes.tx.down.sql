DROP INDEX identity_users_type;
--bun:split
DROP INDEX identity_devices_state;
