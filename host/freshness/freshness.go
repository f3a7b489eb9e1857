// Package freshness records when each tenant's data domains were last synced
// and decides which tenants hold stale data.
package freshness

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/revcache"
)

// staleKey is the JSON member that carries the verdict beside the domains,
// and problemsKey the one that says, to an admin, why.
const (
	staleKey    = "stale"
	problemsKey = "problems"
)

// Tenant names a tenant to report on: ID matches data_freshness.tenant_id,
// Key is the name the report is keyed by.
type Tenant struct {
	ID  string
	Key string
}

// DomainFreshness is the last sync of one data domain; SyncedAt is nil when
// the domain never synced. Failure is the reason of the latest failed sync
// when it came after the last success (FailedAt), empty otherwise.
type DomainFreshness struct {
	Domain   string
	SyncedAt *time.Time
	Failure  string
	FailedAt *time.Time
}

// TenantFreshness is the report for one tenant. It marshals to an object
// with one member per domain, holding the last sync time or null, a
// "stale" member, and a "problems" member when Problems has any.
type TenantFreshness struct {
	// Domains follows the order of the domains asked for.
	Domains []DomainFreshness
	Stale   bool
	// Problems says, by domain, why a domain is stale or that its last
	// sync failed: a domain that never synced, synced longer ago than its
	// threshold, or whose latest sync failed after its last success (a
	// failure alone leaves the domain fresh while its data is within the
	// threshold). Map fills it; a report for a caller who may not read the
	// reasons clears it.
	Problems map[string]string
}

// Redacted is t without what only an admin reads: why a domain is stale
// and its failed syncs' reasons, which may name subscriptions and
// directories.
func (t TenantFreshness) Redacted() TenantFreshness {
	t.Problems = nil
	domains := make([]DomainFreshness, len(t.Domains))
	for i, d := range t.Domains {
		d.Failure, d.FailedAt = "", nil
		domains[i] = d
	}
	t.Domains = domains
	return t
}

// SyncedAt returns the last sync of domain, or nil.
func (t TenantFreshness) SyncedAt(domain string) *time.Time {
	for _, d := range t.Domains {
		if d.Domain == domain {
			return d.SyncedAt
		}
	}
	return nil
}

// MarshalJSON writes the domains in order, then "stale".
func (t TenantFreshness) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for _, d := range t.Domains {
		key, err := json.Marshal(d.Domain)
		if err != nil {
			return nil, err
		}
		val, err := json.Marshal(d.SyncedAt)
		if err != nil {
			return nil, err
		}
		b = append(b, key...)
		b = append(b, ':')
		b = append(b, val...)
		b = append(b, ',')
	}
	b = append(b, `"`+staleKey+`":`...)
	b = fmt.Appendf(b, "%t", t.Stale)
	if len(t.Problems) > 0 {
		problems, err := json.Marshal(t.Problems)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"`+problemsKey+`":`...)
		b = append(b, problems...)
	}
	return append(b, '}'), nil
}

// RevisionTable is the freshness's revision table (see package revcache):
// Mark and Fail raise the tenant's revision in the transaction of their
// write.
const RevisionTable = "data_freshness_revisions"

// keptReads bounds the reads Map keeps: one per set of tenants and
// domains asked for.
const keptReads = 64

// Store reads and writes the data_freshness and data_sync_failures
// tables. Map keeps what it read under the revision of the tenants'
// freshness, so the dashboard's every view does not read a hundred
// tenants' rows again between two syncs; a write through any Store on the
// same database raises it.
type Store struct {
	db   *bun.DB
	kept *revcache.Cache[stored]
}

// stored is what Map reads: the last success and the latest failure of
// each tenant's domain. Shared between readers, never changed.
type stored struct {
	synced map[[2]string]time.Time
	failed map[[2]string]failure
}

// NewStore returns a Store on db.
func NewStore(db *bun.DB) *Store {
	return &Store{db: db, kept: revcache.New[stored](keptReads, revcache.MaxAge)}
}

type row struct {
	bun.BaseModel `bun:"table:data_freshness,alias:df"`

	TenantID string    `bun:"tenant_id,pk"`
	Domain   string    `bun:"domain,pk"`
	SyncedAt time.Time `bun:"synced_at,notnull"`
}

// Mark records that tenantID's domain holds data as of at. A sync that
// finishes after a later one started must not move the time back, so the
// stored time only ever grows.
func (s *Store) Mark(ctx context.Context, tenantID, domain string, at time.Time) error {
	if tenantID == "" || domain == "" {
		return fmt.Errorf("freshness: tenant id and domain are required")
	}
	r := row{TenantID: tenantID, Domain: domain, SyncedAt: at.UTC()}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewInsert().Model(&r).
			On("CONFLICT (tenant_id, domain) DO UPDATE").
			Set("synced_at = CASE WHEN EXCLUDED.synced_at > df.synced_at THEN EXCLUDED.synced_at ELSE df.synced_at END").
			Exec(ctx)
		if err != nil {
			return err
		}
		return revcache.Bump(ctx, tx, RevisionTable, tenantID)
	})
	if err != nil {
		return fmt.Errorf("freshness: mark %s of tenant %s: %w", domain, tenantID, err)
	}
	return nil
}

// LastSuccess is when tenantID's domain last synced (Mark), and false when
// it never did.
func (s *Store) LastSuccess(ctx context.Context, tenantID, domain string) (time.Time, bool, error) {
	var r row
	err := s.db.NewSelect().Model(&r).Where("tenant_id = ? AND domain = ?", tenantID, domain).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("freshness: last success of %s of tenant %s: %w", domain, tenantID, err)
	}
	return r.SyncedAt.UTC(), true, nil
}

type failure struct {
	bun.BaseModel `bun:"table:data_sync_failures,alias:sf"`

	TenantID string    `bun:"tenant_id,pk"`
	Domain   string    `bun:"domain,pk"`
	FailedAt time.Time `bun:"failed_at,notnull"`
	Reason   string    `bun:"reason,notnull"`
}

// maxReason bounds a stored reason; a longer one is cut.
const maxReason = 2000

// Fail records that a sync of tenantID's domain failed at at, for reason.
// Only the latest failure is kept; it counts (Map) while it is later than
// the domain's last success.
func (s *Store) Fail(ctx context.Context, tenantID, domain string, at time.Time, reason string) error {
	if tenantID == "" || domain == "" || reason == "" {
		return fmt.Errorf("freshness: tenant id, domain and reason are required")
	}
	if len(reason) > maxReason {
		reason = strings.ToValidUTF8(reason[:maxReason], "") + "…"
	}
	f := failure{TenantID: tenantID, Domain: domain, FailedAt: at.UTC(), Reason: reason}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewInsert().Model(&f).
			On("CONFLICT (tenant_id, domain) DO UPDATE").
			Set("failed_at = EXCLUDED.failed_at, reason = EXCLUDED.reason").
			Where("EXCLUDED.failed_at >= sf.failed_at").
			Exec(ctx)
		if err != nil {
			return err
		}
		return revcache.Bump(ctx, tx, RevisionTable, tenantID)
	})
	if err != nil {
		return fmt.Errorf("freshness: record the failed sync of %s of tenant %s: %w", domain, tenantID, err)
	}
	return nil
}

// Map reports, for each tenant keyed by its Key, the last sync of every
// domain and whether the tenant is stale: a tenant is stale when any domain
// never synced or last synced longer ago than the domain's threshold.
// A domain without a threshold is an error rather than silently never
// stale. Tenant keys must be
// unique, or later tenants replace earlier ones in the map.
func (s *Store) Map(ctx context.Context, tenants []Tenant, domains []string, thresholds map[string]time.Duration, now time.Time) (map[string]TenantFreshness, error) {
	for _, d := range domains {
		if d == staleKey || d == problemsKey {
			return nil, fmt.Errorf("freshness: %q cannot be a domain name", d)
		}
		if _, ok := thresholds[d]; !ok {
			return nil, fmt.Errorf("freshness: no staleness threshold for domain %q", d)
		}
	}
	out := make(map[string]TenantFreshness, len(tenants))
	if len(tenants) == 0 {
		return out, nil
	}

	var st stored
	if len(domains) > 0 {
		ids := make([]string, len(tenants))
		for i, t := range tenants {
			ids[i] = t.ID
		}
		var err error
		st, err = s.kept.Load(ctx, s.db, RevisionTable, ids, revcache.Key(ids, domains...), func(ctx context.Context) (stored, error) {
			return s.load(ctx, ids, domains)
		})
		if err != nil {
			return nil, err
		}
	}
	synced, failed := st.synced, st.failed

	for _, t := range tenants {
		tf := TenantFreshness{Domains: make([]DomainFreshness, 0, len(domains))}
		for _, d := range domains {
			df := DomainFreshness{Domain: d}
			problem := ""
			at, ok := synced[[2]string{t.ID, d}]
			switch {
			case !ok:
				tf.Stale, problem = true, "never synced"
			case now.Sub(at) > thresholds[d]:
				tf.Stale, problem = true, fmt.Sprintf("last synced %s, longer ago than %s", at.UTC().Format(time.RFC3339), thresholds[d])
			}
			if ok {
				at = at.UTC()
				df.SyncedAt = &at
			}
			if f, failedSince := failed[[2]string{t.ID, d}]; failedSince && (!ok || f.FailedAt.After(at)) {
				failedAt := f.FailedAt.UTC()
				df.Failure, df.FailedAt = f.Reason, &failedAt
				problem = strings.TrimPrefix(problem+"; ", "; ") + fmt.Sprintf("the last sync failed at %s: %s", f.FailedAt.UTC().Format(time.RFC3339), f.Reason)
			}
			if problem != "" {
				if tf.Problems == nil {
					tf.Problems = map[string]string{}
				}
				tf.Problems[d] = problem
			}
			tf.Domains = append(tf.Domains, df)
		}
		out[t.Key] = tf
	}
	return out, nil
}

// load reads the last success and the latest failure of the tenants'
// domains.
func (s *Store) load(ctx context.Context, ids, domains []string) (stored, error) {
	st := stored{synced: map[[2]string]time.Time{}, failed: map[[2]string]failure{}}
	var rows []row
	err := s.db.NewSelect().Model(&rows).
		Where("tenant_id IN (?)", bun.List(ids)).
		Where("domain IN (?)", bun.List(domains)).
		Scan(ctx)
	if err != nil {
		return st, fmt.Errorf("freshness: load: %w", err)
	}
	for _, r := range rows {
		st.synced[[2]string{r.TenantID, r.Domain}] = r.SyncedAt
	}
	var failures []failure
	err = s.db.NewSelect().Model(&failures).
		Where("tenant_id IN (?)", bun.List(ids)).
		Where("domain IN (?)", bun.List(domains)).
		Scan(ctx)
	if err != nil {
		return st, fmt.Errorf("freshness: load failures: %w", err)
	}
	for _, f := range failures {
		st.failed[[2]string{f.TenantID, f.Domain}] = f
	}
	return st, nil
}

// Thresholds is what a tenant's freshness is judged on: each data domain
// some job keeps current (kept, from the scheduler's DataDomains) with its
// threshold. A domain no job keeps is not judged (a plugin that is not
// installed must not make every tenant stale), nor is one without a
// threshold (its jobs only run when triggered and declare none).
func Thresholds(kept map[string]time.Duration) map[string]time.Duration {
	out := make(map[string]time.Duration, len(kept))
	for d, t := range kept {
		if t > 0 {
			out[d] = t
		}
	}
	return out
}

// Domains is thresholds' domains in order.
func Domains(thresholds map[string]time.Duration) []string {
	return slices.Sorted(maps.Keys(thresholds))
}
