package posture

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
)

// DKIMKey is a parsed DKIM key record (RFC 6376, 3.6.1; Ed25519 keys
// RFC 8463).
type DKIMKey struct {
	// Selector is set by Check; ParseDKIMKey leaves it "".
	Selector string `json:"selector"`
	// Present is set when the selector publishes a record.
	Present bool `json:"present"`
	// KeyType is k: "rsa" (the default) or "ed25519"; "" without a key.
	KeyType string `json:"key_type"`
	// Bits is the key's length: the RSA modulus's, 256 for Ed25519, 0
	// when the key does not parse.
	Bits int `json:"bits"`
	// Revoked is set when p is empty: the key was withdrawn.
	Revoked bool `json:"revoked"`
	// Testing is set by the y flag: receivers must not treat mail signed
	// with the key differently from unsigned mail.
	Testing  bool      `json:"testing"`
	Problems []Problem `json:"problems"`
}

// Usable reports whether receivers can verify signatures with the key:
// it is present, not revoked, decodes, and has no critical or high
// problem (too short, SHA-1 only, not for e-mail, a broken record).
func (k DKIMKey) Usable() bool {
	return k.Present && !k.Revoked && k.Bits > 0 &&
		!slices.ContainsFunc(k.Problems, func(p Problem) bool { return SeverityRank(p.Severity) <= SeverityRank(SeverityHigh) })
}

// DKIM key lengths (RFC 8301, 3.2): receivers reject RSA keys under 1024
// bits, and signers should use 2048.
const (
	dkimMinBits  = 1024
	dkimGoodBits = 2048
)

// ParseDKIMKey parses a DKIM key record: its tags, and its public key
// from p's base64, a SubjectPublicKeyInfo as RFC 6376 says or a bare
// PKCS #1 key as some publishers write, or Ed25519's 32 raw bytes. An
// empty record is no key: Present is false.
func ParseDKIMKey(record string) (DKIMKey, []Problem) {
	if strings.TrimSpace(record) == "" {
		return DKIMKey{}, nil
	}
	key := DKIMKey{Present: true, KeyType: "rsa"}
	var ps problems
	tags, order := parseTags(record, "dkim", "DKIM key record", true, &ps)
	if v, ok := tags["v"]; ok && (order[0] != "v" || v != "DKIM1") {
		ps.add("dkim_version", SeverityHigh, "The DKIM key record's v tag is not v=DKIM1 at its start: receivers ignore the key.")
	}
	if v, ok := tags["k"]; ok {
		key.KeyType = strings.ToLower(v)
	}
	if v, ok := tags["h"]; ok && !acceptsSHA256(v) {
		ps.add("dkim_sha1_only", SeverityHigh, fmt.Sprintf("The DKIM key allows only the hash algorithms %s: receivers no longer accept SHA-1 signatures (RFC 8301).", v))
	}
	if v, ok := tags["s"]; ok && !forEmail(v) {
		ps.add("dkim_not_for_email", SeverityHigh, fmt.Sprintf("The DKIM key is restricted to the services %s, which exclude e-mail: receivers do not verify mail with it.", v))
	}
	if v, ok := tags["t"]; ok {
		for _, f := range strings.Split(v, ":") {
			if strings.TrimSpace(f) == "y" {
				key.Testing = true
				ps.add("dkim_testing", SeverityMedium, "The DKIM key is in testing mode (t=y): receivers treat signed mail like unsigned mail.")
			}
		}
	}
	p, ok := tags["p"]
	switch {
	case !ok:
		ps.add("dkim_no_key", SeverityCritical, "The DKIM key record has no p tag: receivers cannot verify signatures with it.")
	case p == "":
		key.Revoked = true
		ps.add("dkim_revoked", SeverityMedium, "The DKIM key is revoked (empty p=): mail signed with it fails DKIM.")
	default:
		keyBits(&key, p, &ps)
	}
	key.Problems = ps.list
	return key, ps.list
}

// keyBits decodes p into the key's length, adding the problems of a key
// that does not decode or is short.
func keyBits(key *DKIMKey, p string, ps *problems) {
	// Folding whitespace may appear anywhere in the base64 (RFC 6376, 3.6.1).
	der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(p), ""))
	if err != nil {
		ps.add("dkim_bad_key", SeverityCritical, "The DKIM key's p= is not valid base64: receivers cannot verify signatures with it.")
		return
	}
	switch key.KeyType {
	case "ed25519":
		if len(der) != ed25519.PublicKeySize {
			ps.add("dkim_bad_key", SeverityCritical, fmt.Sprintf("The DKIM Ed25519 key is %d bytes instead of %d: receivers cannot verify signatures with it.", len(der), ed25519.PublicKeySize))
			return
		}
		key.Bits = 8 * ed25519.PublicKeySize
	case "rsa":
		pub, err := x509.ParsePKIXPublicKey(der)
		if err != nil {
			if rk, err1 := x509.ParsePKCS1PublicKey(der); err1 == nil {
				pub, err = rk, nil
			}
		}
		rk, isRSA := pub.(*rsa.PublicKey)
		switch {
		case err != nil:
			ps.add("dkim_bad_key", SeverityCritical, "The DKIM key's p= is not an RSA public key: receivers cannot verify signatures with it.")
			return
		case !isRSA:
			ps.add("dkim_key_type_mismatch", SeverityCritical, fmt.Sprintf("The DKIM record says k=rsa but holds a %s key: receivers cannot verify signatures with it.", keyKind(pub)))
			return
		}
		key.Bits = rk.N.BitLen()
		switch {
		case key.Bits < dkimMinBits:
			ps.add("dkim_key_too_short", SeverityCritical, fmt.Sprintf("The DKIM key is %d-bit RSA: short enough to be broken, and receivers reject keys under %d bits.", key.Bits, dkimMinBits))
		case key.Bits < dkimGoodBits:
			ps.add("dkim_key_1024", SeverityMedium, fmt.Sprintf("The DKIM key is %d-bit RSA: receivers still accept it, but %d bits is the recommended length.", key.Bits, dkimGoodBits))
		}
	default:
		ps.add("dkim_unknown_key_type", SeverityCritical, fmt.Sprintf("The DKIM key type k=%s is neither rsa nor ed25519: receivers cannot verify signatures with it.", key.KeyType))
	}
}

func keyKind(pub any) string {
	switch pub.(type) {
	case ed25519.PublicKey:
		return "Ed25519"
	case *ecdsa.PublicKey:
		return "ECDSA"
	}
	return "non-RSA"
}

// acceptsSHA256 reports whether an h= list allows SHA-256.
func acceptsSHA256(h string) bool {
	for _, a := range strings.Split(h, ":") {
		if strings.EqualFold(strings.TrimSpace(a), "sha256") {
			return true
		}
	}
	return false
}

// forEmail reports whether an s= list covers e-mail: "*" or "email".
func forEmail(s string) bool {
	for _, t := range strings.Split(s, ":") {
		if t = strings.TrimSpace(t); t == "*" || strings.EqualFold(t, "email") {
			return true
		}
	}
	return false
}
