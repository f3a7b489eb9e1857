package reports

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/sdk"
)

// MailboxJobType names the mailbox sync in the sync routes, the job log
// and the freshness of the data it keeps.
const MailboxJobType = "dmarc_mailbox"

// DefaultMailboxFolder is the folder read when the config names none.
const DefaultMailboxFolder = "inbox"

// Attachment states in dmarc_mailbox_attachments, besides the files'
// FileStored, FileDuplicate and FileFailed.
const (
	// AttachmentForeign is a report about a domain that is not the
	// mailbox tenant's: it is not stored, whoever's domain it is.
	AttachmentForeign = "foreign"
)

// MailboxState is a mailbox folder's watermark: the time of the newest
// message read.
type MailboxState struct {
	bun.BaseModel `bun:"table:dmarc_mailboxes,alias:mb"`
	TenantID      string    `bun:"tenant_id,pk"`
	Mailbox       string    `bun:"mailbox,pk"`
	Folder        string    `bun:"folder,pk"`
	Watermark     time.Time `bun:"watermark,nullzero"`
	SyncedAt      time.Time `bun:"synced_at"`
}

// MailAttachment is an attachment the sync has read, with what became of
// it.
type MailAttachment struct {
	bun.BaseModel `bun:"table:dmarc_mailbox_attachments,alias:ma"`
	TenantID      string    `bun:"tenant_id,pk"`
	Mailbox       string    `bun:"mailbox,pk"`
	MessageID     string    `bun:"message_id,pk"`
	AttachmentID  string    `bun:"attachment_id,pk"`
	Subject       string    `bun:"subject"`
	FileName      string    `bun:"file_name"`
	ReceivedAt    time.Time `bun:"received_at"`
	Status        string    `bun:"status"`
	Reason        string    `bun:"reason"`
	ReportPK      *int64    `bun:"report_pk"`
	SHA256        string    `bun:"sha256"`
	ProcessedAt   time.Time `bun:"processed_at"`
}

// Mail lists a mailbox folder's messages and their attachments;
// *cloud.GraphClient is one.
type Mail interface {
	MailMessages(ctx context.Context, mailbox, folder string, since time.Time, fn func(cloud.MailMessage) error) error
	MailAttachments(ctx context.Context, mailbox, messageID string, fn func(cloud.MailAttachment) error) error
}

// MailboxSync fetches each tenant's aggregate reports from its report
// mailboxes through Microsoft Graph, and looks up the sources of the
// tenant's records, however they arrived.
//
// The mailboxes are the tenant's (see Mailboxes: the rua addresses of
// its domains' DMARC records at its own domains), each read in Folder.
// A run lists the messages received since the folder's watermark, oldest
// first, reads each new message's file attachments and parses each as an
// upload is parsed: a report about one of the tenant's domains is stored
// (a report the tenant has, uploaded or fetched before, is a duplicate
// and counts once), one about another domain is not (foreign), and an
// attachment that is not an acceptable report is recorded as failed with
// the reason, and the run goes on. Every attachment is remembered, so a
// message is read once; the watermark moves to the newest message read.
type MailboxSync struct {
	Store *Store
	// Enabled turns the fetching on; the source lookups run either way.
	Enabled  bool
	TenantOf TenantOf
	// Mailboxes names a tenant's report mailboxes.
	Mailboxes func(ctx context.Context, tenantID string) ([]string, error)
	// Mail is the Graph client of a directory.
	Mail   func(directoryTenantID string) Mail
	Folder string
	// Enricher looks up the records' sources; nil looks up none.
	Enricher *Enricher
	Limits   Limits
	Now      func() time.Time
}

func (m *MailboxSync) now() time.Time {
	if m.Now != nil {
		return m.Now().UTC()
	}
	return time.Now().UTC()
}

func (m *MailboxSync) folder() string {
	if m.Folder == "" {
		return DefaultMailboxFolder
	}
	return m.Folder
}

// Job is the sync, every 15 minutes, a tenant at a time. With fetching
// on it keeps the dmarc_mailbox domain: a tenant whose mailboxes were
// read is fresh, one whose read failed is marked failed with the reason.
func (m *MailboxSync) Job() sdk.Job {
	job := sdk.Job{Name: MailboxJobType, JobType: MailboxJobType, Schedule: "@every 15m", EachTenant: m.Tenant}
	if m.Enabled {
		job.DataDomain = MailboxJobType
	}
	return job
}

// MailboxResult counts what a tenant's run did with the attachments.
type MailboxResult struct {
	Mailboxes, Messages, Stored, Duplicates, Failed, Foreign int
}

// Tenant syncs one tenant: its mailboxes, then its records' sources. It
// returns the reports stored.
func (m *MailboxSync) Tenant(ctx context.Context, run *sdk.JobRun, t sdk.Tenant) (int64, error) {
	logger := run.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	var res MailboxResult
	var err error
	if m.Enabled && t.DirectoryTenantID != "" {
		res, err = m.Fetch(ctx, logger, t.ID, m.Mail(t.DirectoryTenantID))
		if err != nil {
			return int64(res.Stored), err
		}
		logger.Info("mailbox reports fetched", "tenant", t.ID, "mailboxes", res.Mailboxes, "messages", res.Messages, "stored", res.Stored,
			"duplicates", res.Duplicates, "failed", res.Failed, "foreign", res.Foreign)
	}
	if m.Enricher != nil {
		er, err := m.Enricher.Enrich(ctx, m.Store, t.ID)
		if err != nil {
			return int64(res.Stored), fmt.Errorf("source lookups: %w", err)
		}
		logger.Info("report sources looked up", "tenant", t.ID, "addresses", er.Addresses, "failed", er.Failed, "left", er.Left, "records", er.Records)
	}
	return int64(res.Stored), nil
}

// Fetch reads the tenant's mailboxes through mail.
func (m *MailboxSync) Fetch(ctx context.Context, logger hclog.Logger, tenantID string, mail Mail) (MailboxResult, error) {
	var res MailboxResult
	boxes, err := m.Mailboxes(ctx, tenantID)
	if err != nil {
		return res, fmt.Errorf("report mailboxes: %w", err)
	}
	for _, box := range boxes {
		if err := m.mailbox(ctx, logger, tenantID, box, mail, &res); err != nil {
			return res, fmt.Errorf("mailbox %s: %w", box, err)
		}
		res.Mailboxes++
	}
	return res, nil
}

// mailbox reads one mailbox's folder from its watermark. The watermark
// is saved as far as the messages were read, failure or not.
func (m *MailboxSync) mailbox(ctx context.Context, logger hclog.Logger, tenantID, box string, mail Mail, res *MailboxResult) error {
	state := &MailboxState{TenantID: tenantID, Mailbox: box, Folder: m.folder()}
	err := m.Store.DB.NewSelect().Model(state).WherePK().Scan(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	// The messages of the watermark's instant are listed again; those
	// read before are known by id.
	var seen []string
	if !state.Watermark.IsZero() {
		if err := m.Store.DB.NewSelect().Model((*MailAttachment)(nil)).Column("message_id").
			Where("tenant_id = ? AND mailbox = ? AND received_at >= ?", tenantID, box, state.Watermark).Scan(ctx, &seen); err != nil {
			return err
		}
	}
	known := make(map[string]bool, len(seen))
	for _, id := range seen {
		known[id] = true
	}
	watermark := state.Watermark
	err = mail.MailMessages(ctx, box, state.Folder, state.Watermark, func(msg cloud.MailMessage) error {
		if known[msg.ID] {
			return nil
		}
		if err := m.message(ctx, logger, tenantID, box, mail, msg, res); err != nil {
			return err
		}
		res.Messages++
		if msg.Received.After(watermark) {
			watermark = msg.Received
		}
		return nil
	})
	state.Watermark, state.SyncedAt = watermark.UTC(), m.now()
	if _, serr := m.Store.DB.NewInsert().Model(state).On("CONFLICT (tenant_id, mailbox, folder) DO UPDATE").
		Set("watermark = EXCLUDED.watermark, synced_at = EXCLUDED.synced_at").Exec(ctx); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

// message reads a message's file attachments, each as an upload. A
// message without attachments is remembered as one attachment-less row,
// so it is not read again either.
func (m *MailboxSync) message(ctx context.Context, logger hclog.Logger, tenantID, box string, mail Mail, msg cloud.MailMessage, res *MailboxResult) error {
	var rows []MailAttachment
	err := mail.MailAttachments(ctx, box, msg.ID, func(a cloud.MailAttachment) error {
		row, err := m.attachment(ctx, logger, tenantID, box, msg, a)
		if err != nil {
			return err
		}
		switch row.Status {
		case FileStored:
			res.Stored++
		case FileDuplicate:
			res.Duplicates++
		case FileFailed:
			res.Failed++
		case AttachmentForeign:
			res.Foreign++
		}
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		rows = append(rows, MailAttachment{Status: FileFailed, Reason: "the message has no file attachment"})
	}
	for i := range rows {
		rows[i].TenantID, rows[i].Mailbox, rows[i].MessageID, rows[i].Subject = tenantID, box, msg.ID, fileName(msg.Subject)
		rows[i].ReceivedAt, rows[i].ProcessedAt = msg.Received.UTC(), m.now()
	}
	_, err = m.Store.DB.NewInsert().Model(&rows).On("CONFLICT (tenant_id, mailbox, message_id, attachment_id) DO NOTHING").Exec(ctx)
	return err
}

// attachment parses and stores one attachment.
func (m *MailboxSync) attachment(ctx context.Context, logger hclog.Logger, tenantID, box string, msg cloud.MailMessage, a cloud.MailAttachment) (MailAttachment, error) {
	sum := sha256.Sum256(a.Content)
	row := MailAttachment{AttachmentID: a.ID, FileName: fileName(a.Name), SHA256: hex.EncodeToString(sum[:])}
	rep, err := Parse(bytes.NewReader(a.Content), m.Limits)
	var pe *ParseError
	switch {
	case errors.As(err, &pe):
		row.Status, row.Reason = FileFailed, pe.Error()
		logger.Warn("mailbox attachment refused", "mailbox", box, "message", msg.ID, "attachment", a.Name, "reason", row.Reason)
		return row, nil
	case err != nil:
		return row, err
	}
	owner, ok, err := m.TenantOf(ctx, rep.Domain)
	if err != nil {
		return row, err
	}
	if !ok || owner != tenantID {
		row.Status, row.Reason = AttachmentForeign, "the report is about "+rep.Domain+", which is not a domain of the tenant"
		return row, nil
	}
	stored, dup, err := m.Store.Insert(ctx, rep, Meta{TenantID: tenantID, Source: SourceMailbox, FileName: row.FileName, SHA256: row.SHA256, ReceivedAt: msg.Received})
	if err != nil {
		return row, err
	}
	row.Status, row.ReportPK = FileStored, &stored.ID
	reasons := rep.Warnings
	if dup {
		row.Status = FileDuplicate
		reasons = append([]string{fmt.Sprintf("report %s of %s is stored already", rep.ReportID, rep.OrgName)}, reasons...)
	}
	row.Reason = strings.Join(reasons, "; ")
	return row, nil
}

// Attachments lists the tenants' attachments the sync has read, newest
// first.
func (s *Store) Attachments(ctx context.Context, tenantIDs []string, limit int) ([]MailAttachment, error) {
	out := []MailAttachment{}
	if len(tenantIDs) == 0 {
		return out, nil
	}
	err := s.DB.NewSelect().Model(&out).Where("ma.tenant_id IN (?)", bun.List(tenantIDs)).
		OrderExpr("ma.processed_at DESC, ma.received_at DESC, ma.message_id, ma.attachment_id").Limit(int64(limit)).Scan(ctx)
	return out, err
}
