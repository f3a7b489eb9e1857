package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/stewardhq/steward/host/api"
)

const (
	testIssuer = "steward-test"
	accessTTL  = 15 * time.Minute
	refreshTTL = 24 * time.Hour
)

var (
	secretA = []byte(strings.Repeat("a", MinSecretLen))
	secretB = []byte(strings.Repeat("b", MinSecretLen))
)

func newIssuer(t *testing.T, current string, keys map[string][]byte) *Issuer {
	t.Helper()
	iss, err := NewIssuer(KeySet{Current: current, Keys: keys}, accessTTL, refreshTTL, testIssuer)
	if err != nil {
		t.Fatalf("NewIssuer: %v", err)
	}
	return iss
}

func alice() api.Principal {
	return api.Principal{
		ID:        "user-1",
		Email:     "alice@example.com",
		Name:      "Alice",
		Roles:     []string{"viewer", "operator"},
		IsAdmin:   true,
		Kind:      api.KindUser,
		TenantIDs: []string{"t1"},
	}
}

func headerOf(t *testing.T, token string) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	if err != nil {
		t.Fatalf("decode header: %v", err)
	}
	var h map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("unmarshal header: %v", err)
	}
	return h
}

// handMade assembles a token from raw parts, signing header.payload with
// HMAC-SHA256 under secret whatever alg the header claims.
func handMade(t *testing.T, header, payload map[string]any, secret []byte) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signingInput := enc(header) + "." + enc(payload)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signingInput))
	return signingInput + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func TestAccessRoundTrip(t *testing.T) {
	iss := newIssuer(t, "k1", map[string][]byte{"k1": secretA})
	before := time.Now().Truncate(time.Second)
	token, issued, err := iss.IssueAccess(alice())
	if err != nil {
		t.Fatalf("IssueAccess: %v", err)
	}
	if kid := headerOf(t, token)["kid"]; kid != "k1" {
		t.Errorf("kid header = %v, want k1", kid)
	}

	got, err := iss.Verify(token, TypeAccess)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.Type != TypeAccess || got.Issuer != testIssuer || got.Subject != "user-1" ||
		got.Email != "alice@example.com" || got.Name != "Alice" || !got.Admin ||
		!slices.Equal(got.Roles, []string{"viewer", "operator"}) {
		t.Errorf("verified claims = %+v", got)
	}
	if got.ID != issued.ID {
		t.Errorf("jti = %q, issued %q", got.ID, issued.ID)
	}
	if _, err := uuid.Parse(got.ID); err != nil {
		t.Errorf("jti %q is not a uuid: %v", got.ID, err)
	}
	if iat := got.IssuedAt.Time; iat.Before(before) || got.ExpiresAt.Sub(iat) != accessTTL {
		t.Errorf("iat %v, exp %v; want exp = iat + %v", iat, got.ExpiresAt.Time, accessTTL)
	}

	want := alice()
	want.TenantIDs = nil
	p := got.Principal()
	if p.ID != want.ID || p.Email != want.Email || p.Name != want.Name || p.IsAdmin != want.IsAdmin ||
		p.Kind != want.Kind || !slices.Equal(p.Roles, want.Roles) || p.TenantIDs != nil {
		t.Errorf("Principal() = %+v, want %+v", p, want)
	}

	second, _, err := iss.IssueAccess(alice())
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := iss.Verify(second, TypeAccess); c.ID == got.ID {
		t.Error("two tokens share a jti")
	}
}

func TestTokenTypesAreNotInterchangeable(t *testing.T) {
	iss := newIssuer(t, "k1", map[string][]byte{"k1": secretA})
	refresh, _, err := iss.IssueRefresh(alice())
	if err != nil {
		t.Fatalf("IssueRefresh: %v", err)
	}
	access, _, err := iss.IssueAccess(alice())
	if err != nil {
		t.Fatal(err)
	}

	got, err := iss.Verify(refresh, TypeRefresh)
	if err != nil {
		t.Fatalf("Verify refresh: %v", err)
	}
	if got.Subject != "user-1" || got.Email != "" || got.Roles != nil || got.Admin {
		t.Errorf("refresh claims carry more than the user id: %+v", got)
	}
	if got.ExpiresAt.Sub(got.IssuedAt.Time) != refreshTTL {
		t.Errorf("refresh lifetime = %v, want %v", got.ExpiresAt.Sub(got.IssuedAt.Time), refreshTTL)
	}

	tests := []struct {
		name, token, as string
	}{
		{"refresh as access", refresh, TypeAccess},
		{"access as refresh", access, TypeRefresh},
		{"unknown requested type", access, "id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := iss.Verify(tt.token, tt.as); !errors.Is(err, ErrInvalid) {
				t.Errorf("Verify = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestTimeChecks(t *testing.T) {
	realNow := time.Now()
	tests := []struct {
		name     string
		issuedAt time.Time
		wantErr  error
	}{
		{"fresh", realNow, nil},
		{"expired", realNow.Add(-accessTTL - time.Minute), ErrExpired},
		{"expired within leeway", realNow.Add(-accessTTL - leeway/2), nil},
		{"issued in the future", realNow.Add(time.Minute), ErrInvalid},
		{"issued in the future within leeway", realNow.Add(leeway / 2), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss := newIssuer(t, "k1", map[string][]byte{"k1": secretA})
			iss.now = func() time.Time { return tt.issuedAt }
			token, _, err := iss.IssueAccess(alice())
			if err != nil {
				t.Fatal(err)
			}
			iss.now = func() time.Time { return realNow }
			_, err = iss.Verify(token, TypeAccess)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Verify = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestVerifiedTokenIsRecheckedOnExpiryAndType: a token verified once is not
// verified in full again, but its expiry and type still hold.
func TestVerifiedTokenIsRecheckedOnExpiryAndType(t *testing.T) {
	iss := newIssuer(t, "k1", map[string][]byte{"k1": secretA})
	realNow := time.Now()
	iss.now = func() time.Time { return realNow }
	token, issued, err := iss.IssueAccess(alice())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got, err := iss.Verify(token, TypeAccess); err != nil || got.ID != issued.ID || got.Subject != "user-1" {
			t.Fatalf("Verify = %+v, %v", got, err)
		}
	}
	if _, err := iss.Verify(token, TypeRefresh); !errors.Is(err, ErrInvalid) {
		t.Errorf("a verified access token presented as a refresh token: %v, want ErrInvalid", err)
	}
	iss.now = func() time.Time { return realNow.Add(accessTTL + leeway/2) }
	if _, err := iss.Verify(token, TypeAccess); err != nil {
		t.Errorf("within the leeway after expiry: %v", err)
	}
	iss.now = func() time.Time { return realNow.Add(accessTTL + leeway) }
	if _, err := iss.Verify(token, TypeAccess); !errors.Is(err, ErrExpired) {
		t.Errorf("a verified token past its expiry and the leeway: %v, want ErrExpired", err)
	}
	// A token that differs from a verified one, if only in its signature,
	// is verified in full.
	forged := token[:strings.LastIndex(token, ".")+1] + strings.Repeat("A", 43)
	iss.now = func() time.Time { return realNow }
	if _, err := iss.Verify(forged, TypeAccess); !errors.Is(err, ErrInvalid) {
		t.Errorf("forged signature on a verified token: %v, want ErrInvalid", err)
	}
}

func TestForgedTokensAreInvalid(t *testing.T) {
	iss := newIssuer(t, "k1", map[string][]byte{"k1": secretA})
	now := time.Now()
	payload := func(mod func(map[string]any)) map[string]any {
		p := map[string]any{
			"sub": "user-1", "jti": uuid.NewString(), "typ": TypeAccess, "iss": testIssuer,
			"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		}
		if mod != nil {
			mod(p)
		}
		return p
	}
	hs256 := map[string]any{"alg": "HS256", "typ": "JWT", "kid": "k1"}

	noneToken, err := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims(payload(nil))).
		SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	hs512 := jwt.NewWithClaims(jwt.SigningMethodHS512, jwt.MapClaims(payload(nil)))
	hs512.Header["kid"] = "k1"
	hs512Token, err := hs512.SignedString(secretA)
	if err != nil {
		t.Fatal(err)
	}
	genuine, _, err := iss.IssueAccess(alice())
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(genuine, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"user-2"}`)) + "." + parts[2]
	expiredForgery := handMade(t, hs256, payload(func(p map[string]any) { p["exp"] = now.Add(-time.Hour).Unix() }), secretB)

	// The forgeries below differ from this baseline in one respect each, so
	// each rejection is down to that respect alone.
	if _, err := iss.Verify(handMade(t, hs256, payload(nil), secretA), TypeAccess); err != nil {
		t.Fatalf("hand-made baseline: %v", err)
	}

	tests := []struct {
		name  string
		token string
	}{
		{"wrong secret", handMade(t, hs256, payload(nil), secretB)},
		{"expired and wrong secret", expiredForgery},
		{"alg none", noneToken},
		{"RS256 header signed with the HMAC secret", handMade(t, map[string]any{"alg": "RS256", "kid": "k1"}, payload(nil), secretA)},
		{"HS512", hs512Token},
		{"unknown kid", handMade(t, map[string]any{"alg": "HS256", "kid": "k9"}, payload(nil), secretA)},
		{"missing kid", handMade(t, map[string]any{"alg": "HS256"}, payload(nil), secretA)},
		{"wrong issuer", handMade(t, hs256, payload(func(p map[string]any) { p["iss"] = "someone-else" }), secretA)},
		{"missing exp", handMade(t, hs256, payload(func(p map[string]any) { delete(p, "exp") }), secretA)},
		{"not yet valid", handMade(t, hs256, payload(func(p map[string]any) { p["nbf"] = now.Add(time.Hour).Unix() }), secretA)},
		{"missing sub", handMade(t, hs256, payload(func(p map[string]any) { delete(p, "sub") }), secretA)},
		{"missing jti", handMade(t, hs256, payload(func(p map[string]any) { delete(p, "jti") }), secretA)},
		{"missing typ", handMade(t, hs256, payload(func(p map[string]any) { delete(p, "typ") }), secretA)},
		{"tampered payload", tampered},
		{"malformed", "not.a.jwt"},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := iss.Verify(tt.token, TypeAccess)
			if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrExpired) {
				t.Errorf("Verify = %v, want ErrInvalid only", err)
			}
		})
	}
}

func TestKeyRotation(t *testing.T) {
	old := newIssuer(t, "k1", map[string][]byte{"k1": secretA})
	oldToken, _, err := old.IssueAccess(alice())
	if err != nil {
		t.Fatal(err)
	}

	keys := map[string][]byte{"k1": secretA, "k2": secretB}
	rotated := newIssuer(t, "k2", keys)
	// The issuer must not see later changes to the caller's map.
	delete(keys, "k1")
	if _, err := rotated.Verify(oldToken, TypeAccess); err != nil {
		t.Errorf("token signed with the previous key: %v", err)
	}
	newToken, _, err := rotated.IssueAccess(alice())
	if err != nil {
		t.Fatal(err)
	}
	if kid := headerOf(t, newToken)["kid"]; kid != "k2" {
		t.Errorf("new token kid = %v, want k2", kid)
	}
	if _, err := rotated.Verify(newToken, TypeAccess); err != nil {
		t.Errorf("token signed with the current key: %v", err)
	}

	retired := newIssuer(t, "k2", map[string][]byte{"k2": secretB})
	if _, err := retired.Verify(oldToken, TypeAccess); !errors.Is(err, ErrInvalid) {
		t.Errorf("token whose key was retired: Verify = %v, want ErrInvalid", err)
	}
	if _, err := old.Verify(newToken, TypeAccess); !errors.Is(err, ErrInvalid) {
		t.Errorf("token from a key this issuer does not know: Verify = %v, want ErrInvalid", err)
	}
}

func TestNewIssuerRejects(t *testing.T) {
	good := map[string][]byte{"k1": secretA}
	tests := []struct {
		name     string
		keys     KeySet
		access   time.Duration
		refresh  time.Duration
		issuerID string
	}{
		{"no current kid", KeySet{Keys: good}, accessTTL, refreshTTL, testIssuer},
		{"current kid without secret", KeySet{Current: "k2", Keys: good}, accessTTL, refreshTTL, testIssuer},
		{"short secret", KeySet{Current: "k1", Keys: map[string][]byte{"k1": secretA, "k0": []byte("short")}}, accessTTL, refreshTTL, testIssuer},
		{"zero access ttl", KeySet{Current: "k1", Keys: good}, 0, refreshTTL, testIssuer},
		{"negative refresh ttl", KeySet{Current: "k1", Keys: good}, accessTTL, -time.Hour, testIssuer},
		{"empty issuer", KeySet{Current: "k1", Keys: good}, accessTTL, refreshTTL, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewIssuer(tt.keys, tt.access, tt.refresh, tt.issuerID); err == nil {
				t.Error("NewIssuer succeeded, want an error")
			}
		})
	}
}

func TestIssueOnlyToUsers(t *testing.T) {
	iss := newIssuer(t, "k1", map[string][]byte{"k1": secretA})
	apiKey := alice()
	apiKey.Kind = api.KindAPIKey
	noKind := alice()
	noKind.Kind = ""
	noID := alice()
	noID.ID = ""
	for name, p := range map[string]api.Principal{"api key": apiKey, "no kind": noKind, "no id": noID} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := iss.IssueAccess(p); err == nil {
				t.Error("IssueAccess succeeded, want an error")
			}
			if _, _, err := iss.IssueRefresh(p); err == nil {
				t.Error("IssueRefresh succeeded, want an error")
			}
		})
	}
}
