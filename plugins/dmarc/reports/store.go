// Package reports ingests DMARC aggregate (RUA) reports — uploaded through
// the API, read from a configured folder or fetched from each tenant's
// report mailbox through Microsoft Graph — into the plugin's tables, looks
// up each record's source (its reverse name and sending organisation), and
// serves them: lists, one report with its records, and pass and fail rates
// aggregated in the database by source, sending domain, alignment,
// disposition and day, with the pass-rate chart and the top failing
// sources rendered for the DMARC page.
//
// Parsing is defensive: archives are bounded in size and expansion before
// they are read, documents with a DTD are refused, and every field is
// checked against RFC 7489's schema.
package reports

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"time"

	"github.com/uptrace/bun"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the reports' schema, numbered from 0100 so that they
// merge with the plugin's own: 0100, 0103 and 0104; 0102 is the domains'
// (see domains.Migrations).
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

// Source says how a report arrived.
const (
	SourceUpload  = "upload"
	SourceFolder  = "folder"
	SourceMailbox = "mailbox"
)

// StoredReport is a report's row.
type StoredReport struct {
	bun.BaseModel `bun:"table:dmarc_reports,alias:r"`
	ID            int64     `bun:"id,pk,autoincrement"`
	TenantID      string    `bun:"tenant_id"`
	OrgName       string    `bun:"org_name"`
	ReportID      string    `bun:"report_id"`
	Email         string    `bun:"email"`
	Domain        string    `bun:"domain"`
	Begin         time.Time `bun:"date_begin"`
	End           time.Time `bun:"date_end"`
	ADKIM         string    `bun:"adkim"`
	ASPF          string    `bun:"aspf"`
	P             string    `bun:"p"`
	SP            string    `bun:"sp"`
	Pct           int       `bun:"pct"`
	Source        string    `bun:"source"`
	FileName      string    `bun:"file_name"`
	SHA256        string    `bun:"sha256"`
	Records       int64     `bun:"records"`
	Messages      int64     `bun:"messages"`
	Passed        int64     `bun:"passed"`
	ReceivedAt    time.Time `bun:"received_at"`
}

// StoredRecord is a report row's row. Tenant, policy domain and the day
// the report begins are copied from the report so that the statistics
// read one table.
type StoredRecord struct {
	bun.BaseModel `bun:"table:dmarc_report_records,alias:rec"`
	ReportPK      int64  `bun:"report_pk,pk"`
	Seq           int    `bun:"seq,pk"`
	TenantID      string `bun:"tenant_id"`
	Domain        string `bun:"domain"`
	Day           string `bun:"day"`
	SourceIP      string `bun:"source_ip"`
	Count         int64  `bun:"count"`
	Disposition   string `bun:"disposition"`
	DKIM          string `bun:"dkim"`
	SPF           string `bun:"spf"`
	Pass          bool   `bun:"pass"`
	Alignment     string `bun:"alignment"`
	HeaderFrom    string `bun:"header_from"`
	EnvelopeFrom  string `bun:"envelope_from"`
	AuthDKIM      string `bun:"auth_dkim"`
	AuthSPF       string `bun:"auth_spf"`
	// SourcePTR and SourceOrg are the source's reverse name and sending
	// organisation (see SendingOrg), empty when it has none; EnrichedAt
	// is when they were looked up, zero until then.
	SourcePTR  string    `bun:"source_ptr"`
	SourceOrg  string    `bun:"source_org"`
	EnrichedAt time.Time `bun:"enriched_at,nullzero"`
}

// Store keeps reports and their records.
type Store struct{ DB *bun.DB }

// recordBatch keeps an INSERT of records (19 columns) under SQLite's and
// PostgreSQL's bound parameter limits.
const recordBatch = 1000

// Meta is what the store records about a report beyond its content.
type Meta struct {
	TenantID   string
	Source     string
	FileName   string
	SHA256     string
	ReceivedAt time.Time
}

// Insert stores a report and its records in one transaction. A report of
// the same tenant with the same reporting organisation and report id is
// a duplicate: nothing is written and the stored one is returned with
// duplicate set.
func (s *Store) Insert(ctx context.Context, rep *Report, m Meta) (stored *StoredReport, duplicate bool, err error) {
	row := &StoredReport{TenantID: m.TenantID, OrgName: rep.OrgName, ReportID: rep.ReportID, Email: rep.Email, Domain: rep.Domain,
		Begin: rep.Begin, End: rep.End, ADKIM: rep.ADKIM, ASPF: rep.ASPF, P: rep.P, SP: rep.SP, Pct: rep.Pct,
		Source: m.Source, FileName: m.FileName, SHA256: m.SHA256, Records: int64(len(rep.Records)), ReceivedAt: m.ReceivedAt.UTC().Truncate(time.Microsecond)}
	for i := range rep.Records {
		row.Messages += rep.Records[i].Count
		if rep.Records[i].Pass() {
			row.Passed += rep.Records[i].Count
		}
	}
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewInsert().Model(row).On("CONFLICT (tenant_id, org_name, report_id) DO NOTHING").Returning("id").Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			duplicate = true
			return nil
		}
		day := rep.Begin.Format(time.DateOnly)
		batch := make([]StoredRecord, 0, min(len(rep.Records), recordBatch))
		for i := range rep.Records {
			r := &rep.Records[i]
			dkim, _ := json.Marshal(nonNil(r.AuthDKIM))
			spf, _ := json.Marshal(nonNil(r.AuthSPF))
			batch = append(batch, StoredRecord{ReportPK: row.ID, Seq: i + 1, TenantID: m.TenantID, Domain: rep.Domain, Day: day,
				SourceIP: r.SourceIP, Count: r.Count, Disposition: r.Disposition, DKIM: r.DKIM, SPF: r.SPF, Pass: r.Pass(),
				Alignment: r.Alignment(), HeaderFrom: r.HeaderFrom, EnvelopeFrom: r.EnvelopeFrom, AuthDKIM: string(dkim), AuthSPF: string(spf)})
			if len(batch) == recordBatch || i == len(rep.Records)-1 {
				if _, err := tx.NewInsert().Model(&batch).Exec(ctx); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if duplicate {
		existing := new(StoredReport)
		err := s.DB.NewSelect().Model(existing).
			Where("tenant_id = ? AND org_name = ? AND report_id = ?", m.TenantID, rep.OrgName, rep.ReportID).Scan(ctx)
		return existing, true, err
	}
	return row, false, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ReportFilter narrows a list of reports. From and To are days,
// inclusive; a report is listed when its date range meets them.
type ReportFilter struct {
	TenantIDs []string
	Domain    string
	OrgName   string
	From, To  time.Time
	Limit     int
	Offset    int
	// SortBy is a column of reportSorts; Desc orders it newest or
	// largest first.
	SortBy string
	Desc   bool
}

var reportSorts = map[string]string{
	"date_begin":  "r.date_begin",
	"received_at": "r.received_at",
	"org_name":    "r.org_name",
	"domain":      "r.domain",
	"messages":    "r.messages",
}

// List returns a page of reports and how many match.
func (s *Store) List(ctx context.Context, f ReportFilter) ([]StoredReport, int, error) {
	if len(f.TenantIDs) == 0 {
		return []StoredReport{}, 0, nil
	}
	out := []StoredReport{}
	q := s.DB.NewSelect().Model(&out).Where("r.tenant_id IN (?)", bun.List(f.TenantIDs))
	if f.Domain != "" {
		q = q.Where("r.domain = ?", f.Domain)
	}
	if f.OrgName != "" {
		q = q.Where("r.org_name = ?", f.OrgName)
	}
	if !f.From.IsZero() {
		q = q.Where("r.date_end >= ?", f.From)
	}
	if !f.To.IsZero() {
		q = q.Where("r.date_begin < ?", f.To.AddDate(0, 0, 1))
	}
	col, ok := reportSorts[f.SortBy]
	if !ok {
		col = reportSorts["date_begin"]
	}
	dir := " ASC"
	if f.Desc {
		dir = " DESC"
	}
	q = q.OrderExpr(col + dir).OrderExpr("r.id" + dir).Limit(int64(f.Limit)).Offset(int64(f.Offset))
	total, err := q.ScanAndCount(ctx)
	return out, int(total), err
}

// ErrNotFound is a report that does not exist or is not among the
// tenants asked for.
var ErrNotFound = errors.New("report not found")

// Get returns a report of one of tenantIDs with its records in order.
func (s *Store) Get(ctx context.Context, tenantIDs []string, id int64) (*StoredReport, []StoredRecord, error) {
	if len(tenantIDs) == 0 {
		return nil, nil, ErrNotFound
	}
	rep := new(StoredReport)
	err := s.DB.NewSelect().Model(rep).Where("r.id = ? AND r.tenant_id IN (?)", id, bun.List(tenantIDs)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	var recs []StoredRecord
	err = s.DB.NewSelect().Model(&recs).Where("rec.report_pk = ?", id).Order("rec.seq").Scan(ctx)
	return rep, recs, err
}
