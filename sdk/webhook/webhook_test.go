package webhook

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestVerifySignature(t *testing.T) {
	secret := []byte("whsec-test")
	now := time.Unix(1764431400, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(`{"event_id":"e1","title":"Budget over 80%"}`)
	sig := Sign(secret, ts, body)
	if want := "v1=266a998199f54bae8a370cae4e58cd391b760fc48e05bd3181d8d9fb98c911c9"; sig != want {
		t.Fatalf("signature %q; want %q", sig, want)
	}
	for _, c := range []struct {
		name      string
		secret    []byte
		ts, sig   string
		body      []byte
		now       time.Time
		tolerance time.Duration
		want      error
	}{
		{"valid", secret, ts, sig, body, now, 0, nil},
		{"valid a little later", secret, ts, sig, body, now.Add(4 * time.Minute), 0, nil},
		{"clock a little behind", secret, ts, sig, body, now.Add(-time.Minute), 0, nil},
		{"tampered body", secret, ts, sig, []byte(`{"event_id":"e2","title":"Budget over 80%"}`), now, 0, ErrMismatch},
		{"other secret", []byte("whsec-other"), ts, sig, body, now, 0, ErrMismatch},
		{"timestamp changed", secret, strconv.FormatInt(now.Unix()+1, 10), sig, body, now, 0, ErrMismatch},
		{"replayed after the tolerance", secret, ts, sig, body, now.Add(5*time.Minute + time.Second), 0, ErrStale},
		{"shorter tolerance", secret, ts, sig, body, now.Add(time.Minute), 30 * time.Second, ErrStale},
		{"from the future", secret, ts, sig, body, now.Add(-10 * time.Minute), 0, ErrStale},
		{"timestamp not a number", secret, "yesterday", sig, body, now, 0, ErrMalformed},
		{"signature without scheme", secret, ts, sig[len("v1="):], body, now, 0, ErrMalformed},
		{"signature truncated", secret, ts, sig[:20], body, now, 0, ErrMismatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := VerifySignature(c.secret, c.ts, c.sig, c.body, c.now, c.tolerance); !errors.Is(err, c.want) {
				t.Fatalf("VerifySignature: %v; want %v", err, c.want)
			}
		})
	}
}

// TestOpenSSLOneLiner runs the procedure docs/notifications.md gives for
// the shell and checks it computes what the host sends.
func TestOpenSSLOneLiner(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	body := []byte(`{"event_id":"e1","title":"50% 'quoted' \\ $HOME"}` + "\n")
	file := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `{ printf '%s.' "$TS"; cat body.json; } | openssl dgst -sha256 -hmac "$SECRET" | sed 's/^.*= */v1=/'`)
	cmd.Dir = filepath.Dir(file)
	cmd.Env = append(os.Environ(), "TS=1764431400", "SECRET=whsec-test")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), Sign([]byte("whsec-test"), "1764431400", body); got != want {
		t.Fatalf("openssl computes %q; the host sends %q", got, want)
	}
}
