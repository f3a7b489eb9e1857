package notifications

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"
)

// EventFilter narrows a list of events; zero fields match everything.
type EventFilter struct {
	Kind     string
	Severity string
	TenantID string
	// Since keeps events created at or after it.
	Since         time.Time
	Limit, Offset int
}

// Events lists the events the scope sees, newest first, a page of them
// with the number of all that match. A standard scope sees its tenants'
// events, never the installation's.
func (s *Store) Events(ctx context.Context, sc Scope, f EventFilter) ([]Event, int, error) {
	out := []Event{}
	q := sc.apply(s.db.NewSelect().Model(&out), "tenant_id")
	if f.Kind != "" {
		q = q.Where("kind = ?", f.Kind)
	}
	if f.Severity != "" {
		q = q.Where("severity = ?", f.Severity)
	}
	if f.TenantID != "" {
		q = q.Where("tenant_id = ?", f.TenantID)
	}
	if !f.Since.IsZero() {
		q = q.Where("created_at >= ?", f.Since.UTC())
	}
	n, err := q.OrderExpr("created_at DESC, id DESC").Limit(int64(f.Limit)).Offset(int64(f.Offset)).ScanAndCount(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return out, int(n), err
}

// Event returns an event the scope sees (ErrNotFound otherwise) with its
// deliveries to the channels the scope sees, oldest first.
func (s *Store) Event(ctx context.Context, sc Scope, id string) (Event, []Delivery, error) {
	var e Event
	err := s.db.NewSelect().Model(&e).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !sc.sees(e.TenantID) {
		return Event{}, nil, ErrNotFound
	}
	if err != nil {
		return Event{}, nil, err
	}
	ds, _, err := s.Deliveries(ctx, sc, DeliveryFilter{EventID: id})
	return e, ds, err
}

// DeliveryFilter narrows a list of deliveries; zero fields match
// everything, and a zero Limit every delivery.
type DeliveryFilter struct {
	Status        string
	ChannelID     string
	EventID       string
	Limit, Offset int
}

// Deliveries lists the deliveries to the channels the scope sees, newest
// first (oldest first for one event's), a page of them with the number of
// all that match.
func (s *Store) Deliveries(ctx context.Context, sc Scope, f DeliveryFilter) ([]Delivery, int, error) {
	out := []Delivery{}
	q := s.db.NewSelect().Model(&out).Join("JOIN notification_channels AS nc ON nc.id = nd.channel_id")
	q = sc.apply(q, "nc.tenant_id")
	if f.Status != "" {
		q = q.Where("nd.status = ?", f.Status)
	}
	if f.ChannelID != "" {
		q = q.Where("nd.channel_id = ?", f.ChannelID)
	}
	if f.EventID != "" {
		q = q.Where("nd.event_id = ?", f.EventID).Order("nd.id")
	} else {
		q = q.OrderExpr("nd.id DESC")
	}
	if f.Limit > 0 {
		q = q.Limit(int64(f.Limit)).Offset(int64(f.Offset))
	}
	n, err := q.ScanAndCount(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return out, int(n), err
}

// RetryDelivery puts a dead delivery to a channel the scope sees
// (ErrNotFound otherwise) back in the outbox: pending, its attempts
// counted from 0, due now. Its last error stays until the next attempt.
// A delivery that is not dead is a *ConflictError.
func (s *Store) RetryDelivery(ctx context.Context, sc Scope, id int64) (Delivery, error) {
	var d Delivery
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewSelect().Model(&d).Join("JOIN notification_channels AS nc ON nc.id = nd.channel_id").Where("nd.id = ?", id)
		err := sc.apply(q, "nc.tenant_id").Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if d.Status != StatusDead {
			return &ConflictError{Reason: "only a dead delivery is retried; this one is " + d.Status}
		}
		d.Status, d.Attempts, d.NextAttemptAt, d.ClaimedUntil = StatusPending, 0, s.now().UTC(), nil
		res, err := tx.NewUpdate().Model(&d).Column("status", "attempts", "next_attempt_at", "claimed_until").
			WherePK().Where("status = ?", StatusDead).Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return &ConflictError{Reason: "the delivery changed; read it again"}
		}
		return nil
	})
	if err != nil {
		return Delivery{}, err
	}
	s.wake()
	return d, nil
}

// EventTitles returns the titles of the events with the ids given, by id,
// for a page listing their deliveries; the caller has read those through
// a scope already.
func (s *Store) EventTitles(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ID    string `bun:"id"`
		Title string `bun:"title"`
	}
	if err := s.db.NewSelect().Model((*Event)(nil)).Column("id", "title").Where("id IN (?)", bun.List(ids)).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ID] = r.Title
	}
	return out, nil
}
