package notifications

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
)

// unit is what one send delivers: one delivery, or every due delivery of
// a channel's digest.
type unit struct {
	channelID  string
	recipient  string
	digest     string
	deliveries []Delivery
}

func (u unit) ids() []int64 {
	ids := make([]int64, len(u.deliveries))
	for i, d := range u.deliveries {
		ids[i] = d.ID
	}
	return ids
}

// due is the condition of a delivery a replica may claim: pending, due,
// and not claimed by a replica whose lease still runs.
const due = "status = 'pending' AND next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?)"

// claim leases up to n units of due deliveries to this replica until now
// plus lease: first the digests that are due, each channel's digest of a
// period as one unit, then single deliveries, oldest first. On PostgreSQL
// concurrent replicas skip each other's locked rows; SQLite runs one
// writing statement at a time.
func (s *Store) claim(ctx context.Context, n int, lease time.Duration) ([]unit, error) {
	now := s.now().UTC()
	until := now.Add(lease)
	var groups []struct {
		ChannelID string `bun:"channel_id"`
		Digest    string `bun:"digest"`
	}
	err := s.db.NewSelect().Model((*Delivery)(nil)).Column("channel_id", "digest").
		Where(due, now, now).Where("digest <> ?", DigestNone).
		Group("channel_id", "digest").OrderExpr("MIN(next_attempt_at)").Limit(int64(max(1, n/2))).
		Scan(ctx, &groups)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	var units []unit
	for _, g := range groups {
		// Without SKIP LOCKED, a replica claiming the same digest waits for
		// the first and then finds its rows claimed, so that a digest is
		// one message.
		var rows []Delivery
		err := s.db.NewRaw("UPDATE notification_deliveries SET claimed_until = ? WHERE channel_id = ? AND digest = ? AND "+due+" RETURNING *",
			until, g.ChannelID, g.Digest, now, now).Scan(ctx, &rows)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		if len(rows) > 0 {
			slices.SortFunc(rows, func(a, b Delivery) int { return a.CreatedAt.Compare(b.CreatedAt) })
			units = append(units, unit{channelID: g.ChannelID, digest: g.Digest, deliveries: rows})
		}
	}
	if left := n - len(units); left > 0 {
		lock := ""
		if store.DialectName(s.db) == store.DialectPostgres {
			lock = " FOR UPDATE SKIP LOCKED"
		}
		var rows []Delivery
		err := s.db.NewRaw("UPDATE notification_deliveries SET claimed_until = ? WHERE id IN (SELECT id FROM notification_deliveries WHERE digest = ? AND "+due+
			" ORDER BY next_attempt_at, id LIMIT ?"+lock+") RETURNING *", until, DigestNone, now, now, left).Scan(ctx, &rows)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		slices.SortFunc(rows, func(a, b Delivery) int { return a.NextAttemptAt.Compare(b.NextAttemptAt) })
		for _, d := range rows {
			units = append(units, unit{channelID: d.ChannelID, recipient: d.Recipient, digest: DigestNone, deliveries: []Delivery{d}})
		}
	}
	return units, nil
}

// complete records deliveries as delivered.
func (s *Store) complete(ctx context.Context, ids []int64) error {
	_, err := s.db.NewUpdate().Model((*Delivery)(nil)).
		Set("status = ?", StatusDelivered).Set("delivered_at = ?", s.now().UTC()).Set("attempts = attempts + 1").
		Set("claimed_until = NULL").Set("last_error = ''").
		Where("id IN (?)", bun.List(ids)).Where("status = ?", StatusPending).Exec(ctx)
	return err
}

// fail records a failed attempt at deliveries: they are due again at next
// or, final or at their last attempt, dead. A final failure of a
// delivery that was not attempted (its channel disabled) does not count
// as an attempt. It returns how many deliveries are dead.
func (s *Store) fail(ctx context.Context, ids []int64, lastError string, next time.Time, maxAttempts int, f failure) (int, error) {
	inc := 1
	if errors.Is(f.err, errChannelDisabled) {
		inc = 0
	}
	if f.final {
		maxAttempts = 0
	}
	var statuses []string
	err := s.db.NewRaw("UPDATE notification_deliveries SET attempts = attempts + ?, last_error = ?, next_attempt_at = ?, claimed_until = NULL, "+
		"status = CASE WHEN attempts + ? >= ? THEN ? ELSE ? END WHERE id IN (?) AND status = ? RETURNING status",
		inc, lastError, next.UTC(), inc, maxAttempts, StatusDead, StatusPending, bun.List(ids), StatusPending).Scan(ctx, &statuses)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	dead := 0
	for _, st := range statuses {
		if st == StatusDead {
			dead++
		}
	}
	return dead, nil
}

// target is a channel with its secrets opened.
type target struct {
	Channel
	secrets Secrets
}

// deliveryChannel returns the channel with its secrets, ErrNotFound when
// it was deleted.
func (s *Store) deliveryChannel(ctx context.Context, id string) (target, error) {
	var ch Channel
	if err := s.db.NewSelect().Model(&ch).Where("id = ?", id).Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return target{}, ErrNotFound
	} else if err != nil {
		return target{}, err
	}
	sec, err := s.seal.open(ch.ID, ch.Secret)
	if err != nil {
		return target{}, err
	}
	return target{Channel: ch, secrets: sec}, nil
}

// notice is what a send says: one event, or a digest's events.
type notice struct {
	// Digest is the digest period, none for a single event.
	Digest string
	Items  []item
}

// item is an event as sent: with its tenant's name and an absolute link.
type item struct {
	Event
	DeliveryID int64
	TenantName string
	// URL is the event's link on the host's public origin; empty when the
	// event has no link.
	URL string
}

// message loads the events of a unit's deliveries, in the order they
// happened.
func (s *Store) message(ctx context.Context, u unit, origin string) (notice, error) {
	ids := make([]string, len(u.deliveries))
	byEvent := map[string]int64{}
	for i, d := range u.deliveries {
		ids[i] = d.EventID
		byEvent[d.EventID] = d.ID
	}
	var events []Event
	if err := s.db.NewSelect().Model(&events).Where("id IN (?)", bun.List(ids)).Order("occurred_at", "id").Scan(ctx); err != nil {
		return notice{}, err
	}
	if len(events) == 0 {
		return notice{}, fmt.Errorf("events of deliveries %v not found", u.ids())
	}
	var tenantIDs []string
	for _, e := range events {
		if e.TenantID != nil {
			tenantIDs = append(tenantIDs, *e.TenantID)
		}
	}
	names := map[string]string{}
	if len(tenantIDs) > 0 {
		var rows []struct {
			ID   string `bun:"id"`
			Name string `bun:"name"`
		}
		if err := s.db.NewSelect().Table("tenants").Column("id", "name").Where("id IN (?)", bun.List(tenantIDs)).Scan(ctx, &rows); err != nil {
			return notice{}, err
		}
		for _, r := range rows {
			names[r.ID] = r.Name
		}
	}
	n := notice{Digest: u.digest}
	for _, e := range events {
		it := item{Event: e, DeliveryID: byEvent[e.ID]}
		if e.TenantID != nil {
			it.TenantName = names[*e.TenantID]
		}
		if e.Link != "" {
			it.URL = origin + e.Link
		}
		n.Items = append(n.Items, it)
	}
	return n, nil
}

// outboxCounts counts pending and dead deliveries.
func (s *Store) outboxCounts(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		Status string `bun:"status"`
		N      int    `bun:"n"`
	}
	err := s.db.NewSelect().Model((*Delivery)(nil)).Column("status").ColumnExpr("COUNT(*) AS n").
		Where("status IN (?)", bun.List([]string{StatusPending, StatusDead})).Group("status").Scan(ctx, &rows)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	counts := map[string]int{StatusPending: 0, StatusDead: 0}
	for _, r := range rows {
		counts[r.Status] = r.N
	}
	return counts, nil
}
