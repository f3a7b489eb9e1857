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
	"io/fs"
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
	SHA256        string `bun:"sha256,pk"`
	FileName      string `bun:"file_name"`
	Status        string `bun:"status"`
	Reason        string `bun:"reason"`
	ReportPK      *int64 `bun:"report_pk"`
	// FileSize and ModifiedAt are the file's when it was read: a file
	// unchanged since, by name, size and time, is not read again.
	FileSize    int64     `bun:"file_size"`
	ModifiedAt  time.Time `bun:"modified_at"`
	ProcessedAt time.Time `bun:"processed_at"`
}

// seenKey identifies a file by name, size and modification time.
func seenKey(name string, size int64, mod time.Time) string {
	return fmt.Sprintf("%s\x00%d\x00%d", name, size, mod.UTC().UnixMicro())
}

// Ingest reads the reports of a folder. Each file is remembered by the
// SHA-256 of its content, so a file is ingested once whatever it is
// named and the folder may be read-only (a mailbox export's mount): a
// run reads only files it has not seen — one whose name, size and
// modification time are those recorded is not even opened — and files
// whose domain matched no tenant before. A file that is not an acceptable report is recorded
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

// Job is the scheduled ingest, every 15 minutes. With a folder it keeps
// the dmarc_reports domain current: a run that read the folder marks every
// active tenant fresh as of its start, since each tenant's reports in it
// are then stored. Without one the job keeps no domain, so no tenant is
// judged on reports nothing collects (uploads come when they come).
func (in *Ingest) Job(host *sdk.Host) sdk.Job {
	job := sdk.Job{Name: "dmarc_reports", JobType: JobType, Schedule: "@every 15m",
		Run: func(ctx context.Context, run *sdk.JobRun) (int64, error) {
			start := in.now()
			res, err := in.Run(ctx, run.Logger, run.Progress)
			if err != nil {
				return 0, err
			}
			if in.Dir != "" {
				tenants, err := host.Tenants(ctx, run.TenantIDs...)
				if err != nil {
					return 0, fmt.Errorf("tenant directory: %w", err)
				}
				for _, t := range tenants {
					if err := host.MarkFresh(ctx, t.ID, JobType, start); err != nil {
						return 0, err
					}
				}
			}
			return int64(res.Stored), nil
		}}
	if in.Dir != "" {
		job.DataDomain = JobType
	}
	return job
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
	var files []fs.FileInfo
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if info, err := e.Info(); err == nil {
			files = append(files, info)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name() < files[j].Name() })
	res.Files = len(files)
	var known []ProcessedFile
	if err := in.Store.DB.NewSelect().Model(&known).Column("file_name", "file_size", "modified_at").
		Where("status <> ?", FileUnmatched).Scan(ctx); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(known))
	for _, k := range known {
		seen[seenKey(k.FileName, k.FileSize, k.ModifiedAt)] = true
	}
	tenants := map[string]bool{}
	for i, info := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		status := ""
		if !seen[seenKey(fileName(info.Name()), info.Size(), info.ModTime())] {
			if status, err = in.file(ctx, logger, info, tenants); err != nil {
				return nil, fmt.Errorf("%s: %w", info.Name(), err)
			}
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
			progress(int64(i+1), int64(len(files)), fmt.Sprintf("%d stored, %d duplicates, %d failed, %d for no tenant, %d seen before",
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
func (in *Ingest) file(ctx context.Context, logger hclog.Logger, info fs.FileInfo, tenants map[string]bool) (string, error) {
	name := info.Name()
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
		// The same content under another name, or touched: remember the
		// file as it is now, so the next run does not read it.
		_, err := in.Store.DB.NewUpdate().Model(known).Set("file_name = ?, file_size = ?, modified_at = ?",
			fileName(name), info.Size(), info.ModTime().UTC().Truncate(time.Microsecond)).WherePK().Exec(ctx)
		return "", err
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return "", err
	}
	record := &ProcessedFile{SHA256: hash, FileName: fileName(name), FileSize: info.Size(), ModifiedAt: info.ModTime().UTC().Truncate(time.Microsecond), ProcessedAt: in.now()}
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
		reasons := rep.Warnings
		if dup {
			record.Status = FileDuplicate
			reasons = append([]string{fmt.Sprintf("report %s of %s is stored already", rep.ReportID, rep.OrgName)}, reasons...)
		} else {
			tenants[owner] = true
		}
		record.Reason = strings.Join(reasons, "; ")
		if len(rep.Warnings) > 0 {
			logger.Warn("report file accepted with warnings", "file", name, "warnings", rep.Warnings)
		}
	}
	_, err = in.Store.DB.NewInsert().Model(record).
		On("CONFLICT (sha256) DO UPDATE").Set("file_name = EXCLUDED.file_name, status = EXCLUDED.status, reason = EXCLUDED.reason, report_pk = EXCLUDED.report_pk, " +
		"file_size = EXCLUDED.file_size, modified_at = EXCLUDED.modified_at, processed_at = EXCLUDED.processed_at").
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
