package auth

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzVerify presents arbitrary bearer tokens, seeded with tokens the
// issuer signed and variations of them. A token that verifies carries
// exactly the claims of a token the issuer signed, of the type asked for:
// no edit of a signed token, however it is encoded, changes what it says.
// Every refusal is ErrInvalid or ErrExpired.
func FuzzVerify(f *testing.F) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	iss, err := NewIssuer(KeySet{Current: "k2", Keys: map[string][]byte{"k1": secretA, "k2": secretB}}, accessTTL, refreshTTL, testIssuer)
	if err != nil {
		f.Fatal(err)
	}
	iss.now = func() time.Time { return now }
	// Signed with fixed ids, so that every fuzzing process holds the same
	// tokens as the seeds.
	signed := map[string]Claims{}
	sign := func(keys *Issuer, id, typ string, c Claims) string {
		c.Type, c.RegisteredClaims = typ, jwt.RegisteredClaims{Issuer: testIssuer, Subject: c.Subject, ID: id,
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}
		tok, _, err := keys.sign(c)
		if err != nil {
			f.Fatal(err)
		}
		signed[id] = c
		return tok
	}
	user := Claims{Email: "alice@example.com", Name: "Alice", Roles: []string{"viewer"}, RegisteredClaims: jwt.RegisteredClaims{Subject: "user-1"}}
	access := sign(iss, "a1", TypeAccess, user)
	refresh := sign(iss, "r1", TypeRefresh, user)
	adminAccess := sign(iss, "a2", TypeAccess, Claims{Email: "root@example.com", Admin: true, RegisteredClaims: jwt.RegisteredClaims{Subject: "user-2"}})
	before, err := NewIssuer(KeySet{Current: "k1", Keys: map[string][]byte{"k1": secretA}}, accessTTL, refreshTTL, testIssuer)
	if err != nil {
		f.Fatal(err)
	}
	rotated := sign(before, "a3", TypeAccess, Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: "user-3"}})
	parts := strings.Split(access, ".")
	adminParts := strings.Split(adminAccess, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"k2"}`))
	for _, seed := range []string{
		access, refresh, adminAccess, rotated,
		parts[0] + "." + adminParts[1] + "." + parts[2],
		none + "." + parts[1] + ".",
		parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-1] + "B",
		parts[0] + "." + parts[1] + "=." + parts[2],
		"Bearer " + access, access + ".", "", "a.b.c",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		for _, typ := range []string{TypeAccess, TypeRefresh} {
			c, err := iss.Verify(token, typ)
			if err != nil {
				if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrExpired) {
					t.Fatalf("Verify(%q, %s): %v", token, typ, err)
				}
				continue
			}
			want, ok := signed[c.ID]
			if !ok || c.Type != typ || !sameClaims(c, want) {
				t.Fatalf("Verify(%q, %s) = %+v; the issuer signed %+v", token, typ, c, want)
			}
		}
	})
}

func sameClaims(a, b Claims) bool {
	return a.Email == b.Email && a.Name == b.Name && slices.Equal(a.Roles, b.Roles) && a.Admin == b.Admin && a.Type == b.Type &&
		a.Issuer == b.Issuer && a.Subject == b.Subject && a.ID == b.ID && slices.Equal(a.Audience, b.Audience) &&
		a.ExpiresAt.Equal(b.ExpiresAt.Time) && a.IssuedAt.Equal(b.IssuedAt.Time) && numericEqual(a.NotBefore, b.NotBefore)
}

func numericEqual(a, b *jwt.NumericDate) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b.Time)
}
