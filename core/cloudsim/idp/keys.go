package idp

import (
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/stewardhq/steward/core/cloudsim"
)

// signingKey is an RSA key that signs tokens. It does not change once made,
// so holders share it without the provider's lock.
type signingKey struct {
	kid     string
	private *rsa.PrivateKey
	created time.Time
}

func newSigningKey(now time.Time) *signingKey {
	// Entra ID signs with 2048-bit RSA keys.
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		// GenerateKey fails only for unsupported sizes or a failing random
		// source, and crypto/rand never fails.
		panic("idp: generating a signing key: " + err.Error())
	}
	return &signingKey{kid: rand.Text(), private: priv, created: now}
}

func (k *signingKey) public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: &k.private.PublicKey, KeyID: k.kid, Algorithm: string(jose.RS256), Use: "sig"}
}

// signingKeys returns the published keys, the current one first. Rotation
// follows the simulator's clock, so it happens here, on the first use after
// the interval has passed, and tests rotate keys by moving the clock.
func (p *Provider) signingKeys() []*signingKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := p.sim.Now(); now.Sub(p.keys[0].created) >= p.opts.KeyRotation {
		p.rotateLocked(now)
	}
	return slices.Clone(p.keys)
}

// Rotate replaces the signing key at once, as the rotation interval does:
// the replaced key stays published, the one before it is retired.
func (p *Provider) Rotate() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rotateLocked(p.sim.Now())
}

func (p *Provider) rotateLocked(now time.Time) {
	p.keys = []*signingKey{newSigningKey(now), p.keys[0]}
}

func (p *Provider) handleKeys(w http.ResponseWriter, r *http.Request) {
	seg := r.PathValue("tenant")
	if _, ok := p.resolveTenant(seg); !ok {
		p.writeTokenError(w, r, unknownTenant(seg))
		return
	}
	var set jose.JSONWebKeySet
	for _, k := range p.signingKeys() {
		set.Keys = append(set.Keys, k.public())
	}
	cloudsim.WriteJSON(w, set)
}

// Claims are the claims of the ID and access tokens the provider issues,
// named as on Entra ID. Times are seconds since the Unix epoch.
type Claims struct {
	Issuer    string `json:"iss"`
	Subject   string `json:"sub"`
	Audience  string `json:"aud"`
	IssuedAt  int64  `json:"iat"`
	NotBefore int64  `json:"nbf"`
	Expiry    int64  `json:"exp"`
	Version   string `json:"ver"`
	// TenantID is the directory tenant of the user or of the client's
	// service principal.
	TenantID string `json:"tid"`
	// ObjectID is the user's object id, or the service principal's in an
	// app-only token.
	ObjectID string `json:"oid"`
	// AppID is the client an access token was issued to.
	AppID string `json:"appid,omitempty"`
	// IDType is "app" in app-only access tokens and "user" in delegated
	// ones.
	IDType string `json:"idtyp,omitempty"`
	// Scope lists a delegated access token's permissions, space-separated.
	Scope string `json:"scp,omitempty"`
	// Roles are a user's app roles, or a client's application permissions
	// in an app-only token.
	Roles             []string `json:"roles,omitempty"`
	Groups            []string `json:"groups,omitempty"`
	Name              string   `json:"name,omitempty"`
	PreferredUsername string   `json:"preferred_username,omitempty"`
	Email             string   `json:"email,omitempty"`
	Nonce             string   `json:"nonce,omitempty"`
}

// sign signs claims with the current key.
func (p *Provider) sign(c Claims) (string, error) {
	k := p.signingKeys()[0]
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.private, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	return jwt.Signed(signer).Claims(c).Serialize()
}

// The errors VerifyAccessToken's errors wrap, so a simulated service can
// answer as the real one does for each (ARM, for one, tells an expired
// token from an invalid one).
var (
	ErrNoToken      = errors.New("no bearer token")
	ErrExpiredToken = errors.New("the token is expired")
	ErrInvalidToken = errors.New("the token is invalid")
)

// VerifyAccessToken authenticates a request's bearer token for a resource:
// its signature against the published keys, its validity period and its
// audience (with or without a trailing slash, as resource identifiers come
// both ways). Under the simulator's ExpireTokens fault every token is
// expired.
func (p *Provider) VerifyAccessToken(r *http.Request, audience string) (Claims, error) {
	if cloudsim.TokensExpired(r) {
		return Claims{}, fmt.Errorf("%w: the simulator expires every token", ErrExpiredToken)
	}
	scheme, raw, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	raw = strings.TrimSpace(raw)
	if !strings.EqualFold(scheme, "Bearer") || raw == "" {
		return Claims{}, ErrNoToken
	}
	c, err := p.verify(raw)
	if err != nil {
		return Claims{}, err
	}
	if !sameResource(c.Audience, audience) {
		return Claims{}, fmt.Errorf("%w: audience %q, not %q", ErrInvalidToken, c.Audience, audience)
	}
	return c, nil
}

// verify checks a token's signature and validity period. Only this
// provider holds its keys, so a good signature vouches for the issuer and
// the other claims. There is no leeway: the simulated services share one
// clock.
func (p *Provider) verify(raw string) (Claims, error) {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	kid := tok.Headers[0].KeyID
	keys := p.signingKeys()
	i := slices.IndexFunc(keys, func(k *signingKey) bool { return k.kid == kid })
	if i < 0 {
		return Claims{}, fmt.Errorf("%w: signing key %q is not published", ErrInvalidToken, kid)
	}
	var c Claims
	if err := tok.Claims(&keys[i].private.PublicKey, &c); err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	now := p.sim.Now().Unix()
	if now >= c.Expiry {
		return Claims{}, fmt.Errorf("%w: expired at %s", ErrExpiredToken, time.Unix(c.Expiry, 0).UTC().Format(time.RFC3339))
	}
	if now < c.NotBefore {
		return Claims{}, fmt.Errorf("%w: not valid before %s", ErrInvalidToken, time.Unix(c.NotBefore, 0).UTC().Format(time.RFC3339))
	}
	return c, nil
}

// sameResource compares resource identifiers, which clients write with and
// without a trailing slash (ARM's is https://management.azure.com/ in
// older tokens).
func sameResource(a, b string) bool {
	return strings.EqualFold(strings.TrimSuffix(a, "/"), strings.TrimSuffix(b, "/"))
}
