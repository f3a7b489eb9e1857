package reports

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestIngest: a folder's reports are stored once, whatever their names;
// a bad file is recorded with its reason and not read again; a report of
// no tenant's domain is skipped and read again once the domain is known.
func TestIngest(t *testing.T) {
	each(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		dir := t.TempDir()
		google := sample(t, "google-contoso-retail.xml")
		write(t, dir, "google.com!contoso-retail.example!1795132800!1795219199.zip", zipOf(t, "google.com!contoso-retail.example!1795132800!1795219199.xml", google))
		write(t, dir, "enterprise.protection.outlook.com!fabrikam-foods.example!1795132800!1795219200.xml.gz", gz(t, sample(t, "microsoft-fabrikam-foods.xml")))
		write(t, dir, "same-report-again.xml", google)
		write(t, dir, "lol.xml", []byte(billionLaughs))
		write(t, dir, "yahoo.xml", sample(t, "yahoo-northwind-travel.xml"))
		write(t, dir, ".partial", []byte("being written"))
		if err := os.Mkdir(filepath.Join(dir, "archive"), 0o700); err != nil {
			t.Fatal(err)
		}
		known := map[string]string{"contoso-retail.example": tenantContoso, "fabrikam-foods.example": tenantFabrikam}
		in := &Ingest{Store: st, Dir: dir, Now: func() time.Time { return time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC) },
			TenantOf: func(_ context.Context, d string) (string, bool, error) { id, ok := known[d]; return id, ok, nil }}

		var progress []string
		res, err := in.Run(ctx, nil, func(done, total int64, msg string) { progress = append(progress, msg) })
		if err != nil {
			t.Fatal(err)
		}
		if res.Files != 5 || res.Stored != 2 || res.Duplicates != 1 || res.Failed != 1 || res.Unmatched != 1 || res.Skipped != 0 ||
			len(res.Tenants) != 2 || len(progress) != 5 {
			t.Fatalf("first run %+v, progress %q", res, progress)
		}
		if !strings.HasPrefix(progress[4], "2 stored, 1 duplicates, 1 failed, 1 for no tenant") {
			t.Errorf("last progress %q", progress[4])
		}
		files, err := st.Files(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]ProcessedFile{}
		for _, f := range files {
			byName[f.FileName] = f
		}
		if f := byName["lol.xml"]; f.Status != FileFailed || !strings.Contains(f.Reason, "document type declaration") || f.ReportPK != nil {
			t.Errorf("the DTD file %+v", f)
		}
		if f := byName["yahoo.xml"]; f.Status != FileUnmatched || !strings.Contains(f.Reason, "northwind-travel.example, a domain of no tenant") {
			t.Errorf("the unmatched file %+v", f)
		}
		if f := byName["same-report-again.xml"]; f.Status != FileDuplicate || f.ReportPK == nil {
			t.Errorf("the duplicate %+v", f)
		}

		// Nothing new: every file was seen, the unmatched one read again.
		res, err = in.Run(ctx, nil, nil)
		if err != nil || res.Stored != 0 || res.Unmatched != 1 || res.Skipped != 4 {
			t.Errorf("second run %+v: %v", res, err)
		}
		// A file whose name, size and time are unchanged is not opened:
		// different content behind them goes unread.
		lol := filepath.Join(dir, "lol.xml")
		info, err := os.Stat(lol)
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, "lol.xml", bytes.Repeat([]byte("x"), int(info.Size())))
		if err := os.Chtimes(lol, info.ModTime(), info.ModTime()); err != nil {
			t.Fatal(err)
		}
		// Renaming a file does not ingest it again.
		if err := os.Rename(filepath.Join(dir, "same-report-again.xml"), filepath.Join(dir, "renamed.xml")); err != nil {
			t.Fatal(err)
		}
		known["northwind-travel.example"] = tenantContoso
		res, err = in.Run(ctx, nil, nil)
		if err != nil || res.Stored != 1 || res.Unmatched != 0 || res.Failed != 0 || res.Skipped != 4 || len(res.Tenants) != 1 || res.Tenants[0] != tenantContoso {
			t.Errorf("run after the domain was added %+v: %v", res, err)
		}
		files, err = st.Files(ctx, 100)
		if err != nil || len(files) != 5 {
			t.Fatalf("%d files recorded (%v), want 5", len(files), err)
		}
		names := map[string]bool{}
		for _, f := range files {
			names[f.FileName] = true
		}
		if !names["renamed.xml"] || names["same-report-again.xml"] {
			t.Errorf("files after the rename %v", names)
		}
		list, total, err := st.List(ctx, ReportFilter{TenantIDs: []string{tenantContoso, tenantFabrikam}, Limit: 10})
		if err != nil || total != 3 || list[0].Source != SourceFolder || list[0].SHA256 == "" {
			t.Errorf("stored %d reports %+v: %v", total, list, err)
		}
	})
}

func TestIngestWithoutFolder(t *testing.T) {
	res, err := (&Ingest{}).Run(context.Background(), nil, nil)
	if err != nil || res.Files != 0 {
		t.Errorf("no folder: %+v %v", res, err)
	}
	_, err = (&Ingest{Dir: filepath.Join(t.TempDir(), "missing")}).Run(context.Background(), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "reports_dir") {
		t.Errorf("a missing folder: %v", err)
	}
}

// TestIngestAsUploads: the folder accepts and refuses what an upload
// does. A report without org_name or over a long range is stored, the
// warnings in its reason; one whose dates cannot be real fails, the
// reason writing them as dates.
func TestIngestAsUploads(t *testing.T) {
	each(t, func(t *testing.T, st *Store) {
		ctx := context.Background()
		dir := t.TempDir()
		noOrg := withoutOrgName(t)
		long := strings.Replace(noOrg, "<begin>1795132800</begin>", "<begin>1790812800</begin>", 1)
		write(t, dir, "a-no-org-long.xml", []byte(long))
		write(t, dir, "b-no-org-long-again.xml.gz", gz(t, []byte(long)))
		write(t, dir, "c-ahead.xml", []byte(strings.Replace(noOrg, "<end>1795219199</end>", "<end>4102531199</end>", 1)))
		write(t, dir, "d-epoch.xml", []byte(strings.Replace(noOrg, "<begin>1795132800</begin>", "<begin>0</begin>", 1)))
		in := &Ingest{Store: st, Dir: dir, TenantOf: tenantOf}
		res, err := in.Run(ctx, nil, nil)
		if err != nil || res.Files != 4 || res.Stored != 1 || res.Duplicates != 1 || res.Failed != 2 {
			t.Fatalf("run %+v: %v", res, err)
		}
		files, err := st.Files(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]ProcessedFile{}
		for _, f := range files {
			byName[f.FileName] = f
			// The report id is digits too.
			if epochLike.MatchString(strings.ReplaceAll(f.Reason, "5871604411926393155", "")) {
				t.Errorf("%s: %q writes a date as seconds", f.FileName, f.Reason)
			}
		}
		orgWarning := "feedback/report_metadata/org_name: is empty or missing; the reporter is recorded as reports.example.net"
		longWarning := "feedback/report_metadata/date_range: spans more than 31 days, from 2026-10-01T00:00:00Z to 2026-11-20T23:59:59Z"
		if f := byName["a-no-org-long.xml"]; f.Status != FileStored || f.ReportPK == nil ||
			!strings.HasPrefix(f.Reason, orgWarning) || !strings.Contains(f.Reason, "; "+longWarning) {
			t.Errorf("the stored file %+v", f)
		}
		if f := byName["b-no-org-long-again.xml.gz"]; f.Status != FileDuplicate ||
			!strings.HasPrefix(f.Reason, "report 5871604411926393155 of reports.example.net is stored already; "+orgWarning) || !strings.Contains(f.Reason, longWarning) {
			t.Errorf("the duplicate %+v", f)
		}
		if f := byName["c-ahead.xml"]; f.Status != FileFailed || f.ReportPK != nil ||
			!strings.Contains(f.Reason, "date_range/end: is 2100-01-01T23:59:59Z, more than a day after now (") {
			t.Errorf("the file ending years ahead %+v", f)
		}
		if f := byName["d-epoch.xml"]; f.Status != FileFailed || !strings.Contains(f.Reason, "date_range/begin: is 1970-01-01T00:00:00Z, before 2012-01-01") {
			t.Errorf("the file of 1970 %+v", f)
		}
		list, total, err := st.List(ctx, ReportFilter{TenantIDs: []string{tenantContoso}, Limit: 10})
		if err != nil || total != 1 || list[0].OrgName != "reports.example.net" || list[0].Source != SourceFolder ||
			!list[0].Begin.Equal(time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("stored %d reports %+v: %v", total, list, err)
		}
	})
}
