DROP TABLE notification_deliveries;

--bun:split

DROP TABLE notification_events;

--bun:split

DROP TABLE notification_subscriptions;

--bun:split

DROP TABLE notification_channels;
