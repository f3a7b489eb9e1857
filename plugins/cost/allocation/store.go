package allocation

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/plugins/cost/exchange"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/plugins/cost/reports"
)

// Store keeps the brands' rules and reads the costs they allocate, on
// the database migrated with ledger.Migrations.
type Store struct {
	DB *bun.DB
	// Exchange converts a chargeback into the reporting currency; nil
	// reports in the default currency with conversion off.
	Exchange *exchange.Converter
}

// ruleRow is a rule as stored: a row of cost_allocation_rules.
type ruleRow struct {
	bun.BaseModel  `bun:"table:cost_allocation_rules"`
	BrandID        string    `bun:"brand_id,pk"`
	Position       int       `bun:"position,pk"`
	Kind           string    `bun:"kind"`
	SubscriptionID string    `bun:"subscription_id"`
	ResourceGroup  string    `bun:"resource_group"`
	TagKey         string    `bun:"tag_key"`
	TagValue       string    `bun:"tag_value"`
	CostCentre     string    `bun:"cost_centre"`
	Split          string    `bun:"split"`
	Shares         []share   `bun:"shares,type:text"`
	UpdatedBy      string    `bun:"updated_by"`
	UpdatedAt      time.Time `bun:"updated_at"`
}

// share is a cost centre of a stored split, with its percentage in
// hundredths of a percent for a fixed split.
type share struct {
	Name        string `json:"name"`
	BasisPoints int64  `json:"basis_points,omitempty"`
}

// RuleSet is a brand's rules in order, and who last replaced them when.
type RuleSet struct {
	Rules     []Rule
	UpdatedBy string
	UpdatedAt *time.Time
}

// Rules returns the brand's rules in order; none when it has none.
func (s *Store) Rules(ctx context.Context, brandID string) (RuleSet, error) {
	var rows []ruleRow
	out := RuleSet{Rules: []Rule{}}
	if err := s.DB.NewSelect().Model(&rows).Where("brand_id = ?", brandID).Order("position").Scan(ctx); err != nil {
		return out, err
	}
	for _, r := range rows {
		rule := Rule{Kind: r.Kind, SubscriptionID: r.SubscriptionID, ResourceGroup: r.ResourceGroup, TagKey: r.TagKey, TagValue: r.TagValue, CostCentre: r.CostCentre}
		if r.Split != "" {
			rule.Shared = &Shared{Split: r.Split, CostCentres: make([]Share, len(r.Shares))}
			for i, sh := range r.Shares {
				rule.Shared.CostCentres[i].Name = sh.Name
				if r.Split == SplitFixed {
					p := float64(sh.BasisPoints) / 100
					rule.Shared.CostCentres[i].Percent = &p
				}
			}
		}
		out.Rules = append(out.Rules, rule)
		at := r.UpdatedAt.UTC()
		out.UpdatedBy, out.UpdatedAt = r.UpdatedBy, &at
	}
	return out, nil
}

// Replace makes rules, which Validate accepted, the brand's rules in
// their order, in one transaction: the brand's previous rules go, and
// either all of rules are stored or, on an error, none and the previous
// stay.
func (s *Store) Replace(ctx context.Context, brandID string, rules []Rule, by string, at time.Time) error {
	rows := make([]ruleRow, len(rules))
	for i, r := range rules {
		rows[i] = ruleRow{BrandID: brandID, Position: i, Kind: r.Kind, SubscriptionID: r.SubscriptionID, ResourceGroup: r.ResourceGroup,
			TagKey: r.TagKey, TagValue: r.TagValue, CostCentre: r.CostCentre, UpdatedBy: by, UpdatedAt: at.UTC()}
		if r.Shared != nil {
			rows[i].Split = r.Shared.Split
			for _, c := range r.Shared.CostCentres {
				sh := share{Name: c.Name}
				if c.Percent != nil {
					sh.BasisPoints, _ = basisPoints(*c.Percent)
				}
				rows[i].Shares = append(rows[i].Shares, sh)
			}
		}
	}
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*ruleRow)(nil)).Where("brand_id = ?", brandID).Exec(ctx); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		_, err := tx.NewInsert().Model(&rows).Exec(ctx)
		return err
	})
}

// Costs reads the tenants' costs over rng of metric m per subscription,
// resource (with its resource group) and currency, each with its
// resource's values of keys, and the ledger's total of the same tenants
// and range per currency. It runs three aggregates, each on an index of
// its table: the days by resource, the tags of keys, the tenants' days.
func (s *Store) Costs(ctx context.Context, tenants []string, rng reports.Range, m reports.Metric, keys []string) ([]CostRow, map[string]ledger.Amount, error) {
	rows := []CostRow{}
	totals := map[string]ledger.Amount{}
	if len(tenants) == 0 {
		return rows, totals, nil
	}
	// A resource's group is the one its id names, so it is read, not
	// grouped by, as the analysis groups by resource.
	err := s.DB.NewSelect().Table("cost_resource_daily").
		Column("subscription_id", "resource_id", "currency").ColumnExpr("MIN(resource_group) AS resource_group").
		ColumnExpr("CAST(SUM(?) AS BIGINT) AS cost", bun.Ident(m.Column())).
		Where("tenant_id IN (?)", bun.List(tenants)).Where("day BETWEEN ? AND ?", rng.From, rng.To).
		Group("subscription_id", "resource_id", "currency").Scan(ctx, &rows)
	if err != nil {
		return nil, nil, err
	}
	if len(keys) > 0 {
		var tags []ledger.ResourceTag
		if err := s.DB.NewSelect().Model(&tags).Where("tenant_id IN (?)", bun.List(tenants)).Where("tag_key IN (?)", bun.List(keys)).Scan(ctx); err != nil {
			return nil, nil, err
		}
		byResource := map[[2]string]map[string]string{}
		for _, t := range tags {
			k := [2]string{t.SubscriptionID, t.ResourceID}
			if byResource[k] == nil {
				byResource[k] = map[string]string{}
			}
			byResource[k][t.Key] = t.Value
		}
		for i := range rows {
			if rows[i].ResourceID != "" {
				rows[i].Tags = byResource[[2]string{rows[i].SubscriptionID, rows[i].ResourceID}]
			}
		}
	}
	var sums []struct {
		Currency string        `bun:"currency"`
		Total    ledger.Amount `bun:"total"`
	}
	err = s.DB.NewSelect().Table("cost_tenant_daily").ColumnExpr("currency, CAST(SUM(?) AS BIGINT) AS total", bun.Ident(m.Column())).
		Where("tenant_id IN (?)", bun.List(tenants)).Where("day BETWEEN ? AND ?", rng.From, rng.To).Group("currency").Scan(ctx, &sums)
	for _, t := range sums {
		totals[t.Currency] = t.Total
	}
	return rows, totals, err
}

// Chargeback allocates the tenants' costs over rng of metric m by the
// brand's rules (see Allocate).
func (s *Store) Chargeback(ctx context.Context, brandID string, tenants []string, rng reports.Range, m reports.Metric) (Chargeback, error) {
	set, err := s.Rules(ctx, brandID)
	if err != nil {
		return Chargeback{}, err
	}
	tenants = slices.Sorted(slices.Values(tenants))
	rows, totals, err := s.Costs(ctx, tenants, rng, m, TagKeys(set.Rules))
	if err != nil {
		return Chargeback{}, err
	}
	out := Chargeback{BrandID: brandID, TenantIDs: tenants, StartDate: rng.From, EndDate: rng.To, Days: rng.Days(), Metric: m,
		CostCentres: Allocate(set.Rules, rows, totals), Totals: []reports.CurrencyAmount{}}
	for _, c := range slices.Sorted(maps.Keys(totals)) {
		out.Totals = append(out.Totals, reports.CurrencyAmount{Currency: c, TotalCost: totals[c]})
	}
	// Converted as the summary converts the same tenants and range.
	rep, err := (&reports.Store{DB: s.DB, Exchange: s.Exchange}).Reporting(ctx, tenants, rng, m)
	if err != nil {
		return Chargeback{}, err
	}
	out.Reporting = Reporting{Reporting: rep, CostCentres: convertCentres(out.CostCentres, rep)}
	return out, nil
}
