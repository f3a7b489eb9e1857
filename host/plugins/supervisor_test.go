package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/sdk/protocol"
)

func TestVerifyChecksum(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "plugin")
	content := []byte("#!/bin/sh\necho plugin\n")
	if err := os.WriteFile(binary, content, 0o700); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	good := hex.EncodeToString(sum[:])
	bad := strings.Repeat("0", 64)

	tests := []struct {
		name     string
		path     string
		want     string
		wantErr  []string // substrings; nil for success
		notFound bool
	}{
		{name: "match", path: binary, want: good},
		{name: "match in upper case", path: binary, want: strings.ToUpper(good)},
		{name: "empty skips the check", path: binary, want: ""},
		{name: "empty skips even a missing file", path: filepath.Join(dir, "missing"), want: ""},
		{name: "mismatch", path: binary, want: bad, wantErr: []string{"checksum mismatch for " + binary, "sha256 is " + good, "plugins.hcl says " + bad}},
		{name: "missing file", path: filepath.Join(dir, "missing"), want: good, wantErr: []string{"missing"}, notFound: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verifyChecksum(tt.path, tt.want)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("verifyChecksum: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("verifyChecksum succeeded, want an error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tt.notFound != errors.Is(err, fs.ErrNotExist) {
				t.Errorf("errors.Is(%v, fs.ErrNotExist) = %v, want %v", err, !tt.notFound, tt.notFound)
			}
		})
	}
}

// TestUnavailableSaysWhetherToRetry: a plugin being restarted is
// unavailable for a while, one the supervisor gave up on is down.
func TestUnavailableSaysWhetherToRetry(t *testing.T) {
	decl := Decl{Name: "p", Enabled: true, Restart: RestartPolicy{MaxCrashes: 2, Window: time.Minute, BackoffInitial: time.Hour, BackoffMax: time.Hour}}
	sup, err := New([]Decl{decl}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sup.Stop)
	inst, _ := sup.Instance("p")
	route := &Route{Plugin: "p"}

	sup.scheduleRestart(inst, errors.New("plugin process exited unexpectedly"))
	var restarting *UnavailableError
	if err := sup.Proxy(nil, route, nil, nil, "req-1"); !errors.As(err, &restarting) {
		t.Fatalf("restarting: %v, want an *UnavailableError", err)
	}
	if restarting.Down != "" || restarting.RetryAfter < 59*time.Minute {
		t.Errorf("restarting: down %q, retry after %s; want a retry after the backoff", restarting.Down, restarting.RetryAfter)
	}

	sup.scheduleRestart(inst, errors.New("plugin process exited unexpectedly"))
	var down *UnavailableError
	if _, err := sup.RunJob(context.Background(), "p", "sync", "run-1", nil, protocol.JobEvents{}); !errors.As(err, &down) {
		t.Fatalf("given up: %v, want an *UnavailableError", err)
	}
	if down.Down != "given up after 2 crashes" || down.RetryAfter != 0 {
		t.Errorf("given up: down %q, retry after %s", down.Down, down.RetryAfter)
	}
}
