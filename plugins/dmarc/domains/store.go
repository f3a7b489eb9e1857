// Package domains keeps the mail domains of each tenant — its verified
// domains from Microsoft Graph and those an admin added — with their DKIM
// selectors, and the posture of their mail authentication (DMARC, SPF,
// DKIM, MX): the latest check of each domain with its findings, every
// check for the trend, and the weakenings found between checks. Its
// sync job checks every domain and raises an alert for each weakening.
package domains

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/revcache"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the schema of the domains and their posture, numbered
// 0001–0099, and 0102 (the findings' fix), among the reports' numbers.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

// Where a domain comes from.
const (
	// SourceGraph is a verified domain of the tenant's directory; it
	// follows the directory and cannot be deleted here.
	SourceGraph = "graph"
	// SourceAdmin is a domain an admin added.
	SourceAdmin = "admin"
)

// Domain is a watched domain with its latest posture. Score and Grade
// are the latest check's, a lower bound when DNSError names lookups DNS
// failed; the DMARC policy, SPF lookups and DKIM keys are as last known,
// nil for a part DNS never answered for.
type Domain struct {
	bun.BaseModel `bun:"table:dmarc_domains,alias:d"`
	ID            string    `bun:"id,pk"`
	TenantID      string    `bun:"tenant_id"`
	Domain        string    `bun:"domain"`
	Source        string    `bun:"source"`
	IsDefault     bool      `bun:"is_default"`
	Selectors     string    `bun:"selectors"`
	CreatedBy     string    `bun:"created_by"`
	CreatedAt     time.Time `bun:"created_at"`
	CheckedAt     time.Time `bun:"checked_at,nullzero"`
	Score         *int      `bun:"score"`
	Grade         *string   `bun:"grade"`
	DMARCPolicy   *string   `bun:"dmarc_policy"`
	SPFLookups    *int      `bun:"spf_lookups"`
	DKIMPresent   *int      `bun:"dkim_present"`
	Result        *string   `bun:"result"`
	DNSError      string    `bun:"dns_error"`
}

// SelectorList is the domain's own DKIM selectors.
func (d *Domain) SelectorList() []string {
	if d.Selectors == "" {
		return []string{}
	}
	return strings.Split(d.Selectors, ",")
}

// joinSelectors is a list of selectors as the store keeps it.
func joinSelectors(selectors []string) string { return strings.Join(selectors, ",") }

// Finding is a problem the domain's latest check found.
type Finding struct {
	bun.BaseModel `bun:"table:dmarc_findings,alias:f"`
	DomainID      string `bun:"domain_id,pk"`
	Position      int    `bun:"position,pk"`
	TenantID      string `bun:"tenant_id"`
	Code          string `bun:"code"`
	Severity      string `bun:"severity"`
	Message       string `bun:"message"`
	Fix           string `bun:"fix"`
}

// Point is one check of a domain in its history.
type Point struct {
	bun.BaseModel `bun:"table:dmarc_history,alias:h"`
	DomainID      string    `bun:"domain_id,pk"`
	CheckedAt     time.Time `bun:"checked_at,pk"`
	TenantID      string    `bun:"tenant_id"`
	Score         *int      `bun:"score"`
	Grade         *string   `bun:"grade"`
	DMARCPolicy   *string   `bun:"dmarc_policy"`
	SPFLookups    *int      `bun:"spf_lookups"`
	DKIMPresent   *int      `bun:"dkim_present"`
	DNSError      string    `bun:"dns_error"`
}

// Event is a weakening of a domain's posture that a check found.
type Event struct {
	bun.BaseModel `bun:"table:dmarc_events,alias:e"`
	ID            int64     `bun:"id,pk,autoincrement"`
	TenantID      string    `bun:"tenant_id"`
	DomainID      string    `bun:"domain_id"`
	Domain        string    `bun:"domain"`
	Code          string    `bun:"code"`
	Severity      string    `bun:"severity"`
	Message       string    `bun:"message"`
	OccurredAt    time.Time `bun:"occurred_at"`
}

// Errors of the store's writes, which the routes answer as conflicts.
var (
	// ErrDuplicate is a domain that is already watched, for any tenant.
	ErrDuplicate = errors.New("the domain is already watched")
	// ErrFromGraph is a delete of a domain that comes from the directory.
	ErrFromGraph = errors.New("the domain is a verified domain of the tenant's directory")
)

// RevisionTable is the domains' revision table (see package revcache).
// Every write to the domains, their findings, history or events raises the
// revision of the tenant it changes, in the transaction that changes it,
// as its last statement: the revision's row lock is then held only until
// the commit, and a write holding it never waits for another lock. Each
// write changes one tenant's data, so there is no order of tenants to keep.
const RevisionTable = "dmarc_domain_revisions"

// cacheKeys bounds each of a Store's caches: the least recently used key
// is dropped first. A key is a set of tenants with the read's parameters.
const cacheKeys = 256

// Store keeps the domains and their posture.
//
// Figures, Trend and Events without a window (see Events) keep their
// results under the revision of the tenants' data (RevisionTable), so the
// same read again costs a read of the revision until a write through any
// Store on the database, on any replica, changes one of the tenants. A
// Store must not be copied after first use.
type Store struct {
	DB *bun.DB

	cacheOnce sync.Once
	cache     *caches
}

// caches are the kept results of each kind of read.
type caches struct {
	figures *revcache.Cache[[]TenantFigures]
	trends  *revcache.Cache[[]DayScore]
	events  *revcache.Cache[eventPage]
}

func (s *Store) caches() *caches {
	s.cacheOnce.Do(func() {
		s.cache = &caches{
			figures: revcache.New[[]TenantFigures](cacheKeys, revcache.MaxAge),
			trends:  revcache.New[[]DayScore](cacheKeys, revcache.MaxAge),
			events:  revcache.New[eventPage](cacheKeys, revcache.MaxAge),
		}
	})
	return s.cache
}

// Get returns the domain with the id among the tenants', or nil.
func (s *Store) Get(ctx context.Context, id string, tenants []string) (*Domain, error) {
	if len(tenants) == 0 {
		return nil, nil
	}
	var d Domain
	err := s.DB.NewSelect().Model(&d).Where("d.id = ?", id).Where("d.tenant_id IN (?)", bun.List(tenants)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// TenantOf returns the tenant that watches the domain (matched without
// regard to case or a trailing dot), which is how a report about a
// domain finds its tenant; ok is false when no tenant watches it.
func (s *Store) TenantOf(ctx context.Context, domain string) (tenantID string, ok bool, err error) {
	name := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(domain)), ".")
	err = s.DB.NewSelect().Model((*Domain)(nil)).Column("tenant_id").Where("domain = ?", name).Scan(ctx, &tenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return tenantID, true, nil
}

// Add watches a domain an admin added. A domain watched already, for any
// tenant, is ErrDuplicate.
func (s *Store) Add(ctx context.Context, d *Domain) error {
	d.ID, d.Source = uuid.NewString(), SourceAdmin
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		exists, err := tx.NewSelect().Model((*Domain)(nil)).Where("domain = ?", d.Domain).Exists(ctx)
		if err != nil {
			return err
		}
		if exists {
			return ErrDuplicate
		}
		if _, err := tx.NewInsert().Model(d).Exec(ctx); err != nil {
			return err
		}
		return revcache.Bump(ctx, tx, RevisionTable, d.TenantID)
	})
}

// Delete stops watching a domain an admin added, with its findings and
// history; its events stay, naming it. A domain from the directory is
// ErrFromGraph. It reports whether the domain was there to delete.
func (s *Store) Delete(ctx context.Context, d *Domain) (bool, error) {
	if d.Source == SourceGraph {
		return false, ErrFromGraph
	}
	var deleted bool
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*Domain)(nil)).Where("id = ?", d.ID).Where("source = ?", SourceAdmin).Exec(ctx)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		deleted = true
		if err := purge(ctx, tx, []string{d.ID}); err != nil {
			return err
		}
		return revcache.Bump(ctx, tx, RevisionTable, d.TenantID)
	})
	return deleted, err
}

// purge deletes the findings and history of domains no longer watched.
func purge(ctx context.Context, tx bun.Tx, ids []string) error {
	for _, m := range []any{(*Finding)(nil), (*Point)(nil)} {
		if _, err := tx.NewDelete().Model(m).Where("domain_id IN (?)", bun.List(ids)).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// SetSelectors sets a domain's own DKIM selectors, checked besides the
// configured ones. It reports whether the domain was there. It raises the
// revision of the domain's tenant too, although no kept read shows the
// selectors, so that every write to the domains does and any read of them
// can be kept.
func (s *Store) SetSelectors(ctx context.Context, id string, selectors []string) (bool, error) {
	var found bool
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var tenants []string
		if err := tx.NewSelect().Model((*Domain)(nil)).Column("tenant_id").Where("id = ?", id).Scan(ctx, &tenants); err != nil {
			return err
		}
		if len(tenants) == 0 {
			return nil
		}
		res, err := tx.NewUpdate().Model((*Domain)(nil)).Set("selectors = ?", joinSelectors(selectors)).Where("id = ?", id).Exec(ctx)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		found = true
		return revcache.Bump(ctx, tx, RevisionTable, tenants[0])
	})
	return found, err
}

// GraphDomain is a verified domain the directory reports.
type GraphDomain struct {
	Name      string
	IsDefault bool
}

// SyncGraph makes the tenant's directory domains those Graph reported:
// new ones are added, gone ones deleted with their findings and history,
// and the default mark follows the directory. A domain an admin added
// that the directory now reports becomes the directory's. A domain
// another tenant watches stays that tenant's and is returned, for the
// sync to report.
func (s *Store) SyncGraph(ctx context.Context, tenantID string, reported []GraphDomain, at time.Time) (elsewhere []string, err error) {
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var existing []Domain
		names := make([]string, len(reported))
		for i, g := range reported {
			names[i] = g.Name
		}
		q := tx.NewSelect().Model(&existing).Where("d.tenant_id = ?", tenantID)
		if len(names) > 0 {
			q = q.WhereOr("d.domain IN (?)", bun.List(names))
		}
		if err := q.Scan(ctx); err != nil {
			return err
		}
		byName := map[string]Domain{}
		for _, d := range existing {
			byName[d.Domain] = d
		}
		kept := map[string]bool{}
		// changed is set by any write to the tenant's domains: a sync that
		// finds the directory as it was leaves the revision as it was.
		changed := false
		for _, g := range reported {
			d, ok := byName[g.Name]
			switch {
			case !ok:
				row := Domain{ID: uuid.NewString(), TenantID: tenantID, Domain: g.Name, Source: SourceGraph, IsDefault: g.IsDefault, CreatedAt: at}
				if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
					return err
				}
				changed = true
			case d.TenantID != tenantID:
				elsewhere = append(elsewhere, g.Name)
			default:
				kept[d.ID] = true
				if d.Source != SourceGraph || d.IsDefault != g.IsDefault {
					if _, err := tx.NewUpdate().Model((*Domain)(nil)).Set("source = ?", SourceGraph).Set("is_default = ?", g.IsDefault).
						Where("id = ?", d.ID).Exec(ctx); err != nil {
						return err
					}
					changed = true
				}
			}
		}
		var gone []string
		for _, d := range existing {
			if d.TenantID == tenantID && d.Source == SourceGraph && !kept[d.ID] {
				gone = append(gone, d.ID)
			}
		}
		if len(gone) > 0 {
			if _, err := tx.NewDelete().Model((*Domain)(nil)).Where("id IN (?)", bun.List(gone)).Exec(ctx); err != nil {
				return err
			}
			if err := purge(ctx, tx, gone); err != nil {
				return err
			}
			changed = true
		}
		if !changed {
			return nil
		}
		return revcache.Bump(ctx, tx, RevisionTable, tenantID)
	})
	return elsewhere, err
}

// OfTenant lists the tenant's domains by name, for a check.
func (s *Store) OfTenant(ctx context.Context, tenantID string) ([]Domain, error) {
	var out []Domain
	err := s.DB.NewSelect().Model(&out).Where("d.tenant_id = ?", tenantID).Order("d.domain").Scan(ctx)
	return out, err
}
