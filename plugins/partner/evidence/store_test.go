package evidence_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/partner/evidence"
)

func newStore(t *testing.T, dialect string) *evidence.Store {
	t.Helper()
	db := storetest.Open(t, dialect)
	if _, err := store.Migrate(context.Background(), db, evidence.Migrations(), "plugin_partner_migrations"); err != nil {
		t.Fatal(err)
	}
	return &evidence.Store{DB: db}
}

var t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

func record(tenant, requirement, status string) *evidence.Evidence {
	return &evidence.Evidence{ID: uuid.NewString(), TenantID: tenant, RequirementID: requirement, Status: status,
		CreatedBy: "u", UpdatedBy: "u", CreatedAt: t0, UpdatedAt: t0}
}

// TestStore: one record per tenant and requirement; writes guarded by the
// status they were read in; statuses by requirement; expiry by tenant.
func TestStore(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, dialect)
			a := record(tenantA, "SEC-01", evidence.StatusInProgress)
			if err := s.Create(ctx, a); err != nil {
				t.Fatal(err)
			}
			if err := s.Create(ctx, record(tenantA, "SEC-01", evidence.StatusNotStarted)); !errors.Is(err, evidence.ErrExists) {
				t.Errorf("a second record of the requirement: %v", err)
			}
			if err := s.Create(ctx, record(tenantB, "SEC-01", evidence.StatusNotStarted)); err != nil {
				t.Errorf("another tenant's record of the requirement: %v", err)
			}
			got, err := s.Get(ctx, a.ID, []string{tenantA})
			if err != nil || got == nil || got.Links == nil || len(got.Links) != 0 {
				t.Fatalf("get: %+v, %v", got, err)
			}
			if got, err := s.Get(ctx, a.ID, []string{tenantB}); got != nil || err != nil {
				t.Errorf("get through another tenant: %+v, %v", got, err)
			}
			if got, err := s.Get(ctx, a.ID, nil); got != nil || err != nil {
				t.Errorf("get without tenants: %+v, %v", got, err)
			}

			a.Status, a.Links = evidence.StatusSubmitted, []string{"https://a.example"}
			if err := s.Update(ctx, a, evidence.StatusNotStarted); !errors.Is(err, evidence.ErrChanged) {
				t.Errorf("update from a status it is not in: %v", err)
			}
			if err := s.Update(ctx, a, evidence.StatusInProgress); err != nil {
				t.Fatal(err)
			}
			a.Status = evidence.StatusAccepted
			exp := t0.Add(time.Hour)
			a.ExpiresAt = &exp
			if err := s.Review(ctx, a); err != nil {
				t.Fatal(err)
			}
			if err := s.Review(ctx, a); !errors.Is(err, evidence.ErrChanged) {
				t.Errorf("a second review: %v", err)
			}

			// Only tenant B's accepted evidence past expiry is expired when
			// the run names tenant B.
			b := record(tenantB, "SEC-02", evidence.StatusSubmitted)
			b.ExpiresAt = &exp
			if err := s.Create(ctx, b); err != nil {
				t.Fatal(err)
			}
			b.Status = evidence.StatusAccepted
			if err := s.Review(ctx, b); err != nil {
				t.Fatal(err)
			}
			// Past its expiry, accepted evidence reads as expired before
			// the job marks it.
			s.Now = func() time.Time { return exp.Add(-time.Second) }
			if st, err := s.Statuses(ctx, tenantB); err != nil || st["SEC-02"] != evidence.StatusAccepted {
				t.Errorf("tenant B's statuses before the expiry: %v, %v", st, err)
			}
			s.Now = func() time.Time { return exp }
			if st, err := s.Statuses(ctx, tenantB); err != nil || st["SEC-02"] != evidence.StatusExpired || st["SEC-01"] != evidence.StatusNotStarted {
				t.Errorf("tenant B's statuses at the expiry: %v, %v", st, err)
			}
			if out, err := s.Expire(ctx, exp.Add(-time.Microsecond), "job", nil); err != nil || len(out) != 0 {
				t.Errorf("before the expiry: %+v, %v", out, err)
			}
			out, err := s.Expire(ctx, exp, "job", []string{tenantB})
			if err != nil || len(out) != 1 || out[0].ID != b.ID || out[0].Status != evidence.StatusExpired || out[0].RequirementID != "SEC-02" ||
				out[0].ExpiresAt == nil || !out[0].ExpiresAt.Equal(exp) {
				t.Errorf("expire tenant B: %+v, %v", out, err)
			}
			out, err = s.Expire(ctx, exp, "job", nil)
			if err != nil || len(out) != 1 || out[0].ID != a.ID {
				t.Errorf("expire every tenant: %+v, %v", out, err)
			}
			if out, err := s.Expire(ctx, exp.Add(time.Hour), "job", nil); err != nil || len(out) != 0 {
				t.Errorf("a second run: %+v, %v", out, err)
			}
			st, err := s.Statuses(ctx, tenantA)
			if err != nil || len(st) != 1 || st["SEC-01"] != evidence.StatusExpired {
				t.Errorf("tenant A's statuses: %v, %v", st, err)
			}
			if st, err := s.Statuses(ctx, "cccccccc-0000-4000-8000-00000000000c"); err != nil || len(st) != 0 {
				t.Errorf("a tenant without evidence: %v, %v", st, err)
			}
		})
	}
}

// TestStoreFiles: files are added and removed only while the evidence is
// not under review, at most max of them, each write touching the record.
func TestStoreFiles(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, dialect)
			e := record(tenantA, "SEC-01", evidence.StatusInProgress)
			if err := s.Create(ctx, e); err != nil {
				t.Fatal(err)
			}
			file := func(i int) *evidence.File {
				return &evidence.File{ID: uuid.NewString(), EvidenceID: e.ID, TenantID: tenantA, FileName: "f.txt", ContentType: "text/plain",
					SizeBytes: 1, SHA256: strings.Repeat("0", 64), UploadedBy: "u2", UploadedAt: t0.Add(time.Duration(i) * time.Minute)}
			}
			f1, f2 := file(1), file(2)
			for _, f := range []*evidence.File{f1, f2} {
				if err := s.AddFile(ctx, f, 2); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.AddFile(ctx, file(3), 2); !errors.Is(err, evidence.ErrTooManyFiles) {
				t.Errorf("a third of at most two: %v", err)
			}
			got, _ := s.Get(ctx, e.ID, []string{tenantA})
			if got.FileCount != 2 || got.UpdatedBy != "u2" || !got.UpdatedAt.Equal(f2.UploadedAt) {
				t.Errorf("after two files: %+v", got)
			}
			files, err := s.Files(ctx, e.ID)
			if err != nil || len(files) != 2 || files[0].ID != f1.ID {
				t.Errorf("files: %+v, %v", files, err)
			}
			if f, err := s.File(ctx, "0b5c4f1e-7a59-4a8e-9a35-6a2b1d7c9e01", f1.ID); f != nil || err != nil {
				t.Errorf("a file through other evidence: %+v, %v", f, err)
			}
			if err := s.DeleteFile(ctx, f1, "u3", t0.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteFile(ctx, f1, "u3", t0.Add(time.Hour)); !errors.Is(err, evidence.ErrChanged) {
				t.Errorf("a file deleted twice: %v", err)
			}
			e.Status = evidence.StatusSubmitted
			if err := s.Update(ctx, e, evidence.StatusInProgress); err != nil {
				t.Fatal(err)
			}
			if err := s.AddFile(ctx, file(4), 50); !errors.Is(err, evidence.ErrChanged) {
				t.Errorf("a file added to submitted evidence: %v", err)
			}
			if err := s.DeleteFile(ctx, f2, "u3", t0.Add(time.Hour)); !errors.Is(err, evidence.ErrChanged) {
				t.Errorf("a file deleted from submitted evidence: %v", err)
			}
			if files, _ := s.Files(ctx, e.ID); len(files) != 1 || files[0].ID != f2.ID {
				t.Errorf("files left: %+v", files)
			}
		})
	}
}

// TestStoreConcurrentCreate: of many creates of one requirement at once,
// one succeeds and the rest see ErrExists.
func TestStoreConcurrentCreate(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			s := newStore(t, dialect)
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Go(func() { errs[i] = s.Create(context.Background(), record(tenantA, "SEC-01", evidence.StatusNotStarted)) })
			}
			wg.Wait()
			created := 0
			for _, err := range errs {
				switch {
				case err == nil:
					created++
				case !errors.Is(err, evidence.ErrExists):
					t.Errorf("create: %v", err)
				}
			}
			if created != 1 {
				t.Errorf("%d created", created)
			}
		})
	}
}

type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errors.New("connection reset")
	}
	n := min(len(p), r.n)
	for i := range n {
		p[i] = 'x'
	}
	r.n -= n
	return n, nil
}

// TestDir: a blob is visible only once whole, under its key alone; keys
// that are not generated ids are refused.
func TestDir(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "blobs")
	d, err := evidence.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	key := uuid.NewString()
	if _, _, err := d.Put(ctx, key, &failingReader{n: 100 << 10}); err == nil {
		t.Fatal("a broken copy stored")
	}
	var left []string
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, _ error) error {
		if !e.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) != 0 {
		t.Errorf("a broken copy left %v", left)
	}
	if _, err := d.Open(ctx, key); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("open a blob never stored: %v", err)
	}
	n, sum, err := d.Put(ctx, key, strings.NewReader("hello"))
	if err != nil || n != 5 || sum != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Errorf("put: %d %s %v", n, sum, err)
	}
	rc, err := d.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "hello" {
		t.Errorf("read back %q", b)
	}
	if info, err := os.Stat(filepath.Join(root, key[:2], key)); err != nil || info.Mode().Perm()&0o077 != 0 {
		t.Errorf("blob file: %v, %v", info, err)
	}
	for _, bad := range []string{"../../etc/passwd", "report.pdf", "", strings.ToUpper(key), key + "/x"} {
		if _, _, err := d.Put(ctx, bad, strings.NewReader("x")); !errors.Is(err, evidence.ErrBadKey) {
			t.Errorf("put %q: %v", bad, err)
		}
		if _, err := d.Open(ctx, bad); !errors.Is(err, evidence.ErrBadKey) {
			t.Errorf("open %q: %v", bad, err)
		}
		if err := d.Delete(ctx, bad); !errors.Is(err, evidence.ErrBadKey) {
			t.Errorf("delete %q: %v", bad, err)
		}
	}
	if err := d.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, key); err != nil {
		t.Errorf("delete a missing blob: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := d.Put(cancelled, uuid.NewString(), strings.NewReader("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("put after the caller left: %v", err)
	}
}
