package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"
)

// Refresh and revocation errors. Callers answer 401 for all of them.
var (
	// ErrRefreshReused means a refresh token was presented after it had
	// already been exchanged. Only a copy can be presented twice, so the
	// token is taken as stolen and its whole family has been revoked by the
	// time this is returned.
	ErrRefreshReused = errors.New("auth: refresh token reused")
	// ErrRefreshRejected means the refresh token is unknown, revoked or
	// expired in the store even though its signature is good.
	ErrRefreshRejected = errors.New("auth: refresh token not accepted")
)

// Revocation backends, as reported by Revocations.Backend.
const (
	RevocationsRedis    = "redis"
	RevocationsDatabase = "database"
)

// Revocations is the list of access tokens revoked before their expiry.
// Every replica must see the same list, so it lives in Redis when the
// deployment has one and in the database otherwise; an entry is kept only
// until the token would have stopped verifying anyway.
type Revocations interface {
	// Revoke lists jti, a token expiring at exp, for as long as Verify
	// accepts the token: until exp plus the verifier's leeway.
	Revoke(ctx context.Context, jti string, exp time.Time) error
	// Revoked reports whether jti is listed. It runs on every authenticated
	// request, so both backends answer it with one indexed lookup.
	Revoked(ctx context.Context, jti string) (bool, error)
	// Active counts the listed tokens that have not expired yet.
	Active(ctx context.Context) (int64, error)
	// Backend is RevocationsRedis or RevocationsDatabase.
	Backend() string
}

// keepUntil is when a revocation of a token expiring at exp may be
// forgotten: Verify accepts the token for leeway past exp, and an entry
// dropped at exp would let a logged-out token through for that long.
func keepUntil(exp time.Time) time.Time { return exp.Add(leeway) }

// NewRevocations returns a list kept in Redis under prefix when client is
// set and in the database otherwise. The client is the caller's to close.
func NewRevocations(db *bun.DB, client redis.UniversalClient, prefix string) Revocations {
	if client == nil {
		return &dbRevocations{db: db, now: time.Now}
	}
	return &redisRevocations{client: client, prefix: prefix + ":", now: time.Now}
}

// redisRevocations keeps one key per revoked jti, expiring when the token
// stops verifying, so Revoked is a single EXISTS. A sorted set scored by
// that time sits beside the keys so Active can count without scanning the
// key space.
type redisRevocations struct {
	client redis.UniversalClient
	prefix string
	now    func() time.Time
}

func (r *redisRevocations) key(jti string) string { return r.prefix + "jti:" + jti }
func (r *redisRevocations) index() string         { return r.prefix + "index" }

func (r *redisRevocations) Revoke(ctx context.Context, jti string, exp time.Time) error {
	until := keepUntil(exp)
	now := r.now()
	ttl := until.Sub(now)
	if ttl <= 0 {
		return nil
	}
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, r.key(jti), 1, ttl)
		p.ZAdd(ctx, r.index(), redis.Z{Score: float64(until.UnixMilli()), Member: jti})
		// The index would otherwise grow with every logout ever made.
		p.ZRemRangeByScore(ctx, r.index(), "-inf", fmt.Sprint(now.UnixMilli()))
		return nil
	})
	if err != nil {
		return fmt.Errorf("auth: revoke token: %w", err)
	}
	return nil
}

func (r *redisRevocations) Revoked(ctx context.Context, jti string) (bool, error) {
	n, err := r.client.Exists(ctx, r.key(jti)).Result()
	if err != nil {
		return false, fmt.Errorf("auth: revocation lookup: %w", err)
	}
	return n > 0, nil
}

func (r *redisRevocations) Active(ctx context.Context) (int64, error) {
	n, err := r.client.ZCount(ctx, r.index(), fmt.Sprintf("(%d", r.now().UnixMilli()), "+inf").Result()
	if err != nil {
		return 0, fmt.Errorf("auth: count revocations: %w", err)
	}
	return n, nil
}

func (r *redisRevocations) Backend() string { return RevocationsRedis }

type revokedRow struct {
	bun.BaseModel `bun:"table:revoked_tokens"`

	JTI       string    `bun:"jti,pk"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
}

// dbRevocations answers Revoked with a primary-key lookup. It keeps no
// cache of its own: the host's (authcache) sits in front of both backends
// and decides how long another replica may take to see a revocation.
type dbRevocations struct {
	db  *bun.DB
	now func() time.Time
}

func (d *dbRevocations) Revoke(ctx context.Context, jti string, exp time.Time) error {
	until := keepUntil(exp)
	now := d.now().UTC()
	if !until.After(now) {
		return nil
	}
	return d.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*revokedRow)(nil)).Where("expires_at <= ?", now).Exec(ctx); err != nil {
			return fmt.Errorf("auth: prune revocations: %w", err)
		}
		_, err := tx.NewInsert().Model(&revokedRow{JTI: jti, ExpiresAt: until.UTC()}).
			On("CONFLICT (jti) DO NOTHING").Exec(ctx)
		if err != nil {
			return fmt.Errorf("auth: revoke token: %w", err)
		}
		return nil
	})
}

func (d *dbRevocations) Revoked(ctx context.Context, jti string) (bool, error) {
	// The expiry condition keeps the answer the same as Redis's between a
	// token's expiry and the next prune.
	ok, err := d.db.NewSelect().Model((*revokedRow)(nil)).Where("jti = ?", jti).Where("expires_at > ?", d.now().UTC()).Exists(ctx)
	if err != nil {
		return false, fmt.Errorf("auth: revocation lookup: %w", err)
	}
	return ok, nil
}

func (d *dbRevocations) Active(ctx context.Context) (int64, error) {
	n, err := d.db.NewSelect().Model((*revokedRow)(nil)).Where("expires_at > ?", d.now().UTC()).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("auth: count revocations: %w", err)
	}
	return int64(n), nil
}

func (d *dbRevocations) Backend() string { return RevocationsDatabase }

type refreshRow struct {
	bun.BaseModel `bun:"table:refresh_tokens,alias:rt"`

	ID              string     `bun:"id,pk"`
	UserID          string     `bun:"user_id,notnull"`
	FamilyID        string     `bun:"family_id,notnull"`
	TokenHash       string     `bun:"token_hash,notnull"`
	AccessID        string     `bun:"access_id,notnull"`
	AccessExpiresAt time.Time  `bun:"access_expires_at,notnull"`
	IssuedAt        time.Time  `bun:"issued_at,notnull"`
	ExpiresAt       time.Time  `bun:"expires_at,notnull"`
	UsedAt          *time.Time `bun:"used_at"`
	RevokedAt       *time.Time `bun:"revoked_at"`
	ReplacedBy      *string    `bun:"replaced_by"`
}

// Pair is a freshly issued token pair as the refresh store needs it: the
// signed refresh token (to hash) with both tokens' claims.
type Pair struct {
	Refresh       string
	RefreshClaims Claims
	AccessClaims  Claims
}

// RefreshStore records issued refresh tokens so each can be exchanged once
// (rotation), a replayed one revokes its family, and logout reaches every
// replica.
type RefreshStore struct {
	db          *bun.DB
	revocations Revocations
	now         func() time.Time
}

// NewRefreshStore returns a RefreshStore on db that lists revoked access
// tokens in rev.
func NewRefreshStore(db *bun.DB, rev Revocations) *RefreshStore {
	return &RefreshStore{db: db, revocations: rev, now: time.Now}
}

// hashToken is the SHA-256 of a token, hex-encoded, as stored.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func (s *RefreshStore) row(p Pair, family string) *refreshRow {
	return &refreshRow{
		ID:              p.RefreshClaims.ID,
		UserID:          p.RefreshClaims.Subject,
		FamilyID:        family,
		TokenHash:       hashToken(p.Refresh),
		AccessID:        p.AccessClaims.ID,
		AccessExpiresAt: p.AccessClaims.ExpiresAt.UTC(),
		IssuedAt:        p.RefreshClaims.IssuedAt.UTC(),
		ExpiresAt:       p.RefreshClaims.ExpiresAt.UTC(),
	}
}

// Start records the pair of a new sign-in as the first of a new family.
// Rows of refresh tokens past their expiry are pruned on the way: the
// signature check already rejects those tokens, so the rows serve nothing.
func (s *RefreshStore) Start(ctx context.Context, p Pair) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*refreshRow)(nil)).Where("expires_at <= ?", s.now().UTC()).Exec(ctx); err != nil {
			return fmt.Errorf("auth: prune refresh tokens: %w", err)
		}
		if _, err := tx.NewInsert().Model(s.row(p, p.RefreshClaims.ID)).Exec(ctx); err != nil {
			return fmt.Errorf("auth: record refresh token: %w", err)
		}
		return nil
	})
}

// Rotate exchanges the presented refresh token, whose claims old the caller
// has verified, for next: the presented token is marked used and next joins
// its family. Presenting a used token revokes the family and returns
// ErrRefreshReused; an unknown, revoked or expired one returns
// ErrRefreshRejected.
func (s *RefreshStore) Rotate(ctx context.Context, presented string, old Claims, next Pair) error {
	now := s.now().UTC()
	var family string
	reused := false
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var cur refreshRow
		err := tx.NewSelect().Model(&cur).Where("id = ?", old.ID).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrRefreshRejected
		}
		if err != nil {
			return fmt.Errorf("auth: load refresh token: %w", err)
		}
		if subtle.ConstantTimeCompare([]byte(cur.TokenHash), []byte(hashToken(presented))) != 1 || cur.UserID != old.Subject {
			return ErrRefreshRejected
		}
		family = cur.FamilyID
		if cur.UsedAt != nil {
			reused = true
			return nil
		}
		if cur.RevokedAt != nil || !cur.ExpiresAt.After(now) {
			return ErrRefreshRejected
		}
		// The used_at condition makes the claim atomic: of two replicas
		// exchanging the same token at once, one updates no row and
		// treats its copy as the replay it is.
		res, err := tx.NewUpdate().Model((*refreshRow)(nil)).
			Set("used_at = ?", now).Set("replaced_by = ?", next.RefreshClaims.ID).
			Where("id = ?", cur.ID).Where("used_at IS NULL").Exec(ctx)
		if err != nil {
			return fmt.Errorf("auth: mark refresh token used: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("auth: mark refresh token used: %w", err)
		}
		if n != 1 {
			reused = true
			return nil
		}
		if _, err := tx.NewInsert().Model(s.row(next, family)).Exec(ctx); err != nil {
			return fmt.Errorf("auth: record refresh token: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if reused {
		if err := s.RevokeFamily(ctx, family); err != nil {
			return err
		}
		return ErrRefreshReused
	}
	return nil
}

// RevokeFamily revokes every refresh token of a family and lists every
// access token issued beside them that still verifies as revoked.
func (s *RefreshStore) RevokeFamily(ctx context.Context, family string) error {
	now := s.now().UTC()
	var rows []refreshRow
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewUpdate().Model((*refreshRow)(nil)).Set("revoked_at = ?", now).
			Where("family_id = ?", family).Where("revoked_at IS NULL").Exec(ctx)
		if err != nil {
			return fmt.Errorf("auth: revoke refresh family: %w", err)
		}
		return tx.NewSelect().Model(&rows).Column("access_id", "access_expires_at").
			Where("family_id = ?", family).Where("access_expires_at > ?", now.Add(-leeway)).Scan(ctx)
	})
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := s.revocations.Revoke(ctx, r.AccessID, r.AccessExpiresAt); err != nil {
			return err
		}
	}
	return nil
}

// EndFamily revokes every token of the family of the presented refresh
// token, whose claims the caller has verified, used or not. A token this
// store does not hold as presented revokes nothing.
func (s *RefreshStore) EndFamily(ctx context.Context, presented string, claims Claims) error {
	var cur refreshRow
	err := s.db.NewSelect().Model(&cur).Column("family_id", "token_hash", "user_id").Where("id = ?", claims.ID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("auth: load refresh token: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(cur.TokenHash), []byte(hashToken(presented))) != 1 || cur.UserID != claims.Subject {
		return nil
	}
	return s.RevokeFamily(ctx, cur.FamilyID)
}

// Logout revokes the access token with the given claims until its expiry,
// and the refresh family it was issued with, if any.
func (s *RefreshStore) Logout(ctx context.Context, access Claims) error {
	if err := s.revocations.Revoke(ctx, access.ID, access.ExpiresAt.Time); err != nil {
		return err
	}
	var family string
	err := s.db.NewSelect().Model((*refreshRow)(nil)).Column("family_id").
		Where("access_id = ?", access.ID).Limit(1).Scan(ctx, &family)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("auth: find refresh family: %w", err)
	}
	return s.RevokeFamily(ctx, family)
}
