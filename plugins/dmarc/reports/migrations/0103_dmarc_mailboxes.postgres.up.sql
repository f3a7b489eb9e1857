CREATE TABLE dmarc_mailboxes (
    tenant_id     TEXT NOT NULL,
    mailbox       TEXT NOT NULL,
    folder        TEXT NOT NULL,
    watermark     TIMESTAMPTZ,
    synced_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, mailbox, folder)
);
--bun:split
CREATE TABLE dmarc_mailbox_attachments (
    tenant_id     TEXT NOT NULL,
    mailbox       TEXT NOT NULL,
    message_id    TEXT NOT NULL,
    attachment_id TEXT NOT NULL,
    subject       TEXT NOT NULL,
    file_name     TEXT NOT NULL,
    received_at   TIMESTAMPTZ NOT NULL,
    status        TEXT NOT NULL,
    reason        TEXT NOT NULL,
    report_pk     BIGINT,
    sha256        TEXT NOT NULL,
    processed_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, mailbox, message_id, attachment_id)
);
--bun:split
CREATE INDEX dmarc_mailbox_attachments_processed ON dmarc_mailbox_attachments (tenant_id, processed_at);
