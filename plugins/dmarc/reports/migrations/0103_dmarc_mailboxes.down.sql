DROP TABLE dmarc_mailbox_attachments;
--bun:split
DROP TABLE dmarc_mailboxes;
