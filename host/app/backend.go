package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stewardhq/steward/core/cache"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/freshness"
	"github.com/stewardhq/steward/host/plugins"
	"github.com/stewardhq/steward/host/tenancy"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// backend serves the Host service from the host's stores.
type backend struct {
	tenants *tenancy.Store
	audit   *audit.Store
	fresh   *freshness.Store
}

func (b *backend) ListTenants(ctx context.Context, ids []string, includeInactive bool) ([]*pluginv1.Tenant, error) {
	ts, err := b.tenants.Tenants(ctx, ids, includeInactive)
	if err != nil {
		return nil, err
	}
	out := make([]*pluginv1.Tenant, 0, len(ts))
	for _, t := range ts {
		pt := &pluginv1.Tenant{Id: t.ID, Name: t.Name, Description: t.Description, DirectoryTenantId: t.DirectoryTenantID,
			SubscriptionId: t.SubscriptionID, UseDelegation: t.UseDelegation, IsActive: t.IsActive}
		if t.BillingAccountID != nil {
			pt.BillingAccountId = *t.BillingAccountID
		}
		out = append(out, pt)
	}
	return out, nil
}

// AppendAudit records a plugin's entry with the principal it acted for; the
// entry names the plugin so a reviewer can tell who reported it.
func (b *backend) AppendAudit(ctx context.Context, plugin string, req *pluginv1.AppendAuditRequest) error {
	details, err := protocol.AuditDetails(req.Details)
	if err != nil {
		return fmt.Errorf("%w: %v", plugins.ErrInvalid, err)
	}
	e := audit.Entry{Action: req.Action, Status: req.Status, ResourceType: req.ResourceType, ResourceID: req.ResourceId, RequestID: req.RequestId,
		Details: details}
	e.Details["plugin"] = plugin
	if req.TenantId != "" {
		e.TenantID = &req.TenantId
	}
	if p := req.Principal; p != nil {
		e.ActorID, e.ActorEmail = p.Id, p.Email
		if p.Kind == "apikey" {
			e.ActorID = "apikey:" + p.Id
		}
	} else {
		e.ActorID = "plugin:" + plugin
	}
	err = b.audit.Append(ctx, e)
	var verr *audit.ValidationError
	if errors.As(err, &verr) {
		return fmt.Errorf("%w: %v", plugins.ErrInvalid, err)
	}
	return err
}

func (b *backend) MarkFresh(ctx context.Context, tenantID, domain string, at time.Time, failure string) error {
	if failure != "" {
		return b.fresh.Fail(ctx, tenantID, domain, at, failure)
	}
	return b.fresh.Mark(ctx, tenantID, domain, at)
}

// cacheCollector exposes the cache's hit rate.
type cacheCollector struct{ c cache.Cache }

var (
	cacheHits   = prometheus.NewDesc("steward_cache_hits_total", "Cache lookups that hit.", []string{"backend"}, nil)
	cacheMisses = prometheus.NewDesc("steward_cache_misses_total", "Cache lookups that missed.", []string{"backend"}, nil)
	cacheRate   = prometheus.NewDesc("steward_cache_hit_rate_percent", "Share of cache lookups that hit.", []string{"backend"}, nil)
)

func (cc cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cacheHits
	ch <- cacheMisses
	ch <- cacheRate
}

func (cc cacheCollector) Collect(ch chan<- prometheus.Metric) {
	st := cc.c.Stats()
	ch <- prometheus.MustNewConstMetric(cacheHits, prometheus.CounterValue, float64(st.Hits), st.Backend)
	ch <- prometheus.MustNewConstMetric(cacheMisses, prometheus.CounterValue, float64(st.Misses), st.Backend)
	ch <- prometheus.MustNewConstMetric(cacheRate, prometheus.GaugeValue, st.HitRatePercent, st.Backend)
}

// pluginCollector relays each running plugin's own metrics with a plugin
// label, so one scrape of the host covers the plugins too.
type pluginCollector struct{ sup *plugins.Supervisor }

func (pluginCollector) Describe(chan<- *prometheus.Desc) {}

func (pc pluginCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	relay := newMetricRelay()
	for name, text := range pc.sup.CollectMetrics(ctx) {
		for _, m := range relay.parsePluginMetrics(name, text) {
			ch <- m
		}
	}
}
