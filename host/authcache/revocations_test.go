package authcache

import (
	"context"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/auth"
	"github.com/stewardhq/steward/migrations"
)

// TestRevocationsAnnounceRevoke: an answer cached as "not revoked" is
// dropped by the revocation itself, on this replica at once and on another
// through Redis.
func TestRevocationsAnnounceRevoke(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, "postgres")
	if _, err := store.Migrate(ctx, db, migrations.FS, migrations.Table); err != nil {
		t.Fatal(err)
	}
	redisURL := storetest.RedisURL(t)
	prefix := storetest.RedisPrefix(t, redisURL)
	replica := func() auth.Revocations {
		inner := auth.NewRevocations(db, client(t, redisURL), prefix+":revoked")
		return Revocations(inner, shared(t, redisURL, prefix), 10)
	}
	a, b := replica(), replica()
	revoked := func(r auth.Revocations) bool {
		t.Helper()
		ok, err := r.Revoked(ctx, "jti-1")
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, r := range []auth.Revocations{a, b} {
		if revoked(r) {
			t.Fatal("revoked before Revoke")
		}
	}
	// Until the first read of the change token nothing is cached; the
	// answers must come from the cache for the test to mean anything.
	for _, ch := range []*Changes{a.(*revocations).changes, b.(*revocations).changes} {
		eventually(t, "the change token is read", ch.usable)
	}
	revoked(a)
	revoked(b)

	if err := a.Revoke(ctx, "jti-1", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !revoked(a) {
		t.Error("the revoking replica still answers from its cache")
	}
	eventually(t, "the other replica sees the revocation", func() bool { return revoked(b) })
}
