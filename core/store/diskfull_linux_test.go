package store_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stewardhq/steward/core/store"
)

// TestSQLiteDiskFull fills a real, small filesystem (a tmpfs; mounting one
// needs root, so the test is skipped elsewhere): the write that meets the
// full disk is Full, reads go on, the file stays sound, and once another
// file's space is freed writes succeed again on the same connections.
func TestSQLiteDiskFull(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=512k"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v); TestSQLiteFull covers the size cap", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 128<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "full.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(ctx, "CREATE TABLE filler (b BLOB NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if fillUp(t, db) == 0 {
		t.Fatal("nothing fitted on the filesystem")
	}
	var before int
	if err := db.NewRaw("SELECT COUNT(*) FROM filler").Scan(ctx, &before); err != nil {
		t.Fatalf("reading on a full disk: %v", err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO filler (b) VALUES (zeroblob(8192))"); !store.Full(err) || !store.Unavailable(err) {
		t.Fatalf("a write on a full disk: %v, want an error Full and Unavailable report", err)
	}
	var check string
	if err := db.NewRaw("PRAGMA integrity_check").Scan(ctx, &check); err != nil || check != "ok" {
		t.Fatalf("integrity_check %q (%v)", check, err)
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO filler (b) VALUES (zeroblob(8192))"); err != nil {
		t.Fatalf("a write once space is freed: %v", err)
	}
	var after int
	if err := db.NewRaw("SELECT COUNT(*) FROM filler").Scan(ctx, &after); err != nil || after != before+1 {
		t.Fatalf("%d rows (%v), want %d", after, err, before+1)
	}
}
