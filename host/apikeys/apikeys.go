// Package apikeys keeps the API keys that scripts and integrations use
// instead of a signed-in user.
//
// A key is shown once, at creation, as "stw_<id>_<secret>". Only a SHA-256
// of the secret is stored: the id finds the row and the hashes are compared
// in constant time, so neither a leaked database nor response timing yields
// a working key. Each key acts with the role and tenant scope it was created
// with; an admin key sees every tenant.
//
// [Routes] let admins create, list and revoke keys over HTTP; the host's
// server authenticates the X-API-Key header with [Store.Authenticate].
package apikeys

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/host/tenancy"
)

// Roles a key may carry.
const (
	RoleAdmin    = "admin"
	RoleStandard = "standard"
)

const (
	// Prefix starts every key, so that secret scanners and people can tell
	// a Steward key from other credentials.
	Prefix = "stw_"
	// idBytes of randomness make an id; it is public (listed, audited), so
	// it only needs to be unique.
	idBytes = 8
	// secretBytes of randomness make the secret.
	secretBytes = 32
	// touchInterval bounds how often last_used_at is written per key, so
	// that authenticating a busy key stays a single read.
	touchInterval = time.Minute
	// MaxNameLength bounds a key's name.
	MaxNameLength = 200
)

var (
	// ErrNotFound is returned for an unknown key id.
	ErrNotFound = errors.New("no API key with that id")
	// ErrInvalid is returned for a malformed key, an unknown id or a wrong
	// secret, which are deliberately indistinguishable to the caller.
	ErrInvalid = errors.New("invalid API key")
	// ErrRevoked is returned for a key that was revoked.
	ErrRevoked = errors.New("API key revoked")
	// ErrExpired is returned for a key past its expiry.
	ErrExpired = errors.New("API key expired")
)

// ValidationError reports a creation request the store refuses: a mistake
// of the caller, not a storage failure. Field names the offending input as
// the HTTP API spells it, for example "tenant_ids[1]".
type ValidationError struct {
	Field  string
	Reason string
	Value  any
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
}

// Key is a stored API key. The secret itself is never stored, and its hash
// never leaves the package.
type Key struct {
	bun.BaseModel `bun:"table:api_keys"`
	ID            string     `bun:"id,pk" json:"id"`
	Name          string     `bun:"name" json:"name"`
	Role          string     `bun:"role" json:"role" enum:"admin,standard"`
	TenantIDs     []string   `bun:"tenant_ids,type:text" json:"tenant_ids" doc:"Tenants a standard key may see; empty for an admin key, which sees every tenant"`
	SecretHash    string     `bun:"secret_hash" json:"-"`
	CreatedBy     string     `bun:"created_by" json:"created_by" doc:"Audit actor id of whoever created the key"`
	CreatedAt     time.Time  `bun:"created_at" json:"created_at"`
	ExpiresAt     *time.Time `bun:"expires_at" json:"expires_at"`
	LastUsedAt    *time.Time `bun:"last_used_at" json:"last_used_at" doc:"Updated at most once a minute"`
	RevokedAt     *time.Time `bun:"revoked_at" json:"revoked_at"`
}

// Active reports whether the key still authenticates at now.
func (k Key) Active(now time.Time) bool {
	return k.RevokedAt == nil && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt))
}

// NewKey is what Create needs.
type NewKey struct {
	Name      string
	Role      string
	TenantIDs []string
	// CreatedBy is the creator's audit actor id.
	CreatedBy string
	ExpiresAt *time.Time
}

// Store creates, lists, revokes and authenticates API keys.
type Store struct {
	db      *bun.DB
	tenants *tenancy.Store
	now     func() time.Time
	changed func(context.Context)
}

// New returns a Store on db; tenants checks the scope of new keys.
func New(db *bun.DB, tenants *tenancy.Store) *Store {
	return &Store{db: db, tenants: tenants, now: time.Now, changed: func(context.Context) {}}
}

// OnChange has fn called after every revocation, so that keys cached as
// good can be dropped. It is set once, before the Store is used.
func (s *Store) OnChange(fn func(context.Context)) { s.changed = fn }

// clock is the current time as stored: UTC with PostgreSQL's precision, so
// values read back equal and sort correctly as text on SQLite.
func (s *Store) clock() time.Time {
	return s.now().UTC().Truncate(time.Microsecond)
}

// Create stores a new key and returns it with the full key string, which
// is not retrievable afterwards. A request the store refuses yields a
// *ValidationError.
func (s *Store) Create(ctx context.Context, n NewKey) (Key, string, error) {
	now := s.clock()
	if err := s.validate(ctx, n, now); err != nil {
		return Key{}, "", err
	}
	id, secret := make([]byte, idBytes), make([]byte, secretBytes)
	_, _ = rand.Read(id) // never fails; it aborts the program instead
	_, _ = rand.Read(secret)
	k := Key{
		ID: hex.EncodeToString(id), Name: strings.TrimSpace(n.Name), Role: n.Role, TenantIDs: n.TenantIDs,
		CreatedBy: n.CreatedBy, CreatedAt: now,
	}
	if k.TenantIDs == nil {
		k.TenantIDs = []string{}
	}
	if n.ExpiresAt != nil {
		exp := n.ExpiresAt.UTC().Truncate(time.Microsecond)
		k.ExpiresAt = &exp
	}
	secretText := base64.RawURLEncoding.EncodeToString(secret)
	k.SecretHash = hashSecret(secretText)
	if _, err := s.db.NewInsert().Model(&k).Exec(ctx); err != nil {
		return Key{}, "", fmt.Errorf("apikeys: create: %w", err)
	}
	return k, Prefix + k.ID + "_" + secretText, nil
}

func (s *Store) validate(ctx context.Context, n NewKey, now time.Time) error {
	name := strings.TrimSpace(n.Name)
	switch {
	case name == "":
		return &ValidationError{Field: "name", Reason: "must not be empty", Value: n.Name}
	case utf8.RuneCountInString(name) > MaxNameLength:
		return &ValidationError{Field: "name", Reason: fmt.Sprintf("must be at most %d characters", MaxNameLength), Value: n.Name}
	case n.Role != RoleAdmin && n.Role != RoleStandard:
		return &ValidationError{Field: "role", Reason: "must be admin or standard", Value: n.Role}
	case n.Role == RoleAdmin && len(n.TenantIDs) > 0:
		// Refused rather than ignored, so nobody believes an admin key is
		// confined to the tenants they listed.
		return &ValidationError{Field: "tenant_ids", Reason: "an admin key sees every tenant; leave tenant_ids empty", Value: n.TenantIDs}
	case n.Role == RoleStandard && len(n.TenantIDs) == 0:
		return &ValidationError{Field: "tenant_ids", Reason: "a standard key needs at least one tenant", Value: n.TenantIDs}
	case n.ExpiresAt != nil && !n.ExpiresAt.After(now):
		return &ValidationError{Field: "expires_at", Reason: "must be in the future", Value: n.ExpiresAt}
	}
	for i, id := range n.TenantIDs {
		field := fmt.Sprintf("tenant_ids[%d]", i)
		if slices.Contains(n.TenantIDs[:i], id) {
			return &ValidationError{Field: field, Reason: "tenant listed twice", Value: id}
		}
		_, err := s.tenants.Tenant(ctx, id)
		if errors.Is(err, tenancy.ErrNotFound) {
			return &ValidationError{Field: field, Reason: "no tenant with that id", Value: id}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// List returns every key, newest first, revoked and expired ones included
// so that an administrator can see what was issued.
func (s *Store) List(ctx context.Context) ([]Key, error) {
	out := []Key{}
	if err := s.db.NewSelect().Model(&out).Order("created_at DESC", "id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("apikeys: list: %w", err)
	}
	return out, nil
}

// Revoke stops the key from authenticating. Revoking a revoked key keeps
// its first revocation time; an unknown id is ErrNotFound.
func (s *Store) Revoke(ctx context.Context, id string) error {
	res, err := s.db.NewUpdate().Model((*Key)(nil)).Set("revoked_at = ?", s.clock()).
		Where("id = ?", id).Where("revoked_at IS NULL").Exec(ctx)
	if err != nil {
		return fmt.Errorf("apikeys: revoke: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		s.changed(ctx)
		return nil
	}
	exists, err := s.db.NewSelect().Model((*Key)(nil)).Where("id = ?", id).Exists(ctx)
	if err != nil {
		return fmt.Errorf("apikeys: revoke: %w", err)
	}
	if !exists {
		return ErrNotFound
	}
	return nil
}

// Authenticate returns the key that token is, or ErrInvalid, ErrRevoked or
// ErrExpired. Any other error is a storage failure.
func (s *Store) Authenticate(ctx context.Context, token string) (Key, error) {
	id, secret, ok := parse(token)
	if !ok {
		return Key{}, ErrInvalid
	}
	var k Key
	err := s.db.NewSelect().Model(&k).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, ErrInvalid
	}
	if err != nil {
		return Key{}, fmt.Errorf("apikeys: authenticate: %w", err)
	}
	// Whether a key is revoked or expired is told only to a holder of its
	// secret.
	if subtle.ConstantTimeCompare([]byte(hashSecret(secret)), []byte(k.SecretHash)) != 1 {
		return Key{}, ErrInvalid
	}
	now := s.clock()
	switch {
	case k.RevokedAt != nil:
		return Key{}, ErrRevoked
	case !k.Active(now):
		return Key{}, ErrExpired
	}
	if k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) >= touchInterval {
		// The condition keeps replicas racing on the same key from writing
		// more than once a minute between them. A failed write only leaves
		// last_used_at stale, which must not refuse a valid key.
		_, _ = s.db.NewUpdate().Model((*Key)(nil)).Set("last_used_at = ?", now).Where("id = ?", k.ID).
			WhereGroup(" AND ", func(q *bun.UpdateQuery) *bun.UpdateQuery {
				return q.Where("last_used_at IS NULL").WhereOr("last_used_at <= ?", now.Add(-touchInterval))
			}).Exec(ctx)
		k.LastUsedAt = &now
	}
	return k, nil
}

// parse splits "stw_<id>_<secret>", refusing anything that could not have
// been issued before touching the database.
func parse(token string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(token, Prefix)
	if !ok {
		return "", "", false
	}
	id, secret, ok = strings.Cut(rest, "_")
	if !ok || len(id) != 2*idBytes || base64.RawURLEncoding.EncodedLen(secretBytes) != len(secret) {
		return "", "", false
	}
	if _, err := hex.DecodeString(id); err != nil || strings.ToLower(id) != id {
		return "", "", false
	}
	return id, secret, true
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
