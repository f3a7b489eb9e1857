package notifications

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/sdk/protocol"
)

// ErrNotFound is returned for a channel, subscription, event or delivery
// that does not exist or that the caller may not see.
var ErrNotFound = errors.New("notifications: not found")

// ValidationError is a request the store refuses: a mistake of the caller,
// not a storage failure. Field names the input as the HTTP API spells it,
// for example "settings.smtp_port" or "recipients[2]".
type ValidationError struct {
	Field  string
	Reason string
	Value  any
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
}

// Store keeps channels, subscriptions, events and the outbox.
type Store struct {
	db   *bun.DB
	seal *sealer
	now  func() time.Time
	// wake tells the delivery worker that deliveries are due.
	wake func()
	// allowHTTP lets webhook URLs be http (development only).
	allowHTTP bool
	// eventTypes is the catalog of event types a subscription may name.
	eventTypes func() []EventType
}

// New returns a store on db whose channel secrets are sealed under a key
// derived from secret (the host's signing secret).
func New(db *bun.DB, secret []byte) (*Store, error) {
	s, err := newSealer(secret)
	if err != nil {
		return nil, err
	}
	return &Store{db: db, seal: s, now: time.Now, wake: func() {}, eventTypes: func() []EventType { return HostEventTypes }}, nil
}

// OnRaise sets what the store calls after an event's deliveries are
// written, to wake the delivery worker.
func (s *Store) OnRaise(fn func()) { s.wake = fn }

// SeverityRank is a severity's place in Severities, -1 for an unknown one.
func SeverityRank(severity string) int { return slices.Index(Severities, severity) }

// checkEvent checks an event to raise, filling in its defaults.
func checkEvent(e *Event) error {
	if e.Source == "" {
		return &ValidationError{Field: "source", Reason: "required"}
	}
	if err := protocol.CheckEventKind(e.Kind); err != nil {
		return &ValidationError{Field: "kind", Reason: err.Error(), Value: e.Kind}
	}
	if SeverityRank(e.Severity) < 0 {
		return &ValidationError{Field: "severity", Reason: "must be one of " + strings.Join(Severities, ", "), Value: e.Severity}
	}
	if e.Title == "" || utf8.RuneCountInString(e.Title) > protocol.MaxEventTitle || !utf8.ValidString(e.Title) {
		return &ValidationError{Field: "title", Reason: fmt.Sprintf("must be valid UTF-8 of 1 to %d characters", protocol.MaxEventTitle)}
	}
	if len(e.Message) > protocol.MaxEventMessage || !utf8.ValidString(e.Message) {
		return &ValidationError{Field: "message", Reason: fmt.Sprintf("must be valid UTF-8 of at most %d bytes", protocol.MaxEventMessage)}
	}
	if e.Link != "" && (len(e.Link) > protocol.MaxEventLink || !strings.HasPrefix(e.Link, "/") || strings.HasPrefix(e.Link, "//")) {
		return &ValidationError{Field: "link", Reason: fmt.Sprintf("must be a path in Steward starting with a single / (at most %d bytes)", protocol.MaxEventLink), Value: e.Link}
	}
	if e.DedupeKey == "" || len(e.DedupeKey) > protocol.MaxEventDedupeKey || !utf8.ValidString(e.DedupeKey) {
		return &ValidationError{Field: "dedupe_key", Reason: fmt.Sprintf("must be valid UTF-8 of 1 to %d bytes", protocol.MaxEventDedupeKey)}
	}
	if len(e.Recipients) > protocol.MaxEventRecipients {
		return &ValidationError{Field: "recipients", Reason: fmt.Sprintf("at most %d", protocol.MaxEventRecipients)}
	}
	for i, r := range e.Recipients {
		if a, err := mail.ParseAddress(r); err != nil || a.Address != r {
			return &ValidationError{Field: fmt.Sprintf("recipients[%d]", i), Reason: "must be a bare e-mail address", Value: r}
		}
	}
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	if raw, err := json.Marshal(e.Details); err != nil || len(raw) > protocol.MaxEventDetails {
		return &ValidationError{Field: "details", Reason: fmt.Sprintf("must be a JSON object of at most %d bytes", protocol.MaxEventDetails)}
	}
	if e.Recipients == nil {
		e.Recipients = []string{}
	}
	if e.TenantID != nil && *e.TenantID == "" {
		e.TenantID = nil
	}
	return nil
}

// Raise stores an event and writes its deliveries, once per kind and
// dedupe key: raising an event whose kind and key are stored returns the
// stored one with duplicate set, and delivers nothing more. A tenant id
// that names no tenant is a ValidationError.
func (s *Store) Raise(ctx context.Context, e Event) (stored Event, duplicate bool, err error) {
	if err := checkEvent(&e); err != nil {
		return Event{}, false, err
	}
	now := s.now().UTC()
	e.ID, e.CreatedAt = uuid.NewString(), now
	if e.OccurredAt.IsZero() {
		e.OccurredAt = now
	}
	e.OccurredAt = e.OccurredAt.UTC()
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if e.TenantID != nil {
			n, err := tx.NewSelect().Table("tenants").Where("id = ?", *e.TenantID).Count(ctx)
			if err != nil {
				return err
			}
			if n == 0 {
				return &ValidationError{Field: "tenant_id", Reason: "no such tenant", Value: *e.TenantID}
			}
		}
		res, err := tx.NewInsert().Model(&e).On("CONFLICT (kind, dedupe_key) DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			duplicate = true
			return tx.NewSelect().Model(&e).Where("kind = ? AND dedupe_key = ?", e.Kind, e.DedupeKey).Scan(ctx)
		}
		return s.fanOut(ctx, tx, &e, now)
	})
	if err != nil {
		return Event{}, false, err
	}
	if !duplicate {
		s.wake()
	}
	return e, duplicate, nil
}

// fanOut writes the deliveries of a new event: one per enabled channel with
// a matching subscription, due now or, when every matching subscription of
// the channel is a digest, at the end of the digest's period; and one per
// recipient the event names on each enabled contacts channel.
func (s *Store) fanOut(ctx context.Context, tx bun.Tx, e *Event, now time.Time) error {
	var subs []struct {
		Subscription  `bun:",extend"`
		ChannelTenant *string `bun:"channel_tenant_id"`
	}
	q := tx.NewSelect().Model(&subs).
		ColumnExpr("ns.*").ColumnExpr("nc.tenant_id AS channel_tenant_id").
		Join("JOIN notification_channels AS nc ON nc.id = ns.channel_id").
		Where("nc.enabled")
	if e.TenantID == nil {
		q = q.Where("nc.tenant_id IS NULL")
	} else {
		q = q.Where("nc.tenant_id IS NULL OR nc.tenant_id = ?", *e.TenantID)
	}
	if err := q.Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	digest := map[string]string{}
	for _, sub := range subs {
		if !sub.matches(e, sub.ChannelTenant) {
			continue
		}
		if d, ok := digest[sub.ChannelID]; !ok || digestRank(sub.Digest) < digestRank(d) {
			digest[sub.ChannelID] = sub.Digest
		}
	}
	var rows []Delivery
	for channel, d := range digest {
		rows = append(rows, Delivery{EventID: e.ID, ChannelID: channel, Digest: d, Status: StatusPending, NextAttemptAt: DigestDue(d, now), CreatedAt: now})
	}
	if len(e.Recipients) > 0 {
		var contacts []string
		err := tx.NewSelect().Model((*Channel)(nil)).Column("id").
			Where("enabled AND contacts AND kind = ? AND tenant_id IS NULL", KindEmail).Scan(ctx, &contacts)
		if err != nil {
			return err
		}
		for _, c := range contacts {
			for _, r := range e.Recipients {
				rows = append(rows, Delivery{EventID: e.ID, ChannelID: c, Recipient: r, Digest: DigestNone, Status: StatusPending, NextAttemptAt: now, CreatedAt: now})
			}
		}
	}
	if len(rows) == 0 {
		return nil
	}
	slices.SortFunc(rows, func(a, b Delivery) int { return strings.Compare(a.ChannelID+a.Recipient, b.ChannelID+b.Recipient) })
	_, err := tx.NewInsert().Model(&rows).On("CONFLICT (event_id, channel_id, recipient) DO NOTHING").Exec(ctx)
	return err
}

// matches is whether the subscription hears the event; channelTenant is
// the subscription's channel's tenant.
func (sub *Subscription) matches(e *Event, channelTenant *string) bool {
	if SeverityRank(e.Severity) < SeverityRank(sub.MinSeverity) {
		return false
	}
	if len(sub.EventTypes) > 0 && !slices.Contains(sub.EventTypes, e.Kind) {
		return false
	}
	if channelTenant == nil && len(sub.TenantIDs) > 0 {
		return e.TenantID != nil && slices.Contains(sub.TenantIDs, *e.TenantID)
	}
	return true
}

func digestRank(d string) int { return slices.Index(Digests, d) }

// DigestDue is when a delivery of the digest period, raised at now, is
// due: now for none, else the end of the hour or of the UTC day.
func DigestDue(digest string, now time.Time) time.Time {
	switch digest {
	case DigestHourly:
		return now.Truncate(time.Hour).Add(time.Hour)
	case DigestDaily:
		y, m, d := now.UTC().Date()
		return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	}
	return now
}
