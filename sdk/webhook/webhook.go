// Package webhook signs and verifies the requests of Steward's generic
// webhook notification channel, so that a receiver written in Go checks a
// request exactly as the host signs it (docs/notifications.md describes
// the procedure for other languages).
//
// A request carries the time it was signed and an HMAC-SHA256 over that
// time and the raw body, keyed with the channel's signing secret:
//
//	X-Steward-Timestamp: 1764431400
//	X-Steward-Signature: v1=<hex HMAC-SHA256(secret, timestamp + "." + body)>
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Headers of a webhook request.
const (
	HeaderEventID    = "X-Steward-Event-Id"
	HeaderDeliveryID = "X-Steward-Delivery-Id"
	HeaderTimestamp  = "X-Steward-Timestamp"
	HeaderSignature  = "X-Steward-Signature"
)

// DefaultTolerance is how old a request's timestamp may be before a
// receiver should refuse it as a possible replay.
const DefaultTolerance = 5 * time.Minute

// signaturePrefix names the signature scheme, so that a later scheme can
// be sent beside this one.
const signaturePrefix = "v1="

// Errors of VerifySignature.
var (
	ErrMalformed = errors.New("webhook: malformed timestamp or signature header")
	ErrStale     = errors.New("webhook: timestamp outside the tolerance")
	ErrMismatch  = errors.New("webhook: signature does not match")
)

// Sign returns the X-Steward-Signature value for a body sent at timestamp
// (Unix seconds, as sent in X-Steward-Timestamp).
func Sign(secret []byte, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return signaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// VerifySignature checks a request's X-Steward-Timestamp and
// X-Steward-Signature headers against its raw body: the timestamp must be
// within tolerance of now (either way, for clocks that differ a little)
// and the signature must be the HMAC of the timestamp and body under
// secret, compared in constant time. A tolerance of 0 is DefaultTolerance.
func VerifySignature(secret []byte, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || !strings.HasPrefix(signature, signaturePrefix) {
		return ErrMalformed
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	want := Sign(secret, timestamp, body)
	if !hmac.Equal([]byte(want), []byte(signature)) {
		return ErrMismatch
	}
	return nil
}
