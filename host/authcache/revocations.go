package authcache

import (
	"context"
	"time"

	"github.com/stewardhq/steward/host/auth"
)

// Revocations returns inner with the answers of Revoked cached, at most
// capacity of them, and every Revoke announced as a change.
func Revocations(inner auth.Revocations, c *Changes, capacity uint64) auth.Revocations {
	return &revocations{Revocations: inner, changes: c, answers: NewCache[string, bool](c, capacity)}
}

type revocations struct {
	auth.Revocations
	changes *Changes
	answers *Cache[string, bool]
}

func (r *revocations) Revoke(ctx context.Context, jti string, until time.Time) error {
	if err := r.Revocations.Revoke(ctx, jti, until); err != nil {
		return err
	}
	r.changes.Changed(ctx)
	return nil
}

func (r *revocations) Revoked(ctx context.Context, jti string) (bool, error) {
	return r.answers.Load(jti, func() (bool, error) { return r.Revocations.Revoked(ctx, jti) })
}
