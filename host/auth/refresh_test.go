package auth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/migrations"
)

// backend opens one revocation list for a test: the database one on db, or
// Redis under a prefix private to the test.
type backend func(t *testing.T, db *bun.DB) Revocations

func dbBackend(t *testing.T, db *bun.DB) Revocations {
	return NewRevocations(db, nil, "")
}

func redisBackend(t *testing.T, db *bun.DB) Revocations {
	return NewRevocations(db, storetest.RedisClient(t), storetest.RedisPrefix(t, storetest.RedisURL(t)))
}

// eachStore runs fn on a migrated database of every dialect, with each
// revocation backend.
func eachStore(t *testing.T, fn func(t *testing.T, s *RefreshStore, rev Revocations)) {
	for _, dialect := range storetest.Dialects() {
		for name, open := range map[string]backend{RevocationsDatabase: dbBackend, RevocationsRedis: redisBackend} {
			t.Run(dialect+"/"+name, func(t *testing.T) {
				db := storetest.Open(t, dialect)
				if _, err := store.Migrate(context.Background(), db, migrations.FS, migrations.Table); err != nil {
					t.Fatalf("migrate: %v", err)
				}
				rev := open(t, db)
				fn(t, NewRefreshStore(db, rev), rev)
			})
		}
	}
}

// mint signs a pair for alice, as the server does for a sign-in.
// startSession signs in once: an issuer and the first pair of a family.
func startSession(t *testing.T, s *RefreshStore) (*Issuer, Pair) {
	t.Helper()
	iss := newIssuer(t, "k1", map[string][]byte{"k1": secretA})
	p := mint(t, iss)
	if err := s.Start(context.Background(), p); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return iss, p
}

func mint(t *testing.T, iss *Issuer) Pair {
	t.Helper()
	_, ac, err := iss.IssueAccess(alice())
	if err != nil {
		t.Fatal(err)
	}
	refresh, rc, err := iss.IssueRefresh(alice())
	if err != nil {
		t.Fatal(err)
	}
	return Pair{Refresh: refresh, RefreshClaims: rc, AccessClaims: ac}
}

func wantRevoked(t *testing.T, rev Revocations, jti string, want bool) {
	t.Helper()
	got, err := rev.Revoked(context.Background(), jti)
	if err != nil {
		t.Fatalf("Revoked: %v", err)
	}
	if got != want {
		t.Errorf("Revoked(%s) = %v, want %v", jti, got, want)
	}
}

func TestRotationAndReuse(t *testing.T) {
	eachStore(t, func(t *testing.T, s *RefreshStore, rev Revocations) {
		ctx := context.Background()
		iss, first := startSession(t, s)
		second := mint(t, iss)
		if err := s.Rotate(ctx, first.Refresh, first.RefreshClaims, second); err != nil {
			t.Fatalf("Rotate: %v", err)
		}
		wantRevoked(t, rev, second.AccessClaims.ID, false)

		// A thief replays the first token: the family dies, including the
		// pair the rightful client just received.
		third := mint(t, iss)
		if err := s.Rotate(ctx, first.Refresh, first.RefreshClaims, third); !errors.Is(err, ErrRefreshReused) {
			t.Fatalf("replayed Rotate = %v, want ErrRefreshReused", err)
		}
		if err := s.Rotate(ctx, second.Refresh, second.RefreshClaims, mint(t, iss)); !errors.Is(err, ErrRefreshRejected) {
			t.Errorf("Rotate of the family's newest token = %v, want ErrRefreshRejected", err)
		}
		wantRevoked(t, rev, first.AccessClaims.ID, true)
		wantRevoked(t, rev, second.AccessClaims.ID, true)
		// The pair minted for the refused exchange was never recorded.
		if err := s.Rotate(ctx, third.Refresh, third.RefreshClaims, mint(t, iss)); !errors.Is(err, ErrRefreshRejected) {
			t.Errorf("Rotate of an unrecorded token = %v, want ErrRefreshRejected", err)
		}
		if n, err := rev.Active(ctx); err != nil || n != 2 {
			t.Errorf("Active = %d, %v; want 2", n, err)
		}
	})
}

func TestRotateRejects(t *testing.T) {
	eachStore(t, func(t *testing.T, s *RefreshStore, _ Revocations) {
		ctx := context.Background()
		iss, p := startSession(t, s)
		other := mint(t, iss)
		// Right jti, wrong token: only the stored hash can tell.
		if err := s.Rotate(ctx, other.Refresh, p.RefreshClaims, mint(t, iss)); !errors.Is(err, ErrRefreshRejected) {
			t.Errorf("hash mismatch: %v, want ErrRefreshRejected", err)
		}
		wrongUser := p.RefreshClaims
		wrongUser.Subject = "user-2"
		if err := s.Rotate(ctx, p.Refresh, wrongUser, mint(t, iss)); !errors.Is(err, ErrRefreshRejected) {
			t.Errorf("subject mismatch: %v, want ErrRefreshRejected", err)
		}
		s.now = func() time.Time { return time.Now().Add(refreshTTL + time.Minute) }
		if err := s.Rotate(ctx, p.Refresh, p.RefreshClaims, mint(t, iss)); !errors.Is(err, ErrRefreshRejected) {
			t.Errorf("expired: %v, want ErrRefreshRejected", err)
		}
		// The failed attempts did not spend the token.
		s.now = time.Now
		if err := s.Rotate(ctx, p.Refresh, p.RefreshClaims, mint(t, iss)); err != nil {
			t.Errorf("Rotate after refused attempts: %v", err)
		}
	})
}

func TestConcurrentRotationSpendsOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, s *RefreshStore, _ Revocations) {
		ctx := context.Background()
		iss, p := startSession(t, s)
		const n = 4
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			next := mint(t, iss)
			wg.Go(func() { errs[i] = s.Rotate(ctx, p.Refresh, p.RefreshClaims, next) })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, ErrRefreshReused):
				t.Errorf("concurrent Rotate: %v", err)
			}
		}
		if ok != 1 {
			t.Errorf("%d concurrent exchanges succeeded, want exactly 1", ok)
		}
	})
}

func TestLogout(t *testing.T) {
	eachStore(t, func(t *testing.T, s *RefreshStore, rev Revocations) {
		ctx := context.Background()
		iss, p := startSession(t, s)
		other := mint(t, iss)
		if err := s.Start(ctx, other); err != nil {
			t.Fatal(err)
		}
		if err := s.Logout(ctx, p.AccessClaims); err != nil {
			t.Fatalf("Logout: %v", err)
		}
		wantRevoked(t, rev, p.AccessClaims.ID, true)
		if err := s.Rotate(ctx, p.Refresh, p.RefreshClaims, mint(t, iss)); !errors.Is(err, ErrRefreshRejected) {
			t.Errorf("Rotate after logout = %v, want ErrRefreshRejected", err)
		}
		// Another sign-in of the same user is untouched.
		wantRevoked(t, rev, other.AccessClaims.ID, false)
		if err := s.Rotate(ctx, other.Refresh, other.RefreshClaims, mint(t, iss)); err != nil {
			t.Errorf("Rotate of another sign-in: %v", err)
		}
		// A token issued without a recorded refresh token is still revoked.
		_, loose, err := iss.IssueAccess(alice())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Logout(ctx, loose); err != nil {
			t.Fatalf("Logout of an unrecorded token: %v", err)
		}
		wantRevoked(t, rev, loose.ID, true)
	})
}

// TestEndFamily: the refresh token alone ends its sign-in, spent or not:
// every refresh token of the family is refused and every access token
// issued with them revoked. A token not held as presented ends nothing.
func TestEndFamily(t *testing.T) {
	eachStore(t, func(t *testing.T, s *RefreshStore, rev Revocations) {
		ctx := context.Background()
		iss, first := startSession(t, s)
		second := mint(t, iss)
		if err := s.Rotate(ctx, first.Refresh, first.RefreshClaims, second); err != nil {
			t.Fatal(err)
		}
		other := mint(t, iss)
		if err := s.Start(ctx, other); err != nil {
			t.Fatal(err)
		}
		// Right jti, another token: nothing ends.
		if err := s.EndFamily(ctx, other.Refresh, second.RefreshClaims); err != nil {
			t.Fatalf("EndFamily with a mismatched token: %v", err)
		}
		wantRevoked(t, rev, second.AccessClaims.ID, false)
		if err := s.EndFamily(ctx, mint(t, iss).Refresh, mint(t, iss).RefreshClaims); err != nil {
			t.Fatalf("EndFamily of an unrecorded token: %v", err)
		}

		if err := s.EndFamily(ctx, first.Refresh, first.RefreshClaims); err != nil {
			t.Fatalf("EndFamily with the spent first token: %v", err)
		}
		wantRevoked(t, rev, first.AccessClaims.ID, true)
		wantRevoked(t, rev, second.AccessClaims.ID, true)
		if err := s.Rotate(ctx, second.Refresh, second.RefreshClaims, mint(t, iss)); !errors.Is(err, ErrRefreshRejected) {
			t.Errorf("Rotate of the family's newest token after EndFamily = %v, want ErrRefreshRejected", err)
		}
		// Another sign-in of the same user is untouched.
		wantRevoked(t, rev, other.AccessClaims.ID, false)
		if err := s.Rotate(ctx, other.Refresh, other.RefreshClaims, mint(t, iss)); err != nil {
			t.Errorf("Rotate of another sign-in: %v", err)
		}
	})
}

// TestRevocationsExpire: an entry lasts as long as its token verifies,
// which is leeway past the token's exp, and not longer.
func TestRevocationsExpire(t *testing.T) {
	eachStore(t, func(t *testing.T, _ *RefreshStore, rev Revocations) {
		ctx := context.Background()
		now := time.Now()
		if err := rev.Revoke(ctx, "gone", now.Add(-leeway-time.Second)); err != nil {
			t.Fatal(err)
		}
		wantRevoked(t, rev, "gone", false)
		// Expired a second ago, so still accepted by Verify: a logout must
		// still hold.
		if err := rev.Revoke(ctx, "in-leeway", now.Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		wantRevoked(t, rev, "in-leeway", true)
		if err := rev.Revoke(ctx, "short", now.Add(-leeway+1500*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if err := rev.Revoke(ctx, "long", now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if n, err := rev.Active(ctx); err != nil || n != 3 {
			t.Errorf("Active = %d, %v; want 3", n, err)
		}
		time.Sleep(2100 * time.Millisecond)
		if n, err := rev.Active(ctx); err != nil || n != 2 {
			t.Errorf("Active after expiry = %d, %v; want 2", n, err)
		}
		wantRevoked(t, rev, "short", false)
		wantRevoked(t, rev, "in-leeway", true)
		wantRevoked(t, rev, "long", true)
	})
}

// TestRevokeFamilyWithinLeeway: revoking a family lists its access tokens
// that expired less than leeway ago, as Verify still accepts them.
func TestRevokeFamilyWithinLeeway(t *testing.T) {
	eachStore(t, func(t *testing.T, s *RefreshStore, rev Revocations) {
		_, p := startSession(t, s)
		s.now = func() time.Time { return p.AccessClaims.ExpiresAt.Add(time.Second) }
		if err := s.RevokeFamily(context.Background(), p.RefreshClaims.ID); err != nil {
			t.Fatalf("RevokeFamily: %v", err)
		}
		wantRevoked(t, rev, p.AccessClaims.ID, true)
	})
}

func TestDatabaseRevocationsPrune(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Open(t, dialect)
			if _, err := store.Migrate(ctx, db, migrations.FS, migrations.Table); err != nil {
				t.Fatal(err)
			}
			rev := &dbRevocations{db: db, now: time.Now}
			if err := rev.Revoke(ctx, "old", time.Now().Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			rev.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
			if err := rev.Revoke(ctx, "new", time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			n, err := db.NewSelect().Model((*revokedRow)(nil)).Count(ctx)
			if err != nil || n != 1 {
				t.Errorf("rows after prune = %d, %v; want 1", n, err)
			}
		})
	}
}

// BenchmarkRevoked measures the check every authenticated request pays.
func BenchmarkRevoked(b *testing.B) {
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			ctx := context.Background()
			db := storetest.Open(b, dialect)
			if _, err := store.Migrate(ctx, db, migrations.FS, migrations.Table); err != nil {
				b.Fatal(err)
			}
			rev := &dbRevocations{db: db, now: time.Now}
			for i := range 1000 {
				if err := rev.Revoke(ctx, fmt.Sprintf("jti-%d", i), time.Now().Add(time.Hour)); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := rev.Revoked(ctx, "absent"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("redis", func(b *testing.B) {
		rev := NewRevocations(nil, storetest.RedisClient(b), storetest.RedisPrefix(b, storetest.RedisURL(b)))
		ctx := context.Background()
		for b.Loop() {
			if _, err := rev.Revoked(ctx, "absent"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
