package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/sdk"
)

// Syncer copies every resource of the tenants' subscriptions from
// Resource Graph into the store.
type Syncer struct {
	// Cloud resolves each tenant's clients and subscriptions;
	// *cloud.Clients is one.
	Cloud pluginenv.Resolver
	Store *Store
	Host  *sdk.Host
	Now   func() time.Time
}

// Run syncs every enabled subscription of every active tenant, or of those
// of run.TenantIDs, one subscription at a time, each tenant read as
// registered: through delegation or in its own directory. A tenant Steward
// cannot read fails the run, naming it and the fix. A subscription whose
// listing fails keeps its previous inventory and does not stop the
// others; the run then fails naming it, and its tenant is not marked
// fresh.
func (s *Syncer) Run(ctx context.Context, run *sdk.JobRun) (int64, error) {
	work, err := pluginenv.Plan(ctx, s.Host, s.Cloud, run.TenantIDs)
	if err != nil {
		return 0, err
	}
	var total, done int64
	for _, tw := range work {
		total += int64(len(tw.Subscriptions))
	}
	var records int64
	var synced []string
	failures := []error{pluginenv.SyncTenants(ctx, s.Host, "resources", work, func(tw pluginenv.TenantWork) error {
		var failed []error
		for _, sub := range tw.Subscriptions {
			w, err := s.syncOne(ctx, tw.Cloud, Scope{TenantID: tw.Tenant.ID, SubscriptionID: sub})
			records += w.Rows
			if err != nil {
				failed = append(failed, fmt.Errorf("subscription %s: %w", sub, err))
			}
			done++
			run.Progress(done, total, fmt.Sprintf("subscription %s: %d resources, %d created, %d changed, %d deleted",
				sub, w.Rows, w.Created, w.Changed, w.Deleted))
		}
		if len(failed) == 0 {
			synced = append(synced, tw.Tenant.ID)
		}
		return errors.Join(failed...)
	})}
	// A sync rewrites every listed row (its last seen); until the database
	// has vacuumed and counted them, a filtered page visits the table for
	// each match. Do it once enough has been rewritten rather than at
	// autovacuum's next round.
	if records > 0 {
		if _, err := s.Store.Vacuum(ctx, records); err != nil {
			failures = append(failures, fmt.Errorf("vacuum: %w", err))
		}
	}
	now := s.now()
	for _, id := range synced {
		if err := s.Host.MarkFresh(ctx, id, "resources", now); err != nil {
			failures = append(failures, fmt.Errorf("mark %s fresh: %w", id, err))
		}
	}
	return records, errors.Join(failures...)
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Syncer) syncOne(ctx context.Context, rm *cloud.ResourceManager, sc Scope) (Written, error) {
	return s.Store.Replace(ctx, sc, s.now(), func(emit func(Listed) error) error {
		return rm.Resources(ctx, []string{sc.SubscriptionID}, "", func(r cloud.Resource) error {
			l, err := listed(r)
			if err != nil {
				return err
			}
			return emit(l)
		})
	})
}

// listed reads a Resource Graph row. Tags and properties are kept as JSON
// objects (never null), encoded with sorted keys so that the same content
// compares equal from one sync to the next.
func listed(r cloud.Resource) (Listed, error) {
	tags := r.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	props := r.Properties
	if props == nil {
		props = map[string]any{}
	}
	t, err := json.Marshal(tags)
	if err != nil {
		return Listed{}, err
	}
	p, err := json.Marshal(props)
	if err != nil {
		return Listed{}, err
	}
	return Listed{ResourceID: r.ID, Name: r.Name, Type: strings.ToLower(r.Type), Location: r.Location,
		ResourceGroup: strings.ToLower(r.ResourceGroup), SKU: skuOf(r.SKU, props), Tags: string(t), Properties: string(p)}, nil
}

// skuOf is a resource's SKU: the name (or, without one, the tier) of the
// row's top-level sku, or when the row has none, of the sku its properties
// carry ("sku": {"name": …} or "sku": "…"); "" without either.
func skuOf(top, props map[string]any) string {
	if s := skuName(top); s != "" {
		return s
	}
	if s, ok := props["sku"].(string); ok {
		return s
	}
	sku, _ := props["sku"].(map[string]any)
	return skuName(sku)
}

// skuName is a sku object's name, or its tier when it has no name.
func skuName(sku map[string]any) string {
	if name, ok := sku["name"].(string); ok && name != "" {
		return name
	}
	tier, _ := sku["tier"].(string)
	return tier
}
