package inventory

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// SortKeys are the inventory's sort_by values; each is a column.
var SortKeys = []string{"name", "type", "location", "resource_group", "first_seen", "last_seen", "changed_at"}

// ListQuery narrows and pages the inventory.
type ListQuery struct {
	TenantIDs     []string
	Type          string
	Location      string
	ResourceGroup string
	TagKey        string
	// TagValue applies with TagKey only.
	TagValue string
	// Text matches the name or ARM id, ignoring case.
	Text          string
	SortBy        string
	Desc          bool
	Limit, Offset int64
}

// likePattern is a LIKE pattern matching s anywhere, its wildcards
// escaped with backslash.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(s)) + "%"
}

// List returns one page of the tenants' resources matching q and how many
// match in all. The page is kept under the inventory's revision and every
// field of q.
func (s *Store) List(ctx context.Context, q ListQuery) ([]Resource, int64, error) {
	if len(q.TenantIDs) == 0 {
		return []Resource{}, 0, nil
	}
	params := q
	params.TenantIDs = nil
	p, err := s.caches().pages.Load(ctx, s.DB, RevisionTable, q.TenantIDs, cacheKey(q.TenantIDs, params), func(ctx context.Context) (page, error) {
		rows, total, err := s.list(ctx, q)
		return page{rows: rows, total: total}, err
	})
	if err != nil {
		return nil, 0, err
	}
	return slices.Clone(p.rows), p.total, nil
}

// list reads one page of List from the database.
func (s *Store) list(ctx context.Context, q ListQuery) ([]Resource, int64, error) {
	out := []Resource{}
	sel := s.DB.NewSelect().Model(&out).Where("?TableAlias.tenant_id IN (?)", bun.List(q.TenantIDs))
	if q.Type != "" {
		sel = sel.Where("?TableAlias.type = ?", strings.ToLower(q.Type))
	}
	if q.TagKey != "" {
		tag := s.DB.NewSelect().Table("resources_inventory_tags").ColumnExpr("1").
			Where("resources_inventory_tags.uid = ?TableAlias.uid").Where("resources_inventory_tags.key = ?", q.TagKey)
		if q.TagValue != "" {
			tag = tag.Where("resources_inventory_tags.value = ?", q.TagValue)
		}
		sel = sel.Where("EXISTS (?)", tag)
	}
	order := "ASC"
	if q.Desc {
		order = "DESC"
	}
	sortBy := "name"
	for _, k := range SortKeys {
		if k == q.SortBy {
			sortBy = k
		}
	}
	sel = columnFilters(sel, q).OrderExpr("?TableAlias.? "+order, bun.Ident(sortBy)).OrderExpr("?TableAlias.uid " + order)
	if q.TagKey == "" {
		total, err := sel.Limit(q.Limit).Offset(q.Offset).ScanAndCount(ctx)
		return out, total, err
	}
	if err := sel.Limit(q.Limit).Offset(q.Offset).Scan(ctx); err != nil {
		return nil, 0, err
	}
	total, err := s.countTagged(ctx, q)
	return out, total, err
}

// columnFilters narrows a query of the inventory by q's location,
// resource group and text.
func columnFilters(sel *bun.SelectQuery, q ListQuery) *bun.SelectQuery {
	if q.Location != "" {
		sel = sel.Where("?TableAlias.location = ?", q.Location)
	}
	if q.ResourceGroup != "" {
		sel = sel.Where("?TableAlias.resource_group = ?", strings.ToLower(q.ResourceGroup))
	}
	if q.Text != "" {
		p := likePattern(q.Text)
		sel = sel.Where(`(LOWER(?TableAlias.name) LIKE ? ESCAPE '\' OR LOWER(?TableAlias.resource_id) LIKE ? ESCAPE '\')`, p, p)
	}
	return sel
}

// countTagged counts the resources matching q, which filters by tag, from
// the tag table: it holds one row per resource and key, with the
// resource's tenant and type, so a filter on those and the tag is answered
// from the tag index alone, where counting the inventory would probe the
// tag table once for each resource of the type. The inventory is read
// only for q's filters on its other columns.
func (s *Store) countTagged(ctx context.Context, q ListQuery) (int64, error) {
	sel := s.DB.NewSelect().TableExpr("resources_inventory_tags AS t").
		Where("t.tenant_id IN (?)", bun.List(q.TenantIDs)).Where("t.key = ?", q.TagKey)
	if q.TagValue != "" {
		sel = sel.Where("t.value = ?", q.TagValue)
	}
	if q.Type != "" {
		sel = sel.Where("t.type = ?", strings.ToLower(q.Type))
	}
	if q.Location != "" || q.ResourceGroup != "" || q.Text != "" {
		inv := s.DB.NewSelect().Model((*Resource)(nil)).ColumnExpr("1").Where("?TableAlias.uid = t.uid")
		sel = sel.Where("EXISTS (?)", columnFilters(inv, q))
	}
	return sel.Count(ctx)
}

// Get returns a stored resource by its UID, or nil.
func (s *Store) Get(ctx context.Context, uid string) (*Resource, error) {
	var r Resource
	err := s.DB.NewSelect().Model(&r).Where("uid = ?", uid).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// History returns a resource's lifecycle events, oldest first.
func (s *Store) History(ctx context.Context, uid string) ([]Event, error) {
	out := []Event{}
	err := s.DB.NewSelect().Model(&out).Where("uid = ?", uid).Order("id").Scan(ctx)
	return out, err
}

// Count is how many resources share a value.
type Count struct {
	Value string `bun:"value" json:"value"`
	Count int64  `bun:"n" json:"count"`
}

// CountBy counts the tenants' resources by a column (type or location),
// the most common first. The counts are kept under the inventory's
// revision.
func (s *Store) CountBy(ctx context.Context, tenantIDs []string, column string) ([]Count, error) {
	if len(tenantIDs) == 0 {
		return []Count{}, nil
	}
	out, err := s.caches().countsBy.Load(ctx, s.DB, RevisionTable, tenantIDs, cacheKey(tenantIDs, column), func(ctx context.Context) ([]Count, error) {
		return s.countBy(ctx, tenantIDs, column)
	})
	if err != nil {
		return nil, err
	}
	return slices.Clone(out), nil
}

// countBy reads CountBy's counts from the database.
func (s *Store) countBy(ctx context.Context, tenantIDs []string, column string) ([]Count, error) {
	out := []Count{}
	err := s.DB.NewSelect().Table("resources_inventory").ColumnExpr("? AS value", bun.Ident(column)).ColumnExpr("COUNT(*) AS n").
		Where("tenant_id IN (?)", bun.List(tenantIDs)).GroupExpr("?", bun.Ident(column)).
		OrderExpr("n DESC").OrderExpr("?", bun.Ident(column)).Scan(ctx, &out)
	return out, err
}

// TagCoverage is how many of the tenants' resources carry each required
// tag, and how many carry all of them.
type TagCoverage struct {
	Total      int64
	AllTagged  int64
	TaggedWith map[string]int64
}

// Coverage counts the tenants' resources against the required tag keys.
// The counts are kept under the inventory's revision and the keys.
func (s *Store) Coverage(ctx context.Context, tenantIDs, required []string) (TagCoverage, error) {
	if len(tenantIDs) == 0 {
		return TagCoverage{TaggedWith: map[string]int64{}}, nil
	}
	out, err := s.caches().coverage.Load(ctx, s.DB, RevisionTable, tenantIDs, cacheKey(tenantIDs, required), func(ctx context.Context) (TagCoverage, error) {
		return s.coverage(ctx, tenantIDs, required)
	})
	if err != nil {
		return TagCoverage{}, err
	}
	out.TaggedWith = maps.Clone(out.TaggedWith)
	return out, nil
}

// coverage reads Coverage's counts from the database.
func (s *Store) coverage(ctx context.Context, tenantIDs, required []string) (TagCoverage, error) {
	out := TagCoverage{TaggedWith: map[string]int64{}}
	total, err := s.DB.NewSelect().Table("resources_inventory").Where("tenant_id IN (?)", bun.List(tenantIDs)).Count(ctx)
	if err != nil || len(required) == 0 {
		out.Total = total
		return out, err
	}
	out.Total = total
	var per []Count
	err = s.DB.NewSelect().Table("resources_inventory_tags").ColumnExpr("key AS value").ColumnExpr("COUNT(*) AS n").
		Where("tenant_id IN (?)", bun.List(tenantIDs)).Where("key IN (?)", bun.List(required)).GroupExpr("key").Scan(ctx, &per)
	if err != nil {
		return out, err
	}
	for _, c := range per {
		out.TaggedWith[c.Value] = c.Count
	}
	all := s.DB.NewSelect().Table("resources_inventory_tags").Column("uid").
		Where("tenant_id IN (?)", bun.List(tenantIDs)).Where("key IN (?)", bun.List(required)).
		Group("uid").Having("COUNT(*) = ?", len(required))
	out.AllTagged, err = s.DB.NewSelect().TableExpr("(?) AS t", all).Count(ctx)
	return out, err
}

// The kinds of orphan.
const (
	OrphanDisk          = "unattached_disk"
	OrphanPublicIP      = "unused_public_ip"
	OrphanNIC           = "unused_nic"
	OrphanResourceGroup = "empty_resource_group"
)

// OrphanKinds are the kinds of orphan, in the order they are listed.
var OrphanKinds = []string{OrphanDisk, OrphanPublicIP, OrphanNIC, OrphanResourceGroup}

// Orphan is a resource that costs or clutters without serving anything.
type Orphan struct {
	Kind string `bun:"kind"`
	Resource
}

// absent is a condition true when a resource's properties lack key or
// hold null there.
func (s *Store) absent(key string) string {
	if s.DB.Dialect().Name() == dialect.PG {
		return "COALESCE(jsonb_typeof(properties::jsonb -> '" + key + "'), 'null') = 'null'"
	}
	return "COALESCE(json_type(properties, '$." + key + "'), 'null') = 'null'"
}

func (s *Store) property(key string) string {
	if s.DB.Dialect().Name() == dialect.PG {
		return "(properties::jsonb ->> '" + key + "')"
	}
	return "json_extract(properties, '$." + key + "')"
}

// orphans is the query of every orphan of the tenants: unattached disks,
// public IPs bound to no IP configuration, NICs attached to no VM, and
// resource groups (when Resource Graph lists them as resources) that hold
// no other resource.
func (s *Store) orphans(tenantIDs []string) *bun.SelectQuery {
	cols := "uid, tenant_id, subscription_id, resource_id, name, type, location, resource_group, sku, tags, properties, first_seen, last_seen, changed_at"
	of := func(kind, where string) *bun.SelectQuery {
		return s.DB.NewSelect().TableExpr("resources_inventory AS g").ColumnExpr("? AS kind", kind).ColumnExpr(cols).
			Where("tenant_id IN (?)", bun.List(tenantIDs)).Where(where)
	}
	return of(OrphanDisk, "type = 'microsoft.compute/disks' AND "+s.property("diskState")+" = 'Unattached'").
		UnionAll(of(OrphanPublicIP, "type = 'microsoft.network/publicipaddresses' AND "+s.absent("ipConfiguration"))).
		UnionAll(of(OrphanNIC, "type = 'microsoft.network/networkinterfaces' AND "+s.absent("virtualMachine"))).
		UnionAll(of(OrphanResourceGroup, `type = 'microsoft.resources/subscriptions/resourcegroups' AND NOT EXISTS (SELECT 1 FROM resources_inventory r
			WHERE r.subscription_id = g.subscription_id AND r.resource_group = LOWER(g.name) AND r.type <> 'microsoft.resources/subscriptions/resourcegroups')`))
}

// noOrphans is how many orphans of each kind there are of no tenant.
func noOrphans() map[string]int64 {
	counts := make(map[string]int64, len(OrphanKinds))
	for _, k := range OrphanKinds {
		counts[k] = 0
	}
	return counts
}

// Orphans returns one page of the tenants' orphans (of one kind, or all
// when kind is empty), by kind and name, and how many there are of each
// kind. The page and the counts are kept under the inventory's revision,
// the page also under kind, limit and offset.
func (s *Store) Orphans(ctx context.Context, tenantIDs []string, kind string, limit, offset int64) ([]Orphan, map[string]int64, error) {
	if len(tenantIDs) == 0 {
		return []Orphan{}, noOrphans(), nil
	}
	rev, err := s.revision(ctx, tenantIDs)
	if err != nil {
		return nil, nil, err
	}
	counts, err := s.orphanCounts(ctx, tenantIDs, rev)
	if err != nil {
		return nil, nil, err
	}
	out, err := s.caches().orphans.Get(ctx, cacheKey(tenantIDs, kind, limit, offset), rev, func(ctx context.Context) ([]Orphan, error) {
		out := []Orphan{}
		sel := s.DB.NewSelect().TableExpr("(?) AS o", s.orphans(tenantIDs)).ColumnExpr("o.*")
		if kind != "" {
			sel = sel.Where("kind = ?", kind)
		}
		err := sel.OrderExpr("kind, name, uid").Limit(limit).Offset(offset).Scan(ctx, &out)
		return out, err
	})
	if err != nil {
		return nil, nil, err
	}
	return slices.Clone(out), counts, nil
}

// OrphanCounts returns how many orphans of each kind the tenants have,
// kept under the inventory's revision.
func (s *Store) OrphanCounts(ctx context.Context, tenantIDs []string) (map[string]int64, error) {
	if len(tenantIDs) == 0 {
		return noOrphans(), nil
	}
	rev, err := s.revision(ctx, tenantIDs)
	if err != nil {
		return nil, err
	}
	return s.orphanCounts(ctx, tenantIDs, rev)
}

// orphanCounts returns a copy of the tenants' orphan counts kept under
// rev, the revision of their inventory, reading them when none are.
func (s *Store) orphanCounts(ctx context.Context, tenantIDs []string, rev string) (map[string]int64, error) {
	counts, err := s.caches().orphanCounts.Get(ctx, cacheKey(tenantIDs), rev, func(ctx context.Context) (map[string]int64, error) {
		var per []Count
		err := s.DB.NewSelect().TableExpr("(?) AS o", s.orphans(tenantIDs)).ColumnExpr("kind AS value").ColumnExpr("COUNT(*) AS n").
			GroupExpr("kind").Scan(ctx, &per)
		if err != nil {
			return nil, err
		}
		counts := noOrphans()
		for _, c := range per {
			counts[c.Value] = c.Count
		}
		return counts, nil
	})
	if err != nil {
		return nil, err
	}
	return maps.Clone(counts), nil
}

// EventQuery narrows and pages the lifecycle feed.
type EventQuery struct {
	TenantIDs     []string
	Kind          string
	Since         time.Time
	Limit, Offset int64
}

// EventFeed returns one page of the tenants' lifecycle events, newest
// first, and how many match in all.
func (s *Store) EventFeed(ctx context.Context, q EventQuery) ([]Event, int64, error) {
	out := []Event{}
	if len(q.TenantIDs) == 0 {
		return out, 0, nil
	}
	sel := s.DB.NewSelect().Model(&out).Where("tenant_id IN (?)", bun.List(q.TenantIDs))
	if q.Kind != "" {
		sel = sel.Where("kind = ?", q.Kind)
	}
	if !q.Since.IsZero() {
		sel = sel.Where("at >= ?", q.Since.UTC())
	}
	total, err := sel.OrderExpr("id DESC").Limit(q.Limit).Offset(q.Offset).ScanAndCount(ctx)
	return out, total, err
}

// Each calls fn for each of the tenants' resources (of one type, or all
// when typ is empty), by tenant, type and ARM id, read from a cursor.
func (s *Store) Each(ctx context.Context, tenantIDs []string, typ string, fn func(*Resource) error) error {
	if len(tenantIDs) == 0 {
		return nil
	}
	sel := s.DB.NewSelect().Model((*Resource)(nil)).Where("tenant_id IN (?)", bun.List(tenantIDs))
	if typ != "" {
		sel = sel.Where("type = ?", strings.ToLower(typ))
	}
	rows, err := sel.Order("tenant_id", "type", "resource_id").Rows(ctx)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r Resource
		if err := s.DB.ScanRow(ctx, rows, &r); err != nil {
			return err
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
	return rows.Err()
}
