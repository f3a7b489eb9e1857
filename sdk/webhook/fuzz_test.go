package webhook

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

// FuzzVerifySignature: whatever headers and body a receiver is sent,
// VerifySignature answers without panicking, accepts only the host's own
// signature of that timestamp and body within the tolerance, and accepts
// what Sign made.
func FuzzVerifySignature(f *testing.F) {
	secret := []byte("a webhook signing secret of 40 bytes.....")
	now := time.Unix(1764431400, 0)
	f.Add("1764431400", Sign(secret, "1764431400", []byte(`{"event_id":"e"}`)), []byte(`{"event_id":"e"}`))
	f.Add("1764431400", "v1=00", []byte("x"))
	f.Add("-9223372036854775808", "v1=", []byte{})
	f.Add("+1764431400", "v2=abc", []byte("{}"))
	f.Fuzz(func(t *testing.T, timestamp, signature string, body []byte) {
		err := VerifySignature(secret, timestamp, signature, body, now, 0)
		if err == nil {
			sec, perr := strconv.ParseInt(timestamp, 10, 64)
			if perr != nil || signature != Sign(secret, timestamp, body) || now.Sub(time.Unix(sec, 0)).Abs() > DefaultTolerance {
				t.Fatalf("accepted timestamp %q signature %q", timestamp, signature)
			}
		} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrStale) && !errors.Is(err, ErrMismatch) {
			t.Fatalf("unexpected error %v", err)
		}
		if err := VerifySignature(secret, "1764431400", Sign(secret, "1764431400", body), body, now, 0); err != nil {
			t.Fatalf("the host's own signature of %q does not verify: %v", body, err)
		}
	})
}
