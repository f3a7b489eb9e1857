package apikeys

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// FuzzParse splits arbitrary X-API-Key values before any database read.
// A value it accepts has exactly the shape Create issues, and splits back
// into the parts it was made of; every key Create could issue is accepted.
func FuzzParse(f *testing.F) {
	id, secret := make([]byte, idBytes), make([]byte, secretBytes)
	for i := range secret {
		secret[i] = byte(i * 37)
	}
	issued := Prefix + hex.EncodeToString(id) + "_" + base64.RawURLEncoding.EncodeToString(secret)
	for _, seed := range []string{issued, "stw_", "stw__", "stw_0123456789ABCDEF_" + strings.Repeat("A", 43), strings.ToUpper(issued), issued + "=", "Bearer " + issued} {
		f.Add(seed, id, secret)
	}
	f.Fuzz(func(t *testing.T, token string, idRaw, secretRaw []byte) {
		if gotID, gotSecret, ok := parse(token); ok {
			if token != Prefix+gotID+"_"+gotSecret || len(gotID) != 2*idBytes || strings.ToLower(gotID) != gotID ||
				len(gotSecret) != base64.RawURLEncoding.EncodedLen(secretBytes) {
				t.Fatalf("parse(%q) = %q, %q", token, gotID, gotSecret)
			}
			if _, err := hex.DecodeString(gotID); err != nil {
				t.Fatalf("parse(%q): id %q is not hex", token, gotID)
			}
		}
		if len(idRaw) != idBytes || len(secretRaw) != secretBytes {
			return
		}
		wantID, wantSecret := hex.EncodeToString(idRaw), base64.RawURLEncoding.EncodeToString(secretRaw)
		if gotID, gotSecret, ok := parse(Prefix + wantID + "_" + wantSecret); !ok || gotID != wantID || gotSecret != wantSecret {
			t.Fatalf("an issued key %s_%s parses as %q, %q, %v", wantID, wantSecret, gotID, gotSecret, ok)
		}
	})
}
