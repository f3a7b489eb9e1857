package exemptions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/revcache"
)

// revisions is the table of the tenants' revisions of their exemptions.
const revisions = "compliance_exemption_revisions"

// ErrDuplicate is returned by Create for an exemption that an active one
// of the tenant already is: same scope and same target.
var ErrDuplicate = errors.New("exemptions: an active exemption of the same scope and target exists")

// Store keeps the exemptions.
type Store struct {
	DB *bun.DB
}

// Create stores a new exemption and sets its id, unless an exemption of
// the same tenant, scope and target is active at now (ErrDuplicate). The
// tenant's revision row is raised first, which on PostgreSQL locks it
// until the commit, so two creates of one tenant cannot both miss each
// other's row.
func (s *Store) Create(ctx context.Context, e *Exemption, now time.Time) error {
	return s.DB.RunInTx(ctx, &sql.TxOptions{}, func(ctx context.Context, tx bun.Tx) error {
		if err := revcache.Bump(ctx, tx, revisions, e.TenantID); err != nil {
			return err
		}
		n, err := tx.NewSelect().Model((*Exemption)(nil)).Where("tenant_id = ?", e.TenantID).Where("scope = ?", e.Scope).
			Where("resource_id = ?", e.ResourceID).Where("policy_definition_id = ?", e.PolicyDefinitionID).
			Where("framework_id = ?", e.FrameworkID).Where("control_id = ?", e.ControlID).Where("expires_at > ?", now).Count(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			return ErrDuplicate
		}
		_, err = tx.NewInsert().Model(e).Returning("id").Exec(ctx)
		return err
	})
}

// Get returns the exemption if it belongs to one of the tenants, or nil.
func (s *Store) Get(ctx context.Context, id int64, tenantIDs []string) (*Exemption, error) {
	if len(tenantIDs) == 0 {
		return nil, nil
	}
	e := new(Exemption)
	err := s.DB.NewSelect().Model(e).Where("id = ?", id).Where("tenant_id IN (?)", bun.List(tenantIDs)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return e, err
}

// ListQuery selects a page of exemptions.
type ListQuery struct {
	TenantIDs []string
	// Scope keeps exemptions of this scope; empty keeps all.
	Scope string
	// Active keeps the exemptions active at Now when true, those expired
	// when false; nil keeps both.
	Active *bool
	Now    time.Time
	Limit  int
	Offset int
}

// List returns a page of the tenants' exemptions, newest first, and how
// many match in all.
func (s *Store) List(ctx context.Context, q ListQuery) ([]Exemption, int, error) {
	out := []Exemption{}
	if len(q.TenantIDs) == 0 {
		return out, 0, nil
	}
	sel := s.DB.NewSelect().Model(&out).Where("tenant_id IN (?)", bun.List(q.TenantIDs))
	if q.Scope != "" {
		sel = sel.Where("scope = ?", q.Scope)
	}
	if q.Active != nil {
		if *q.Active {
			sel = sel.Where("expires_at > ?", q.Now)
		} else {
			sel = sel.Where("expires_at <= ?", q.Now)
		}
	}
	total, err := sel.OrderExpr("id DESC").Limit(int64(q.Limit)).Offset(int64(q.Offset)).ScanAndCount(ctx)
	return out, int(total), err
}

// Update stores the exemption's reason, owner and expiry, if it is still
// active at now, and sets its updated_at; false when it is gone or has
// expired since it was read.
func (s *Store) Update(ctx context.Context, e *Exemption, now time.Time) (bool, error) {
	updated := false
	err := s.DB.RunInTx(ctx, &sql.TxOptions{}, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*Exemption)(nil)).Set("reason = ?", e.Reason).Set("owner = ?", e.Owner).
			Set("expires_at = ?", e.ExpiresAt).Set("updated_at = ?", now).
			Where("id = ?", e.ID).Where("tenant_id = ?", e.TenantID).Where("expires_at > ?", now).Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		updated, e.UpdatedAt = true, now
		return revcache.Bump(ctx, tx, revisions, e.TenantID)
	})
	return updated, err
}

// Delete removes the exemption; false when it was gone already.
func (s *Store) Delete(ctx context.Context, e *Exemption) (bool, error) {
	deleted := false
	err := s.DB.RunInTx(ctx, &sql.TxOptions{}, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*Exemption)(nil)).Where("id = ?", e.ID).Where("tenant_id = ?", e.TenantID).Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		deleted = true
		return revcache.Bump(ctx, tx, revisions, e.TenantID)
	})
	return deleted, err
}

// Active returns the tenants' exemptions active at now, by id.
func (s *Store) Active(ctx context.Context, tenantIDs []string, now time.Time) ([]Exemption, error) {
	out := []Exemption{}
	if len(tenantIDs) == 0 {
		return out, nil
	}
	err := s.DB.NewSelect().Model(&out).Where("tenant_id IN (?)", bun.List(tenantIDs)).Where("expires_at > ?", now).
		OrderExpr("id ASC").Scan(ctx)
	return out, err
}

// Revision changes whenever the tenants' active exemptions at now may
// differ from those at an earlier read: a change raises the tenants'
// counter, and the next expiry after now moves on when one lapses.
func (s *Store) Revision(ctx context.Context, tenantIDs []string, now time.Time) (string, error) {
	rev, err := revcache.Read(ctx, s.DB, revisions, tenantIDs)
	if err != nil || len(tenantIDs) == 0 {
		return rev, err
	}
	var next []time.Time
	err = s.DB.NewSelect().Model((*Exemption)(nil)).Column("expires_at").Where("tenant_id IN (?)", bun.List(tenantIDs)).
		Where("expires_at > ?", now).OrderExpr("expires_at ASC").Limit(1).Scan(ctx, &next)
	if err != nil {
		return "", fmt.Errorf("exemptions: the next expiry: %w", err)
	}
	if len(next) == 0 {
		return rev + "@-", nil
	}
	return rev + "@" + next[0].UTC().Format(time.RFC3339Nano), nil
}

// Lapse marks the exemptions expired at now whose lapse is not yet
// recorded, of the tenants when any are given, and returns them: each is
// returned by one call only, however many run at once.
func (s *Store) Lapse(ctx context.Context, now time.Time, tenantIDs []string) ([]Exemption, error) {
	out := []Exemption{}
	q := s.DB.NewUpdate().Model((*Exemption)(nil)).Set("lapse_recorded_at = ?", now).
		Where("lapse_recorded_at IS NULL").Where("expires_at <= ?", now)
	if len(tenantIDs) > 0 {
		q = q.Where("tenant_id IN (?)", bun.List(tenantIDs))
	}
	_, err := q.Returning("*").Exec(ctx, &out)
	return out, err
}
