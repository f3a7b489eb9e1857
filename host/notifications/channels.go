package notifications

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Bounds of a channel's fields.
const (
	MaxName          = 200
	MaxTo            = 50
	MaxURL           = 2000
	MinSigningSecret = 32
	MaxSecret        = 1024
)

// ErrForbidden is a write the caller's scope does not allow: an
// installation channel for a caller that is not an admin, or a tenant it
// may not see.
var ErrForbidden = errors.New("notifications: forbidden")

// ErrConflict is a write the stored state refuses: a second contacts
// channel, a retry of a delivery that is not dead, a test of a disabled
// channel.
var ErrConflict = errors.New("notifications: conflict")

// ConflictError is an ErrConflict saying why.
type ConflictError struct{ Reason string }

func (e *ConflictError) Error() string { return e.Reason }

// Is makes a ConflictError an ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Scope is what a caller may see: every channel, event and delivery when
// All, else those of its tenants, never the installation's.
type Scope struct {
	All       bool
	TenantIDs []string
}

// sees reports whether the scope covers an object of the tenant (nil: the
// installation's).
func (sc Scope) sees(tenantID *string) bool {
	return sc.All || tenantID != nil && slices.Contains(sc.TenantIDs, *tenantID)
}

// apply limits a query on a table with a tenant_id column to the scope.
func (sc Scope) apply(q *bun.SelectQuery, column string) *bun.SelectQuery {
	if sc.All {
		return q
	}
	if len(sc.TenantIDs) == 0 {
		return q.Where("1 = 0")
	}
	return q.Where("? IN (?)", bun.Ident(column), bun.List(sc.TenantIDs))
}

// NewChannel is a channel to create.
type NewChannel struct {
	Name string
	Kind string
	// TenantID is the tenant whose channel it is; nil for the
	// installation's.
	TenantID *string
	Settings Settings
	Secrets  Secrets
	Contacts bool
	// Enabled defaults to true.
	Enabled   *bool
	CreatedBy string
}

// ChannelPatch names what an update changes; nil is left as it is.
type ChannelPatch struct {
	Name     *string
	Enabled  *bool
	Contacts *bool
	// Settings' fields replace the stored ones one by one.
	SMTPHost *string
	SMTPPort *int
	TLS      *string
	Username *string
	From     *string
	To       *[]string
	// Secrets' non-empty fields replace the stored ones; the others are
	// kept.
	Secrets Secrets
}

// Fields names the fields a patch changes, as the API spells them; what
// an audit entry records (never the secrets' values).
func (p ChannelPatch) Fields() []string {
	out := []string{}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"name", p.Name != nil}, {"enabled", p.Enabled != nil}, {"contacts", p.Contacts != nil},
		{"settings.smtp_host", p.SMTPHost != nil}, {"settings.smtp_port", p.SMTPPort != nil}, {"settings.tls", p.TLS != nil},
		{"settings.username", p.Username != nil}, {"settings.from", p.From != nil}, {"settings.to", p.To != nil},
		{"secrets.password", p.Secrets.Password != ""}, {"secrets.url", p.Secrets.URL != ""}, {"secrets.signing_secret", p.Secrets.SigningSecret != ""},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// AllowHTTP lets webhook URLs use plain http, which only a host in
// development should allow; https is required otherwise.
func (s *Store) AllowHTTP(allow bool) { s.allowHTTP = allow }

// checkName refuses an empty or overlong name or one with control
// characters; it returns the name trimmed.
func checkName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > MaxName || !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return "", &ValidationError{Field: "name", Reason: fmt.Sprintf("must be 1 to %d characters once trimmed, without control characters", MaxName), Value: name}
	}
	return name, nil
}

// bareAddress reports whether s is an e-mail address without a display
// name or angle brackets.
func bareAddress(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s
}

// checkHostname reports whether h is a DNS name or an IP address.
func checkHostname(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// teamsHosts are the host suffixes of the URLs Microsoft issues for a
// Teams channel's incoming webhook: the retired connectors'
// (*.webhook.office.com) and the Workflows app's (Power Automate, on
// *.logic.azure.com or *.powerplatform.com).
var teamsHosts = []string{".webhook.office.com", ".logic.azure.com", ".powerplatform.com"}

// checkURL checks a webhook's URL for the channel kind and returns its
// host, which the channel shows in place of the URL.
func (s *Store) checkURL(kind, raw string) (string, error) {
	bad := func(reason string) error { return &ValidationError{Field: "secrets.url", Reason: reason} }
	if raw == "" {
		return "", bad("required")
	}
	u, err := url.Parse(raw)
	if err != nil || len(raw) > MaxURL || u.Host == "" || u.Opaque != "" {
		return "", bad(fmt.Sprintf("must be an absolute URL of at most %d bytes", MaxURL))
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && s.allowHTTP && kind == KindWebhook:
	default:
		return "", bad("must be an https URL")
	}
	if u.User != nil {
		return "", bad("must not carry credentials; a webhook authenticates with its signature")
	}
	host := strings.ToLower(u.Hostname())
	if !checkHostname(host) {
		return "", bad("has no valid host")
	}
	switch kind {
	case KindSlack:
		if host != "hooks.slack.com" {
			return "", bad("must be a Slack incoming webhook URL, on hooks.slack.com")
		}
	case KindTeams:
		if !slices.ContainsFunc(teamsHosts, func(suffix string) bool { return strings.HasSuffix(host, suffix) }) {
			return "", bad("must be a Teams webhook URL, on a host ending in " + strings.Join(teamsHosts, ", "))
		}
	}
	return host, nil
}

// checkChannel checks a channel as it is to be stored, with its secrets,
// and fills in the defaults and the URL's host.
func (s *Store) checkChannel(c *Channel, sec *Secrets) error {
	if !slices.Contains(ChannelKinds, c.Kind) {
		return &ValidationError{Field: "kind", Reason: "must be one of " + strings.Join(ChannelKinds, ", "), Value: c.Kind}
	}
	name, err := checkName(c.Name)
	if err != nil {
		return err
	}
	c.Name = name
	for _, f := range []struct {
		name, value string
	}{{"secrets.password", sec.Password}, {"secrets.url", sec.URL}, {"secrets.signing_secret", sec.SigningSecret}} {
		if len(f.value) > MaxSecret && f.name != "secrets.url" {
			return &ValidationError{Field: f.name, Reason: fmt.Sprintf("at most %d bytes", MaxSecret)}
		}
	}
	if c.Contacts && (c.Kind != KindEmail || c.TenantID != nil) {
		return &ValidationError{Field: "contacts", Reason: "only an installation e-mail channel delivers to an event's contacts", Value: c.Contacts}
	}
	set := c.Settings
	if c.Kind != KindEmail {
		if set.SMTPHost != "" || set.SMTPPort != 0 || set.TLS != "" || set.Username != "" || set.From != "" || len(set.To) > 0 {
			return &ValidationError{Field: "settings", Reason: "a " + c.Kind + " channel takes no e-mail settings"}
		}
		if sec.Password != "" {
			return &ValidationError{Field: "secrets.password", Reason: "only an e-mail channel has a password"}
		}
		host, err := s.checkURL(c.Kind, sec.URL)
		if err != nil {
			return err
		}
		c.Settings = Settings{URLHost: host}
		switch {
		case c.Kind != KindWebhook && sec.SigningSecret != "":
			return &ValidationError{Field: "secrets.signing_secret", Reason: "only a generic webhook is signed"}
		case c.Kind == KindWebhook && len(sec.SigningSecret) < MinSigningSecret:
			return &ValidationError{Field: "secrets.signing_secret", Reason: fmt.Sprintf("required, at least %d bytes", MinSigningSecret)}
		}
		return nil
	}
	if sec.URL != "" || sec.SigningSecret != "" {
		field := "secrets.url"
		if sec.URL == "" {
			field = "secrets.signing_secret"
		}
		return &ValidationError{Field: field, Reason: "an e-mail channel has only a password"}
	}
	set.URLHost = ""
	set.SMTPHost = strings.ToLower(strings.TrimSpace(set.SMTPHost))
	if !checkHostname(set.SMTPHost) {
		return &ValidationError{Field: "settings.smtp_host", Reason: "required, a host name or IP address", Value: set.SMTPHost}
	}
	if set.TLS == "" {
		set.TLS = TLSStartTLS
	}
	if !slices.Contains([]string{TLSStartTLS, TLSImplicit, TLSNone}, set.TLS) {
		return &ValidationError{Field: "settings.tls", Reason: "must be starttls, tls or none", Value: set.TLS}
	}
	if set.SMTPPort == 0 {
		set.SMTPPort = smtpPorts[set.TLS]
	}
	if set.SMTPPort < 1 || set.SMTPPort > 65535 {
		return &ValidationError{Field: "settings.smtp_port", Reason: "must be 1 to 65535", Value: set.SMTPPort}
	}
	if len(set.Username) > 200 || strings.IndexFunc(set.Username, unicode.IsControl) >= 0 {
		return &ValidationError{Field: "settings.username", Reason: "at most 200 characters, without control characters"}
	}
	if !bareAddress(set.From) {
		return &ValidationError{Field: "settings.from", Reason: "required, a bare e-mail address", Value: set.From}
	}
	if len(set.To) == 0 || len(set.To) > MaxTo {
		return &ValidationError{Field: "settings.to", Reason: fmt.Sprintf("1 to %d e-mail addresses", MaxTo)}
	}
	for i, to := range set.To {
		if !bareAddress(to) {
			return &ValidationError{Field: fmt.Sprintf("settings.to[%d]", i), Reason: "must be a bare e-mail address", Value: to}
		}
	}
	switch {
	case set.Username != "" && sec.Password == "":
		return &ValidationError{Field: "secrets.password", Reason: "required with settings.username"}
	case set.Username == "" && sec.Password != "":
		return &ValidationError{Field: "secrets.password", Reason: "needs settings.username"}
	}
	c.Settings = set
	return nil
}

// tenantExists reports whether a tenant with the id is stored.
func tenantExists(ctx context.Context, db bun.IDB, id string) (bool, error) {
	n, err := db.NewSelect().Table("tenants").Where("id = ?", id).Count(ctx)
	return n > 0, err
}

// checkContacts refuses a second contacts channel: the outbox would send
// each of an event's contacts one message per contacts channel.
func checkContacts(ctx context.Context, tx bun.Tx, c *Channel) error {
	if !c.Contacts {
		return nil
	}
	n, err := tx.NewSelect().Model((*Channel)(nil)).Where("contacts AND id <> ?", c.ID).Count(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		return &ConflictError{Reason: "the installation has a contacts channel already; there is at most one"}
	}
	return nil
}

// CreateChannel stores a new channel with its secrets sealed. A channel
// of the installation, or of a tenant outside the scope, is ErrForbidden;
// a tenant no tenant has, or a setting the kind refuses, a
// *ValidationError; a second contacts channel a *ConflictError.
func (s *Store) CreateChannel(ctx context.Context, sc Scope, n NewChannel) (Channel, error) {
	if n.TenantID != nil && *n.TenantID == "" {
		n.TenantID = nil
	}
	if !sc.sees(n.TenantID) {
		return Channel{}, ErrForbidden
	}
	now := s.now().UTC()
	c := Channel{ID: uuid.NewString(), Name: n.Name, Kind: n.Kind, TenantID: n.TenantID, Settings: n.Settings, Contacts: n.Contacts,
		Enabled: n.Enabled == nil || *n.Enabled, CreatedBy: n.CreatedBy, CreatedAt: now, UpdatedAt: now}
	sec := n.Secrets
	if err := s.checkChannel(&c, &sec); err != nil {
		return Channel{}, err
	}
	sealed, err := s.seal.seal(c.ID, sec)
	if err != nil {
		return Channel{}, err
	}
	c.Secret = sealed
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if c.TenantID != nil {
			ok, err := tenantExists(ctx, tx, *c.TenantID)
			if err != nil {
				return err
			}
			if !ok {
				return &ValidationError{Field: "tenant_id", Reason: "no tenant with that id", Value: *c.TenantID}
			}
		}
		if err := checkContacts(ctx, tx, &c); err != nil {
			return err
		}
		_, err := tx.NewInsert().Model(&c).Exec(ctx)
		return err
	})
	if err != nil {
		return Channel{}, err
	}
	return c, nil
}

// channelIn reads a channel the scope sees; ErrNotFound otherwise.
func channelIn(ctx context.Context, db bun.IDB, sc Scope, id string) (Channel, error) {
	var c Channel
	err := db.NewSelect().Model(&c).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !sc.sees(c.TenantID) {
		return Channel{}, ErrNotFound
	}
	return c, err
}

// Channel returns a channel the scope sees; ErrNotFound otherwise.
func (s *Store) Channel(ctx context.Context, sc Scope, id string) (Channel, error) {
	return channelIn(ctx, s.db, sc, id)
}

// Channels lists the channels the scope sees, of one tenant when tenantID
// is set, installation channels first, then by name.
func (s *Store) Channels(ctx context.Context, sc Scope, tenantID string) ([]Channel, error) {
	out := []Channel{}
	q := sc.apply(s.db.NewSelect().Model(&out), "tenant_id")
	if tenantID != "" {
		q = q.Where("tenant_id = ?", tenantID)
	}
	err := q.OrderExpr("CASE WHEN tenant_id IS NULL THEN 0 ELSE 1 END, tenant_id, lower(name), id").Scan(ctx)
	return out, err
}

// UpdateChannel applies a patch to a channel the scope sees (ErrNotFound
// otherwise) and returns it as stored. The result is checked as a create
// is, and nothing is written when it fails.
func (s *Store) UpdateChannel(ctx context.Context, sc Scope, id string, p ChannelPatch) (Channel, error) {
	var out Channel
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		c, err := channelIn(ctx, tx, sc, id)
		if err != nil {
			return err
		}
		sec, err := s.seal.open(c.ID, c.Secret)
		if err != nil {
			return err
		}
		if p.Name != nil {
			c.Name = *p.Name
		}
		if p.Enabled != nil {
			c.Enabled = *p.Enabled
		}
		if p.Contacts != nil {
			c.Contacts = *p.Contacts
		}
		set := &c.Settings
		for _, f := range []struct {
			dst *string
			src *string
		}{{&set.SMTPHost, p.SMTPHost}, {&set.TLS, p.TLS}, {&set.Username, p.Username}, {&set.From, p.From}} {
			if f.src != nil {
				*f.dst = *f.src
			}
		}
		if p.SMTPPort != nil {
			set.SMTPPort = *p.SMTPPort
		}
		if p.To != nil {
			set.To = *p.To
		}
		if p.Username != nil && *p.Username == "" {
			sec.Password = ""
		}
		for _, f := range []struct {
			dst *string
			src string
		}{{&sec.Password, p.Secrets.Password}, {&sec.URL, p.Secrets.URL}, {&sec.SigningSecret, p.Secrets.SigningSecret}} {
			if f.src != "" {
				*f.dst = f.src
			}
		}
		if err := s.checkChannel(&c, &sec); err != nil {
			return err
		}
		if err := checkContacts(ctx, tx, &c); err != nil {
			return err
		}
		if c.Secret, err = s.seal.seal(c.ID, sec); err != nil {
			return err
		}
		c.UpdatedAt = s.now().UTC()
		if _, err := tx.NewUpdate().Model(&c).WherePK().Exec(ctx); err != nil {
			return err
		}
		out = c
		return nil
	})
	return out, err
}

// DeleteChannel removes a channel the scope sees (ErrNotFound otherwise)
// with its subscriptions and deliveries, and returns it as it was.
func (s *Store) DeleteChannel(ctx context.Context, sc Scope, id string) (Channel, error) {
	var out Channel
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		c, err := channelIn(ctx, tx, sc, id)
		if err != nil {
			return err
		}
		// The foreign keys cascade; deleting the dependents first spares
		// SQLite connections opened without foreign keys.
		for _, m := range []any{(*Delivery)(nil), (*Subscription)(nil)} {
			if _, err := tx.NewDelete().Model(m).Where("channel_id = ?", id).Exec(ctx); err != nil {
				return err
			}
		}
		if _, err := tx.NewDelete().Model((*Channel)(nil)).Where("id = ?", id).Exec(ctx); err != nil {
			return err
		}
		out = c
		return nil
	})
	return out, err
}

// TestChannel raises a notification.test event for a channel the scope
// sees (ErrNotFound otherwise) and writes its one delivery, to that
// channel alone, due now; a disabled channel is a *ConflictError. actor
// names who asked, in the message.
func (s *Store) TestChannel(ctx context.Context, sc Scope, id, actor string) (Event, Delivery, error) {
	var e Event
	var d Delivery
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		c, err := channelIn(ctx, tx, sc, id)
		if err != nil {
			return err
		}
		if !c.Enabled {
			return &ConflictError{Reason: "the channel is disabled; enable it to test it"}
		}
		now := s.now().UTC()
		e = Event{ID: uuid.NewString(), Source: "host", Kind: EventNotificationTest, Severity: "info", TenantID: c.TenantID,
			Title: "Test notification", Message: fmt.Sprintf("A test of the channel %q, sent by %s.", c.Name, actor),
			Link: "/notifications", Details: map[string]any{"channel_id": c.ID}, Recipients: []string{},
			DedupeKey: "test:" + uuid.NewString(), OccurredAt: now, CreatedAt: now}
		if _, err := tx.NewInsert().Model(&e).Exec(ctx); err != nil {
			return err
		}
		d = Delivery{EventID: e.ID, ChannelID: c.ID, Digest: DigestNone, Status: StatusPending, NextAttemptAt: now, CreatedAt: now}
		_, err = tx.NewInsert().Model(&d).Exec(ctx)
		return err
	})
	if err != nil {
		return Event{}, Delivery{}, err
	}
	s.wake()
	return e, d, nil
}
