package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// ResourceCost is one resource's cost over its subscription's period, in
// one currency: a row of cost_resource.
type ResourceCost struct {
	bun.BaseModel  `bun:"table:cost_resource"`
	SubscriptionID string `bun:"subscription_id,pk"`
	ResourceID     string `bun:"resource_id,pk"`
	Currency       string `bun:"currency,pk"`
	TenantID       string `bun:"tenant_id"`
	Cost           Amount `bun:"cost_cents"`
}

// ResourcePeriod is the days, From through To, a subscription's resource
// costs sum, and when they were fetched.
type ResourcePeriod struct {
	bun.BaseModel  `bun:"table:cost_resource_period"`
	SubscriptionID string    `bun:"subscription_id,pk"`
	TenantID       string    `bun:"tenant_id"`
	From           Day       `bun:"first_day"`
	To             Day       `bun:"last_day"`
	SyncedAt       time.Time `bun:"synced_at"`
}

// ReplaceResourceCosts makes the ledger hold, for the period's
// subscription, exactly rows as its resources' costs over the period, in
// one transaction: the subscription's previous rows go, whatever period
// they covered. A row's subscription and tenant are the period's, its
// resource id is lower-cased, rows of one resource and currency are
// summed, and a row naming no resource (costs Cost Management attributes
// to none) is left out. It returns how many rows it stored.
func (s *Store) ReplaceResourceCosts(ctx context.Context, p ResourcePeriod, rows []ResourceCost) (int, error) {
	if p.To < p.From {
		return 0, errors.New("ledger: resource cost period ends before it starts")
	}
	type key struct{ id, currency string }
	sums := map[key]Amount{}
	for _, r := range rows {
		id := strings.ToLower(r.ResourceID)
		if id == "" {
			continue
		}
		sums[key{id, r.Currency}] += r.Cost
	}
	out := make([]ResourceCost, 0, len(sums))
	for k, v := range sums {
		out = append(out, ResourceCost{SubscriptionID: p.SubscriptionID, ResourceID: k.id, Currency: k.currency, TenantID: p.TenantID, Cost: v})
	}
	// Inserted in key order, so two replicas replacing one subscription
	// take row locks in the same order.
	sort.Slice(out, func(i, j int) bool {
		return out[i].ResourceID < out[j].ResourceID || (out[i].ResourceID == out[j].ResourceID && out[i].Currency < out[j].Currency)
	})
	p.SyncedAt = p.SyncedAt.UTC()
	err := s.DB.RunInTx(ctx, &sql.TxOptions{}, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*ResourceCost)(nil)).Where("subscription_id = ?", p.SubscriptionID).Exec(ctx); err != nil {
			return err
		}
		for start := 0; start < len(out); start += batchRows {
			batch := out[start:min(start+batchRows, len(out))]
			if _, err := tx.NewInsert().Model(&batch).Exec(ctx); err != nil {
				return err
			}
		}
		_, err := tx.NewInsert().Model(&p).
			On("CONFLICT (subscription_id) DO UPDATE").
			Set("tenant_id = EXCLUDED.tenant_id").
			Set("first_day = EXCLUDED.first_day").
			Set("last_day = EXCLUDED.last_day").
			Set("synced_at = EXCLUDED.synced_at").
			Exec(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("ledger: replace resource costs of %s: %w", p.SubscriptionID, err)
	}
	return len(out), nil
}

// ResourcePeriods returns every subscription's resource-cost period, by
// subscription id.
func (s *Store) ResourcePeriods(ctx context.Context) (map[string]ResourcePeriod, error) {
	var rows []ResourcePeriod
	if err := s.DB.NewSelect().Model(&rows).Scan(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]ResourcePeriod, len(rows))
	for _, r := range rows {
		out[r.SubscriptionID] = r
	}
	return out, nil
}

// ResourceTag is one tag of a resource: a row of cost_resource_tags.
type ResourceTag struct {
	bun.BaseModel  `bun:"table:cost_resource_tags"`
	SubscriptionID string `bun:"subscription_id,pk"`
	ResourceID     string `bun:"resource_id,pk"`
	Key            string `bun:"tag_key,pk"`
	Value          string `bun:"tag_value"`
	TenantID       string `bun:"tenant_id"`
}

// ReplaceResourceTags makes the ledger hold exactly tags as the tags of
// the subscription's resources, in one transaction. A tag's subscription
// and tenant are the arguments'; resource ids and keys are lower-cased
// (Azure compares tag names without case), and of two tags of a resource
// whose keys differ only in case the later is kept. It returns how many
// tags it stored.
func (s *Store) ReplaceResourceTags(ctx context.Context, tenantID, subscriptionID string, tags []ResourceTag) (int, error) {
	type key struct{ id, key string }
	seen := map[key]int{}
	out := make([]ResourceTag, 0, len(tags))
	for _, t := range tags {
		t.SubscriptionID, t.TenantID = subscriptionID, tenantID
		t.ResourceID, t.Key = strings.ToLower(t.ResourceID), strings.ToLower(t.Key)
		if t.ResourceID == "" || t.Key == "" {
			continue
		}
		if i, ok := seen[key{t.ResourceID, t.Key}]; ok {
			out[i] = t
			continue
		}
		seen[key{t.ResourceID, t.Key}] = len(out)
		out = append(out, t)
	}
	// Inserted in key order, so two replicas replacing one subscription
	// take row locks in the same order.
	sort.Slice(out, func(i, j int) bool {
		return out[i].ResourceID < out[j].ResourceID || (out[i].ResourceID == out[j].ResourceID && out[i].Key < out[j].Key)
	})
	err := s.DB.RunInTx(ctx, &sql.TxOptions{}, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*ResourceTag)(nil)).Where("subscription_id = ?", subscriptionID).Exec(ctx); err != nil {
			return err
		}
		for start := 0; start < len(out); start += batchRows {
			batch := out[start:min(start+batchRows, len(out))]
			if _, err := tx.NewInsert().Model(&batch).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("ledger: replace resource tags of %s: %w", subscriptionID, err)
	}
	return len(out), nil
}
