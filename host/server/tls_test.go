package server

import (
	"crypto/tls"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/internal/testcert"
)

// TestTLSConfigReloadsTheKeyPair: a key pair replaced on disk is served
// from the first handshake after the next check, and a broken replacement
// keeps the previous pair served and is reported.
func TestTLSConfigReloadsTheKeyPair(t *testing.T) {
	dir := t.TempDir()
	first := testcert.Write(t, dir, "first")
	var reported []error
	r, err := newCertReloader(first.CertFile, first.KeyFile, func(err error) { reported = append(reported, err) })
	if err != nil {
		t.Fatal(err)
	}
	cfg := r.config()
	if cfg.MinVersion != tls.VersionTLS13 {
		t.Fatalf("MinVersion %x; want TLS 1.3", cfg.MinVersion)
	}
	served := func() string {
		t.Helper()
		c, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.Subject.CommonName
	}
	if got := served(); got != "first" {
		t.Fatalf("served %q; want first", got)
	}

	// The reloader's clock is moved on rather than the test waiting
	// certCheckEvery.
	now := time.Now()
	r.now = func() time.Time { return now }
	testcert.Write(t, dir, "second")
	bumpModTime(t, first.CertFile, first.KeyFile)
	if got := served(); got != "first" {
		t.Fatalf("served %q before the next check; want first", got)
	}
	now = now.Add(certCheckEvery)
	if got := served(); got != "second" {
		t.Fatalf("served %q after the files changed; want second", got)
	}

	if err := os.WriteFile(first.KeyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	bumpModTime(t, first.KeyFile)
	now = now.Add(certCheckEvery)
	if got := served(); got != "second" {
		t.Fatalf("served %q after a broken renewal; want the previous pair, second", got)
	}
	if len(reported) != 1 || !strings.Contains(reported[0].Error(), first.KeyFile) {
		t.Fatalf("reported %v; want one error naming the key file", reported)
	}
}

func TestTLSConfigRefusesAMissingPair(t *testing.T) {
	_, err := TLSConfig("/nonexistent/tls.crt", "/nonexistent/tls.key", nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v; want one wrapping not-exist", err)
	}
}

func bumpModTime(t *testing.T, files ...string) {
	t.Helper()
	later := time.Now().Add(time.Minute)
	for _, f := range files {
		if err := os.Chtimes(f, later, later); err != nil {
			t.Fatal(err)
		}
	}
}
