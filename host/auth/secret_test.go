package auth

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestDevSecretCreatedOnceAndReused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, err := LoadOrCreateDevSecret(dir)
	if err != nil {
		t.Fatalf("first load: %v", err)
	}
	if len(first) != MinSecretLen {
		t.Errorf("secret is %d bytes, want %d", len(first), MinSecretLen)
	}
	path := filepath.Join(dir, DevSecretFile)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Errorf("secret file mode = %v, want 0600", info.Mode().Perm())
	}
	onDisk, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(onDisk, first) {
		t.Errorf("file holds %x (%v), want the returned secret", onDisk, err)
	}

	second, err := LoadOrCreateDevSecret(dir)
	if err != nil {
		t.Fatalf("second load: %v", err)
	}
	if !bytes.Equal(first, second) {
		t.Error("second load made a new secret instead of reusing the first")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("data dir holds %d entries, want only %s", len(entries), DevSecretFile)
	}
}

func TestDevSecretConcurrentCreatorsAgree(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	secrets := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { secrets[i], errs[i] = LoadOrCreateDevSecret(dir) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("creator %d: %v", i, errs[i])
		}
		if !bytes.Equal(secrets[i], secrets[0]) {
			t.Fatalf("creator %d got a different secret", i)
		}
	}
}

func TestDevSecretRejectsShortFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DevSecretFile), []byte("too short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateDevSecret(dir); err == nil {
		t.Error("a short secret file was accepted")
	}
}

func TestSecretFromEnv(t *testing.T) {
	tests := []struct {
		value   string
		wantErr bool
	}{
		{"", true},
		{strings.Repeat("x", MinSecretLen-1), true},
		{strings.Repeat("x", MinSecretLen), false},
		{strings.Repeat("0123456789abcdef", 4), false},
	}
	for _, tt := range tests {
		got, err := SecretFromEnv(tt.value)
		if (err != nil) != tt.wantErr {
			t.Errorf("SecretFromEnv(%d bytes) error = %v, wantErr %v", len(tt.value), err, tt.wantErr)
		}
		if err == nil && string(got) != tt.value {
			t.Errorf("SecretFromEnv changed the value")
		}
	}
}

func TestSelectSecret(t *testing.T) {
	configured := strings.Repeat("s", MinSecretLen)
	tests := []struct {
		name       string
		env        string
		configured string
		wantDev    bool
		wantErr    error
		wantAnyErr bool
	}{
		{name: "development falls back to the dev secret", env: "development", wantDev: true},
		{name: "development prefers a configured secret", env: "development", configured: configured},
		{name: "production with a configured secret", env: "production", configured: configured},
		{name: "production without a secret", env: "production", wantErr: ErrSecretRequired},
		{name: "staging without a secret", env: "staging", wantErr: ErrSecretRequired},
		{name: "unknown environment is strict", env: "dev", wantErr: ErrSecretRequired},
		{name: "production with a short secret", env: "production", configured: "short", wantAnyErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			secret, isDev, err := SelectSecret(tt.env, tt.configured, dir)
			switch {
			case tt.wantErr != nil || tt.wantAnyErr:
				if err == nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if _, statErr := os.Stat(filepath.Join(dir, DevSecretFile)); statErr == nil {
					t.Error("a dev secret was written outside development")
				}
				return
			case err != nil:
				t.Fatalf("SelectSecret: %v", err)
			}
			if isDev != tt.wantDev {
				t.Errorf("isDev = %v, want %v", isDev, tt.wantDev)
			}
			if !tt.wantDev && string(secret) != tt.configured {
				t.Error("the configured secret was not used")
			}
			if len(secret) < MinSecretLen {
				t.Errorf("secret is %d bytes", len(secret))
			}
		})
	}
}

func TestCheckDevCredentials(t *testing.T) {
	tests := []struct {
		name                          string
		env, wantU, wantP, gotU, gotP string
		want                          error
	}{
		{"match", "development", "admin", "pw", "admin", "pw", nil},
		{"wrong password", "development", "admin", "pw", "admin", "nope", ErrBadCredentials},
		{"wrong user", "development", "admin", "pw", "root", "pw", ErrBadCredentials},
		{"password prefix", "development", "admin", "password", "admin", "pass", ErrBadCredentials},
		{"empty attempt", "development", "admin", "pw", "", "", ErrBadCredentials},
		{"swapped fields", "development", "admin", "pw", "pw", "admin", ErrBadCredentials},
		{"production", "production", "admin", "pw", "admin", "pw", ErrDevLoginDisabled},
		{"staging", "staging", "admin", "pw", "admin", "pw", ErrDevLoginDisabled},
		{"unconfigured in development", "development", "", "", "", "", ErrDevLoginDisabled},
		{"no password configured", "development", "admin", "", "admin", "", ErrDevLoginDisabled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckDevCredentials(tt.env, tt.wantU, tt.wantP, tt.gotU, tt.gotP); !errors.Is(got, tt.want) {
				t.Errorf("CheckDevCredentials = %v, want %v", got, tt.want)
			}
		})
	}
}
