package auth

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/jellydator/ttlcache/v3"

	"github.com/stewardhq/steward/host/api"
)

// Token types, carried in the typ claim. Verify insists on the one asked
// for, so a long-lived refresh token can never be used as an access token.
const (
	TypeAccess  = "access"
	TypeRefresh = "refresh"
)

// Verification errors. Verify wraps one of them with the reason; callers
// answer 401 for both and may use ErrExpired to tell a client to refresh.
var (
	ErrExpired = errors.New("auth: token expired")
	ErrInvalid = errors.New("auth: token invalid")
)

// MinSecretLen is the shortest HS256 secret accepted: 32 bytes, the size of
// the SHA-256 output, below which the key is weaker than the MAC.
const MinSecretLen = 32

// leeway absorbs clock skew between host replicas on exp, nbf and iat. It
// is kept small because it also extends every token's life by as much.
// The revocation stores keep an entry for as long past exp (keepUntil), so
// the two cannot drift apart.
const leeway = 10 * time.Second

// verifiedCapacity bounds the tokens whose verified claims are kept: the
// sessions active at once on a replica, beyond which the least recently
// used are verified again.
const verifiedCapacity = 10_000

// Claims is the payload of Steward's tokens.
type Claims struct {
	Email string   `json:"email,omitempty"`
	Name  string   `json:"name,omitempty"`
	Roles []string `json:"roles,omitempty"`
	Admin bool     `json:"adm,omitempty"`
	Type  string   `json:"typ"`
	jwt.RegisteredClaims
}

// Principal rebuilds the user a verified access token stands for. TenantIDs
// are left empty: tenant membership changes too often to freeze into a
// token, so the caller looks it up.
func (c Claims) Principal() api.Principal {
	return api.Principal{
		ID:      c.Subject,
		Email:   c.Email,
		Name:    c.Name,
		Roles:   c.Roles,
		IsAdmin: c.Admin,
		Kind:    api.KindUser,
	}
}

// KeySet holds the signing secrets by key id (kid). Tokens are signed with
// Current and verified with whichever key their kid names, so a secret can
// be rotated by adding the new one as Current and dropping the old one once
// the tokens it signed have expired.
type KeySet struct {
	Current string
	Keys    map[string][]byte
}

// Issuer signs and verifies tokens.
type Issuer struct {
	keys       KeySet
	accessTTL  time.Duration
	refreshTTL time.Duration
	issuer     string
	parser     *jwt.Parser
	now        func() time.Time
	// verified keeps the claims of tokens that passed Verify, by the
	// token's SHA-256, until they expire: checking the signature and
	// decoding the claims again costs more than the rest of
	// authenticating a request.
	verified *ttlcache.Cache[[sha256.Size]byte, Claims]
}

// NewIssuer checks keys and returns an Issuer that stamps tokens with the
// given iss and lifetimes.
func NewIssuer(keys KeySet, accessTTL, refreshTTL time.Duration, issuer string) (*Issuer, error) {
	if keys.Current == "" {
		return nil, errors.New("auth: key set has no current key id")
	}
	if _, ok := keys.Keys[keys.Current]; !ok {
		return nil, fmt.Errorf("auth: current key id %q has no secret", keys.Current)
	}
	for kid, secret := range keys.Keys {
		if len(secret) < MinSecretLen {
			return nil, fmt.Errorf("auth: secret for key id %q is %d bytes, want at least %d", kid, len(secret), MinSecretLen)
		}
	}
	if accessTTL <= 0 || refreshTTL <= 0 {
		return nil, errors.New("auth: token lifetimes must be positive")
	}
	if issuer == "" {
		return nil, errors.New("auth: issuer must not be empty")
	}
	iss := &Issuer{
		// Copied so that a caller mutating its map cannot change the keys
		// under a running Issuer.
		keys:       KeySet{Current: keys.Current, Keys: maps.Clone(keys.Keys)},
		accessTTL:  accessTTL,
		refreshTTL: refreshTTL,
		issuer:     issuer,
		now:        time.Now,
		verified: ttlcache.New(
			ttlcache.WithCapacity[[sha256.Size]byte, Claims](verifiedCapacity),
			ttlcache.WithDisableTouchOnHit[[sha256.Size]byte, Claims](),
		),
	}
	iss.parser = jwt.NewParser(
		// Pinning the algorithm defeats alg=none and algorithm-confusion
		// tokens before any key is looked at.
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(issuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(leeway),
		jwt.WithTimeFunc(func() time.Time { return iss.now() }),
	)
	return iss, nil
}

// IssueAccess returns a signed access token for p and the claims it holds.
// Only users get tokens: an API key authenticates with itself on every
// request, and a token minted from it would outlive the key's revocation.
func (i *Issuer) IssueAccess(p api.Principal) (string, Claims, error) {
	if err := tokenSubject(p); err != nil {
		return "", Claims{}, err
	}
	claims := i.baseClaims(p.ID, TypeAccess, i.accessTTL)
	claims.Email = p.Email
	claims.Name = p.Name
	claims.Roles = p.Roles
	claims.Admin = p.IsAdmin
	return i.sign(claims)
}

// IssueRefresh returns a signed refresh token for p. It names the user only;
// whoever exchanges it must reload the user before issuing a new access
// token.
func (i *Issuer) IssueRefresh(p api.Principal) (string, Claims, error) {
	if err := tokenSubject(p); err != nil {
		return "", Claims{}, err
	}
	return i.sign(i.baseClaims(p.ID, TypeRefresh, i.refreshTTL))
}

func tokenSubject(p api.Principal) error {
	if p.Kind != api.KindUser {
		return fmt.Errorf("auth: tokens are issued to users only, not to kind %q", p.Kind)
	}
	if p.ID == "" {
		return errors.New("auth: principal has no id")
	}
	return nil
}

func (i *Issuer) baseClaims(subject, typ string, ttl time.Duration) Claims {
	now := i.now()
	return Claims{
		Type: typ,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    i.issuer,
			Subject:   subject,
			ID:        uuid.NewString(),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
	}
}

func (i *Issuer) sign(claims Claims) (string, Claims, error) {
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	tok.Header["kid"] = i.keys.Current
	signed, err := tok.SignedString(i.keys.Keys[i.keys.Current])
	if err != nil {
		return "", Claims{}, fmt.Errorf("auth: sign token: %w", err)
	}
	return signed, claims, nil
}

// Verify checks token's signature, algorithm, issuer, times and type and
// returns its claims. Any failure wraps ErrExpired or ErrInvalid; an expired
// token is reported as ErrExpired only once its signature has been proven
// good, so the distinction leaks nothing about forged tokens.
//
// A token verified before is recognised by its digest and only its expiry
// and type are checked again: its signature, issuer and key cannot have
// changed, and nbf and iat, having passed once, stay passed.
func (i *Issuer) Verify(token, typ string) (Claims, error) {
	if typ != TypeAccess && typ != TypeRefresh {
		return Claims{}, fmt.Errorf("%w: unknown token type %q requested", ErrInvalid, typ)
	}
	sum := sha256.Sum256([]byte(token))
	if it := i.verified.Get(sum); it != nil {
		if c := it.Value(); c.Type == typ && i.now().Before(c.ExpiresAt.Add(leeway)) {
			return c, nil
		}
	}
	var claims Claims
	_, err := i.parser.ParseWithClaims(token, &claims, i.key)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Claims{}, fmt.Errorf("%w: %v", ErrExpired, err)
	case err != nil:
		return Claims{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	case claims.Type != typ:
		return Claims{}, fmt.Errorf("%w: %q token where %q was expected", ErrInvalid, claims.Type, typ)
	case claims.Subject == "" || claims.ID == "":
		return Claims{}, fmt.Errorf("%w: missing sub or jti", ErrInvalid)
	}
	// Kept until the parser would refuse the token as expired.
	if ttl := claims.ExpiresAt.Add(leeway).Sub(i.now()); ttl > 0 {
		i.verified.Set(sum, claims, ttl)
	}
	return claims, nil
}

func (i *Issuer) key(tok *jwt.Token) (any, error) {
	kid, ok := tok.Header["kid"].(string)
	if !ok {
		return nil, errors.New("missing kid header")
	}
	secret, ok := i.keys.Keys[kid]
	if !ok {
		return nil, fmt.Errorf("unknown kid %q", kid)
	}
	return secret, nil
}
