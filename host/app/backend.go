package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stewardhq/steward/core/cache"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/freshness"
	"github.com/stewardhq/steward/host/notifications"
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
	notify  *notifications.Store
	log     hclog.Logger
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

// MarkFresh records a tenant's sync of a domain; a failed one also raises
// sync.failed, whose failure to raise is logged and does not fail the mark.
func (b *backend) MarkFresh(ctx context.Context, tenantID, domain string, at time.Time, failure string) error {
	if failure == "" {
		return b.fresh.Mark(ctx, tenantID, domain, at)
	}
	if err := b.fresh.Fail(ctx, tenantID, domain, at, failure); err != nil {
		return err
	}
	if err := b.syncFailed(ctx, tenantID, domain, at, failure); err != nil {
		b.log.Error("raise sync.failed", "tenant_id", tenantID, "domain", domain, "error", err)
	}
	return nil
}

// syncFailed raises sync.failed for a tenant's domain whose sync failed at
// at, once per run of failures: the dedupe key names the domain's last
// success before the failure, so every failure until the domain syncs
// again is the same event, and the first one after a success a new one.
func (b *backend) syncFailed(ctx context.Context, tenantID, domain string, at time.Time, reason string) error {
	last, synced, err := b.fresh.LastSuccess(ctx, tenantID, domain)
	if err != nil {
		return err
	}
	since, lastSuccess := "never", any(nil)
	if synced {
		since, lastSuccess = last.Format(time.RFC3339Nano), last
	}
	name := tenantID
	if ts, err := b.tenants.Tenants(ctx, []string{tenantID}, true); err != nil {
		return err
	} else if len(ts) == 1 {
		name = ts[0].Name
	}
	_, _, err = b.notify.Raise(ctx, notifications.Event{
		Source: "host", Kind: notifications.EventSyncFailed, Severity: "error", TenantID: &tenantID,
		Title:   fmt.Sprintf("Sync of %s failed for %s", domain, name),
		Message: reason, Link: "/sync-dashboard?tenant_id=" + url.QueryEscape(tenantID),
		Details:    map[string]any{"domain": domain, "failed_at": at.UTC(), "last_success": lastSuccess},
		DedupeKey:  tenantID + "/" + domain + "/" + since,
		OccurredAt: at,
	})
	return err
}

// RaiseEvent keeps a plugin's event, which names the plugin as its source.
func (b *backend) RaiseEvent(ctx context.Context, plugin string, req *pluginv1.RaiseEventRequest, at time.Time) (string, bool, error) {
	details, err := protocol.EventDetails(req.Details)
	if err != nil {
		return "", false, fmt.Errorf("%w: details %v", plugins.ErrInvalid, err)
	}
	e := notifications.Event{Source: plugin, Kind: req.Kind, Severity: req.Severity, Title: req.Title, Message: req.Message, Link: req.Link,
		Details: details, Recipients: req.Recipients, DedupeKey: req.DedupeKey, OccurredAt: at}
	if req.TenantId != "" {
		e.TenantID = &req.TenantId
	}
	stored, duplicate, err := b.notify.Raise(ctx, e)
	var verr *notifications.ValidationError
	if errors.As(err, &verr) {
		return "", false, fmt.Errorf("%w: %v", plugins.ErrInvalid, err)
	}
	if err != nil {
		return "", false, err
	}
	return stored.ID, duplicate, nil
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
