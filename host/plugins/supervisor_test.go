package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
