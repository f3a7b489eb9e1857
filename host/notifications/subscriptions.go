package notifications

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Bounds of a subscription's lists.
const (
	MaxEventTypes = 100
	MaxTenantIDs  = 1000
)

// SetEventTypes sets the catalog of event types a subscription may name:
// the host's and those the plugins declare. Without it only
// HostEventTypes are known.
func (s *Store) SetEventTypes(fn func() []EventType) { s.eventTypes = fn }

// EventTypes is the catalog of event types a subscription may name, by
// name.
func (s *Store) EventTypes() []EventType {
	out := slices.Clone(s.eventTypes())
	slices.SortFunc(out, func(a, b EventType) int { return strings.Compare(a.Name, b.Name) })
	return slices.CompactFunc(out, func(a, b EventType) bool { return a.Name == b.Name })
}

// NewSubscription is a subscription to create.
type NewSubscription struct {
	ChannelID  string
	EventTypes []string
	// MinSeverity defaults to info, Digest to none.
	MinSeverity string
	Digest      string
	TenantIDs   []string
	CreatedBy   string
}

// SubscriptionPatch names what an update changes; nil is left as it is.
type SubscriptionPatch struct {
	EventTypes  *[]string
	MinSeverity *string
	Digest      *string
	TenantIDs   *[]string
}

// Fields names the fields a patch changes, as the API spells them.
func (p SubscriptionPatch) Fields() []string {
	out := []string{}
	if p.EventTypes != nil {
		out = append(out, "event_types")
	}
	if p.MinSeverity != nil {
		out = append(out, "min_severity")
	}
	if p.Digest != nil {
		out = append(out, "digest")
	}
	if p.TenantIDs != nil {
		out = append(out, "tenant_ids")
	}
	return out
}

// checkSubscription checks a subscription as it is to be stored, on its
// channel, filling in defaults and dropping repeats.
func (s *Store) checkSubscription(ctx context.Context, tx bun.Tx, sub *Subscription, channel Channel) error {
	if sub.EventTypes == nil {
		sub.EventTypes = []string{}
	}
	if len(sub.EventTypes) > MaxEventTypes {
		return &ValidationError{Field: "event_types", Reason: fmt.Sprintf("at most %d", MaxEventTypes)}
	}
	known := s.EventTypes()
	for i, t := range sub.EventTypes {
		if !slices.ContainsFunc(known, func(k EventType) bool { return k.Name == t }) {
			return &ValidationError{Field: fmt.Sprintf("event_types[%d]", i), Reason: "no such event type; GET /api/v1/notifications/event-types lists them", Value: t}
		}
	}
	sub.EventTypes = slices.Compact(slices.Sorted(slices.Values(sub.EventTypes)))
	if sub.MinSeverity == "" {
		sub.MinSeverity = Severities[0]
	}
	if SeverityRank(sub.MinSeverity) < 0 {
		return &ValidationError{Field: "min_severity", Reason: "must be one of " + strings.Join(Severities, ", "), Value: sub.MinSeverity}
	}
	if sub.Digest == "" {
		sub.Digest = DigestNone
	}
	if !slices.Contains(Digests, sub.Digest) {
		return &ValidationError{Field: "digest", Reason: "must be one of " + strings.Join(Digests, ", "), Value: sub.Digest}
	}
	if sub.TenantIDs == nil {
		sub.TenantIDs = []string{}
	}
	if len(sub.TenantIDs) > 0 && channel.TenantID != nil {
		return &ValidationError{Field: "tenant_ids", Reason: "only an installation channel's subscription names tenants; a tenant's channel hears its own tenant"}
	}
	if len(sub.TenantIDs) > MaxTenantIDs {
		return &ValidationError{Field: "tenant_ids", Reason: fmt.Sprintf("at most %d", MaxTenantIDs)}
	}
	for i, id := range sub.TenantIDs {
		ok, err := tenantExists(ctx, tx, id)
		if err != nil {
			return err
		}
		if !ok {
			return &ValidationError{Field: fmt.Sprintf("tenant_ids[%d]", i), Reason: "no tenant with that id", Value: id}
		}
	}
	sub.TenantIDs = slices.Compact(slices.Sorted(slices.Values(sub.TenantIDs)))
	return nil
}

// CreateSubscription stores a subscription of a channel the scope sees.
// A channel it does not see is a *ValidationError naming channel_id, as
// an unknown one is; an event type outside the catalog, a severity or
// digest not known, tenant ids on a tenant's channel or naming no tenant,
// are *ValidationErrors too.
func (s *Store) CreateSubscription(ctx context.Context, sc Scope, n NewSubscription) (Subscription, error) {
	now := s.now().UTC()
	sub := Subscription{ID: uuid.NewString(), ChannelID: n.ChannelID, EventTypes: n.EventTypes, MinSeverity: n.MinSeverity,
		TenantIDs: n.TenantIDs, Digest: n.Digest, CreatedBy: n.CreatedBy, CreatedAt: now, UpdatedAt: now}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		c, err := channelIn(ctx, tx, sc, n.ChannelID)
		if errors.Is(err, ErrNotFound) {
			return &ValidationError{Field: "channel_id", Reason: "no channel with that id", Value: n.ChannelID}
		}
		if err != nil {
			return err
		}
		if err := s.checkSubscription(ctx, tx, &sub, c); err != nil {
			return err
		}
		_, err = tx.NewInsert().Model(&sub).Exec(ctx)
		return err
	})
	if err != nil {
		return Subscription{}, err
	}
	return sub, nil
}

// subscriptionIn reads a subscription whose channel the scope sees, with
// the channel; ErrNotFound otherwise.
func subscriptionIn(ctx context.Context, db bun.IDB, sc Scope, id string) (Subscription, Channel, error) {
	var sub Subscription
	err := db.NewSelect().Model(&sub).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return sub, Channel{}, ErrNotFound
	}
	if err != nil {
		return sub, Channel{}, err
	}
	c, err := channelIn(ctx, db, sc, sub.ChannelID)
	return sub, c, err
}

// Subscription returns a subscription whose channel the scope sees;
// ErrNotFound otherwise.
func (s *Store) Subscription(ctx context.Context, sc Scope, id string) (Subscription, error) {
	sub, _, err := subscriptionIn(ctx, s.db, sc, id)
	return sub, err
}

// Subscriptions lists the subscriptions of the channels the scope sees,
// of one channel when channelID is set, by channel and age.
func (s *Store) Subscriptions(ctx context.Context, sc Scope, channelID string) ([]Subscription, error) {
	out := []Subscription{}
	q := s.db.NewSelect().Model(&out).Join("JOIN notification_channels AS nc ON nc.id = ns.channel_id")
	q = sc.apply(q, "nc.tenant_id")
	if channelID != "" {
		q = q.Where("ns.channel_id = ?", channelID)
	}
	err := q.Order("ns.channel_id", "ns.created_at", "ns.id").Scan(ctx)
	return out, err
}

// UpdateSubscription applies a patch to a subscription whose channel the
// scope sees (ErrNotFound otherwise), checked as a create is; nothing is
// written when the check fails.
func (s *Store) UpdateSubscription(ctx context.Context, sc Scope, id string, p SubscriptionPatch) (Subscription, error) {
	var out Subscription
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		sub, c, err := subscriptionIn(ctx, tx, sc, id)
		if err != nil {
			return err
		}
		if p.EventTypes != nil {
			sub.EventTypes = *p.EventTypes
		}
		if p.MinSeverity != nil {
			sub.MinSeverity = *p.MinSeverity
			if sub.MinSeverity == "" {
				return &ValidationError{Field: "min_severity", Reason: "must be one of " + strings.Join(Severities, ", ")}
			}
		}
		if p.Digest != nil {
			sub.Digest = *p.Digest
			if sub.Digest == "" {
				return &ValidationError{Field: "digest", Reason: "must be one of " + strings.Join(Digests, ", ")}
			}
		}
		if p.TenantIDs != nil {
			sub.TenantIDs = *p.TenantIDs
		}
		if err := s.checkSubscription(ctx, tx, &sub, c); err != nil {
			return err
		}
		sub.UpdatedAt = s.now().UTC()
		if _, err := tx.NewUpdate().Model(&sub).WherePK().Exec(ctx); err != nil {
			return err
		}
		out = sub
		return nil
	})
	return out, err
}

// DeleteSubscription removes a subscription whose channel the scope sees
// (ErrNotFound otherwise) and returns it as it was. Deliveries it made
// stay in the outbox.
func (s *Store) DeleteSubscription(ctx context.Context, sc Scope, id string) (Subscription, Channel, error) {
	var sub Subscription
	var c Channel
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if sub, c, err = subscriptionIn(ctx, tx, sc, id); err != nil {
			return err
		}
		_, err = tx.NewDelete().Model((*Subscription)(nil)).Where("id = ?", id).Exec(ctx)
		return err
	})
	return sub, c, err
}
