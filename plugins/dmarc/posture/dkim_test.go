package posture_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"math/big"
	"strings"
	"sync"
	"testing"

	"github.com/stewardhq/steward/plugins/dmarc/posture"
)

// keys are generated once per test binary: RSA key generation is slow.
var keys = sync.OnceValue(func() map[string]string {
	out := map[string]string{}
	for _, bits := range []int{1024, 2048} {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			panic(err)
		}
		spki, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			panic(err)
		}
		name := map[int]string{1024: "rsa1024", 2048: "rsa2048"}[bits]
		out[name] = base64.StdEncoding.EncodeToString(spki)
		out[name+"-pkcs1"] = base64.StdEncoding.EncodeToString(x509.MarshalPKCS1PublicKey(&k.PublicKey))
	}
	// Go refuses to generate RSA keys under 1024 bits; a key's length is
	// its modulus's, which need not be a product of primes to parse.
	n := new(big.Int).Lsh(big.NewInt(1), 511)
	n.SetBit(n, 0, 1)
	spki, err := x509.MarshalPKIXPublicKey(&rsa.PublicKey{N: n, E: 65537})
	if err != nil {
		panic(err)
	}
	out["rsa512"] = base64.StdEncoding.EncodeToString(spki)
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	out["ed25519"] = base64.StdEncoding.EncodeToString(pub)
	spki, err = x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic(err)
	}
	out["ed25519-spki"] = base64.StdEncoding.EncodeToString(spki)
	return out
})

// folded splits a base64 key with spaces, as long TXT values often are.
func folded(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i += 64 {
		b.WriteString(s[i:min(i+64, len(s))])
		b.WriteString(" ")
	}
	return b.String()
}

func TestParseDKIMKey(t *testing.T) {
	k := keys()
	for _, tc := range []struct {
		name, record string
		keyType      string
		bits         int
		revoked      bool
		usable       bool
		want, not    []string
	}{
		{name: "2048-bit RSA", record: "v=DKIM1; k=rsa; p=" + k["rsa2048"], keyType: "rsa", bits: 2048, usable: true,
			not: []string{"dkim_key_1024", "dkim_key_too_short"}},
		{name: "2048-bit RSA, folded, no k", record: "v=DKIM1; p=" + folded(k["rsa2048"]), keyType: "rsa", bits: 2048, usable: true},
		{name: "PKCS #1", record: "p=" + k["rsa2048-pkcs1"], keyType: "rsa", bits: 2048, usable: true},
		{name: "1024-bit RSA", record: "v=DKIM1; k=rsa; p=" + k["rsa1024"], keyType: "rsa", bits: 1024, usable: true, want: []string{"dkim_key_1024"}},
		{name: "512-bit RSA", record: "v=DKIM1; k=rsa; p=" + k["rsa512"], keyType: "rsa", bits: 512, want: []string{"dkim_key_too_short"}},
		{name: "Ed25519", record: "v=DKIM1; k=ed25519; p=" + k["ed25519"], keyType: "ed25519", bits: 256, usable: true},
		{name: "Ed25519 under k=rsa", record: "v=DKIM1; p=" + k["ed25519-spki"], keyType: "rsa", want: []string{"dkim_key_type_mismatch"}},
		{name: "Ed25519 of the wrong size", record: "v=DKIM1; k=ed25519; p=" + k["rsa2048"], keyType: "ed25519", want: []string{"dkim_bad_key"}},
		{name: "revoked", record: "v=DKIM1; k=rsa; p=", keyType: "rsa", revoked: true, want: []string{"dkim_revoked"}},
		{name: "no p", record: "v=DKIM1; k=rsa", keyType: "rsa", want: []string{"dkim_no_key"}},
		{name: "not base64", record: "v=DKIM1; p=not*base64", keyType: "rsa", want: []string{"dkim_bad_key"}},
		{name: "not a key", record: "v=DKIM1; p=" + base64.StdEncoding.EncodeToString([]byte("hello")), keyType: "rsa", want: []string{"dkim_bad_key"}},
		{name: "unknown type", record: "v=DKIM1; k=dsa; p=" + k["rsa2048"], keyType: "dsa", want: []string{"dkim_unknown_key_type"}},
		{name: "testing", record: "v=DKIM1; t=s:y; p=" + k["rsa2048"], keyType: "rsa", bits: 2048, usable: true, want: []string{"dkim_testing"}},
		{name: "SHA-1 only", record: "v=DKIM1; h=sha1; p=" + k["rsa2048"], keyType: "rsa", bits: 2048, want: []string{"dkim_sha1_only"}},
		{name: "both hashes", record: "v=DKIM1; h=sha1:sha256; p=" + k["rsa2048"], keyType: "rsa", bits: 2048, usable: true, not: []string{"dkim_sha1_only"}},
		{name: "not for email", record: "v=DKIM1; s=tlsrpt; p=" + k["rsa2048"], keyType: "rsa", bits: 2048, want: []string{"dkim_not_for_email"}},
		{name: "v not first", record: "k=rsa; v=DKIM1; p=" + k["rsa2048"], keyType: "rsa", bits: 2048, want: []string{"dkim_version"}},
		{name: "duplicate tag", record: "v=DKIM1; p=" + k["rsa2048"] + "; p=", keyType: "rsa", bits: 2048, want: []string{"dkim_duplicate_tag"}},
		{name: "case-sensitive tags", record: "v=DKIM1; K=ed25519; p=" + k["rsa2048"], keyType: "rsa", bits: 2048, usable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, ps := posture.ParseDKIMKey(tc.record)
			if !key.Present || key.KeyType != tc.keyType || key.Bits != tc.bits || key.Revoked != tc.revoked || key.Usable() != tc.usable {
				t.Errorf("key %+v, usable %v", key, key.Usable())
			}
			if len(key.Problems) != len(ps) {
				t.Errorf("key's problems %v, returned %v", key.Problems, ps)
			}
			hasCodes(t, tc.name, ps, tc.want, tc.not)
		})
	}
	if key, ps := posture.ParseDKIMKey(" "); key.Present || key.KeyType != "" || len(ps) != 0 {
		t.Errorf("no record: %+v, %v", key, ps)
	}
}
