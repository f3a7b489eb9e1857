package reports

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/sdk"
)

// JobType names the folder ingest in the sync routes and the job log.
const JobType = "dmarc_reports"

// File states in dmarc_report_files.
const (
	FileStored    = "stored"
	FileDuplicate = "duplicate"
	FileFailed    = "failed"
	// FileUnmatched is a report about a domain of no tenant; it is read
	// again on later runs, since the domain may be added to a tenant.
	FileUnmatched = "unmatched"
)

// ProcessedFile is a folder file the ingest has read, by content.
type ProcessedFile struct {
	bun.BaseModel `bun:"table:dmarc_report_files,alias:f"`
	SHA256        string    `bun:"sha256,pk"`
	FileName      string    `bun:"file_name"`
	Status        string    `bun:"status"`
	Reason        string    `bun:"reason"`
	ReportPK      *int64    `bun:"report_pk"`
	ProcessedAt   time.Time `bun:"processed_at"`
}

// Ingest reads the reports of a folder. Each file is remembered by the
// SHA-256 of its content, so a file is ingested once whatever it is
// named and the folder may be read-only (a mailbox export's mount): a
// run reads only files it has not seen, and files whose domain matched
// no tenant before. A file that is not an acceptable report is recorded
// as failed with the reason and not read again; a run fails only when
// the folder or the database cannot be read.
type Ingest struct {
	Store    *Store
	TenantOf TenantOf
	// Dir is the folder; empty disables the ingest.
	Dir    string
	Limits Limits
	Now    func() time.Time
}

// Result counts what a run did with the folder's files.
type Result struct {
	Files, Stored, Duplicates, Failed, Unmatched, Skipped int
	// Tenants are those a report was stored for.
	Tenants []string
}

func (in *Ingest) now() time.Time {
	if in.Now != nil {
		return in.Now().UTC()
	}
	return time.Now().UTC()
}

// Job is the scheduled ingest, every 15 minutes.
func (in *Ingest) Job() sdk.Job {
	return sdk.Job{Name: "dmarc_reports", JobType: JobType, DataDomain: JobType, Schedule: "@every 15m",
		Run: func(ctx context.Context, run *sdk.JobRun) (int64, error) {
			res, err := in.Run(ctx, run.Logger, run.Progress)
			if err != nil {
				return 0, err
			}
			return int64(res.Stored), nil
		}}
}

// Run ingests the folder's new files, reporting progress after each.
func (in *Ingest) Run(ctx context.Context, logger hclog.Logger, progress func(done, total int64, message string)) (*Result, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	res := &Result{}
	if in.Dir == "" {
		logger.Info("no reports_dir configured; nothing to ingest")
		return res, nil
	}
	entries, err := os.ReadDir(in.Dir)
	if err != nil {
		return nil, fmt.Errorf("read reports_dir: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	res.Files = len(names)
	tenants := map[string]bool{}
	for i, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		status, err := in.file(ctx, logger, name, tenants)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		switch status {
		case FileStored:
			res.Stored++
		case FileDuplicate:
			res.Duplicates++
		case FileFailed:
			res.Failed++
		case FileUnmatched:
			res.Unmatched++
		default:
			res.Skipped++
		}
		if progress != nil {
			progress(int64(i+1), int64(len(names)), fmt.Sprintf("%d stored, %d duplicates, %d failed, %d for no tenant, %d seen before",
				res.Stored, res.Duplicates, res.Failed, res.Unmatched, res.Skipped))
		}
	}
	for t := range tenants {
		res.Tenants = append(res.Tenants, t)
	}
	sort.Strings(res.Tenants)
	logger.Info("reports ingested", "dir", in.Dir, "files", res.Files, "stored", res.Stored, "duplicates", res.Duplicates,
		"failed", res.Failed, "unmatched", res.Unmatched, "seen_before", res.Skipped, "tenants", len(res.Tenants))
	return res, nil
}

// file ingests one file and returns its state, or "" for a file seen
// before.
func (in *Ingest) file(ctx context.Context, logger hclog.Logger, name string, tenants map[string]bool) (string, error) {
	limit := in.Limits.withDefaults().MaxCompressed
	f, err := os.Open(filepath.Join(in.Dir, name))
	if err != nil {
		// Gone or unreadable since it was listed: the next run sees.
		logger.Warn("report file not readable", "file", name, "error", err)
		return "", nil
	}
	content, err := io.ReadAll(io.LimitReader(f, limit+1))
	_ = f.Close()
	if err != nil {
		logger.Warn("report file not readable", "file", name, "error", err)
		return "", nil
	}
	sum := sha256.Sum256(content)
	hash := hex.EncodeToString(sum[:])
	known := new(ProcessedFile)
	err = in.Store.DB.NewSelect().Model(known).Where("f.sha256 = ?", hash).Scan(ctx)
	switch {
	case err == nil && known.Status != FileUnmatched:
		return "", nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return "", err
	}
	record := &ProcessedFile{SHA256: hash, FileName: clip(name), ProcessedAt: in.now()}
	rep, err := Parse(bytes.NewReader(content), in.Limits)
	var pe *ParseError
	switch {
	case errors.As(err, &pe):
		record.Status, record.Reason = FileFailed, pe.Error()
		logger.Warn("report file refused", "file", name, "reason", record.Reason)
	case err != nil:
		return "", err
	default:
		owner, ok, err := in.TenantOf(ctx, rep.Domain)
		if err != nil {
			return "", err
		}
		if !ok {
			record.Status, record.Reason = FileUnmatched, "the report is about "+rep.Domain+", a domain of no tenant"
			logger.Info("report file skipped", "file", name, "reason", record.Reason)
			break
		}
		stored, dup, err := in.Store.Insert(ctx, rep, Meta{TenantID: owner, Source: SourceFolder, FileName: record.FileName, SHA256: hash, ReceivedAt: record.ProcessedAt})
		if err != nil {
			return "", err
		}
		record.Status, record.ReportPK = FileStored, &stored.ID
		if dup {
			record.Status, record.Reason = FileDuplicate, fmt.Sprintf("report %s of %s is stored already", rep.ReportID, rep.OrgName)
		} else {
			tenants[owner] = true
		}
	}
	_, err = in.Store.DB.NewInsert().Model(record).
		On("CONFLICT (sha256) DO UPDATE").Set("file_name = EXCLUDED.file_name, status = EXCLUDED.status, reason = EXCLUDED.reason, report_pk = EXCLUDED.report_pk, processed_at = EXCLUDED.processed_at").
		Exec(ctx)
	return record.Status, err
}

// Files lists the processed files, newest first, for an operator asking
// why a file was not ingested.
func (s *Store) Files(ctx context.Context, limit int) ([]ProcessedFile, error) {
	out := []ProcessedFile{}
	err := s.DB.NewSelect().Model(&out).OrderExpr("f.processed_at DESC, f.file_name").Limit(int64(limit)).Scan(ctx)
	return out, err
}
