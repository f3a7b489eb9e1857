package server

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/freshness"
	"github.com/stewardhq/steward/host/plugins"
	"github.com/stewardhq/steward/sdk"
)

// Health states.
const (
	healthy   = "healthy"
	degraded  = "degraded"
	unhealthy = "unhealthy"
)

type componentState struct {
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

type healthReport struct {
	status     string
	components map[string]componentState
	plugins    []plugins.Status
}

// check looks at every component. The database decides healthy versus
// unhealthy; everything else can only degrade the service.
func (s *Server) check(ctx context.Context) healthReport {
	r := healthReport{status: healthy, components: map[string]componentState{}}
	dbCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.deps.DB.PingContext(dbCtx); err != nil {
		r.components["database"] = componentState{Status: unhealthy, Detail: err.Error()}
		r.status = unhealthy
	} else {
		r.components["database"] = componentState{Status: healthy}
	}
	if s.deps.SchedulerUp != nil && s.deps.SchedulerUp() {
		r.components["scheduler"] = componentState{Status: "running"}
	} else {
		r.components["scheduler"] = componentState{Status: "stopped"}
		r.degrade()
	}
	r.components["cache"] = componentState{Status: healthy, Detail: s.deps.Cache.Stats().Backend}
	if s.deps.Redis != nil {
		// What each part does without Redis is redisconn's failure policy:
		// the service keeps answering, so an outage degrades it.
		if st := s.deps.Redis.Status(); st.Up {
			r.components["redis"] = componentState{Status: healthy}
		} else {
			since := "unreachable since " + st.Since.UTC().Format(time.RFC3339)
			r.components["redis"] = componentState{Status: unhealthy, Detail: since}
			r.components["cache"] = componentState{Status: degraded, Detail: s.deps.Cache.Stats().Backend + " " + since}
			r.degrade()
		}
	}
	if s.deps.Plugins != nil {
		r.plugins = s.deps.Plugins.Statuses()
		for _, p := range r.plugins {
			if p.State != plugins.StateRunning && p.State != plugins.StateDisabled {
				r.degrade()
			}
		}
	}
	return r
}

func (r *healthReport) degrade() {
	if r.status == healthy {
		r.status = degraded
	}
}

type simpleHealth struct {
	Body struct {
		Status string `json:"status" enum:"healthy,degraded,unhealthy"`
	}
}

type apiHealthBody struct {
	Status      string                    `json:"status" enum:"healthy,degraded,unhealthy"`
	Version     string                    `json:"version,omitempty"`
	Environment string                    `json:"environment,omitempty"`
	Database    string                    `json:"database"`
	Cache       string                    `json:"cache"`
	Scheduler   string                    `json:"scheduler"`
	Cloud       map[string]any            `json:"cloud"`
	Components  map[string]componentState `json:"components,omitempty"`
}

type apiHealth struct {
	Status int
	Body   apiHealthBody
}

type detailedBody struct {
	Status         string                    `json:"status"`
	Version        string                    `json:"version,omitempty"`
	Environment    string                    `json:"environment,omitempty"`
	UptimeSeconds  float64                   `json:"uptime_seconds,omitempty"`
	Components     map[string]any            `json:"components"`
	CacheMetrics   map[string]any            `json:"cache_metrics"`
	DatabasePool   map[string]any            `json:"database_pool"`
	TokenBlacklist map[string]any            `json:"token_blacklist"`
	Plugins        []plugins.Status          `json:"plugins,omitempty"`
	PluginHealth   map[string]pluginHealth   `json:"plugin_health,omitempty"`
	Runtime        map[string]any            `json:"runtime,omitempty"`
	States         map[string]componentState `json:"states,omitempty"`
}

type pluginHealth struct {
	Status  string            `json:"status"`
	Message string            `json:"message,omitempty"`
	Details map[string]string `json:"details,omitempty"`
}

type detailed struct {
	Status int
	Body   detailedBody
}

type dataHealth struct {
	Body freshnessReport
}

// freshnessReport is /api/v1/health/data's body: the data freshness map of
// the caller's tenants for a signed-in caller, and only how many tenants
// are fresh and stale for an anonymous one, who may see no tenant.
type freshnessReport struct {
	tenants map[string]freshness.TenantFreshness
	counts  *freshnessCounts
}

type freshnessCounts struct {
	Fresh int `json:"fresh" minimum:"0" doc:"Tenants whose every data domain synced within its threshold"`
	Stale int `json:"stale" minimum:"0" doc:"Tenants with a data domain that never synced or synced longer ago than its threshold"`
}

func (r freshnessReport) MarshalJSON() ([]byte, error) {
	if r.counts != nil {
		return json.Marshal(r.counts)
	}
	return json.Marshal(r.tenants)
}

// Schema documents both shapes; the freshness map's members are tenant
// names, each an object of a timestamp (or null) per data domain and stale.
func (freshnessReport) Schema(reg huma.Registry) *huma.Schema {
	counts := reg.Schema(reflect.TypeFor[freshnessCounts](), true, "FreshnessCounts")
	tenant := &huma.Schema{Type: huma.TypeObject,
		Description: "One tenant's freshness: each data domain's last sync (null when it never synced), whether the tenant is stale, and, for an admin, " +
			"why: problems names each domain that never synced, synced longer ago than its threshold, or whose latest sync failed after its last success, with the reason.",
		Properties: map[string]*huma.Schema{"stale": {Type: huma.TypeBoolean},
			"problems": {Type: huma.TypeObject, Description: "Admins only, when any: by data domain, why it is stale or that its last sync failed and why.",
				AdditionalProperties: &huma.Schema{Type: huma.TypeString}}},
		Required:             []string{"stale"},
		AdditionalProperties: &huma.Schema{Type: huma.TypeString, Format: "date-time", Nullable: true}}
	return &huma.Schema{OneOf: []*huma.Schema{
		{Title: "FreshnessMap", Description: "Signed in: keyed by the name of each tenant the caller may see.", Type: huma.TypeObject, AdditionalProperties: tenant},
		counts,
	}}
}

type statusBody struct {
	Status     string                    `json:"status"`
	Components map[string]componentState `json:"components"`
	Alerts     struct {
		ActiveCount int `json:"active_count"`
	} `json:"alerts"`
	Cache struct {
		HitRatePercent float64 `json:"hit_rate_percent"`
	} `json:"cache"`
	Performance map[string]any `json:"performance"`
}

func httpStatus(status string) int {
	if status == unhealthy {
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}

func (s *Server) registerHealth() {
	api.Get(s.API, "/health", sdk.Op{ID: "health", Summary: "Liveness", Tags: []string{"health"}, Auth: sdk.AuthNone},
		func(ctx context.Context, _ *struct{}) (*simpleHealth, error) {
			out := &simpleHealth{}
			out.Body.Status = healthy
			return out, nil
		})
	api.Get(s.API, "/health/detailed", sdk.Op{ID: "health-detailed", Summary: "Component health", Tags: []string{"health"}, Auth: sdk.AuthNone,
		Responses: s.unhealthyResponse(detailedBody{})},
		func(ctx context.Context, _ *struct{}) (*detailed, error) { return s.detailed(ctx), nil })
	api.Get(s.API, "/api/v1/health", sdk.Op{ID: "api-health", Summary: "API health; more detail when authenticated", Tags: []string{"health"}, Auth: sdk.AuthNone,
		Responses: s.unhealthyResponse(apiHealthBody{})},
		func(ctx context.Context, _ *struct{}) (*apiHealth, error) {
			r := s.check(ctx)
			out := &apiHealth{Status: httpStatus(r.status)}
			out.Body = apiHealthBody{Status: r.status, Database: r.components["database"].Status, Cache: s.deps.Cache.Stats().Backend,
				Scheduler: r.components["scheduler"].Status, Cloud: map[string]any{"configured": s.deps.Config.Cloud != ""}}
			if p := api.PrincipalFrom(ctx); p != nil {
				out.Body.Version, out.Body.Environment = s.deps.Version, s.deps.Config.Env
				out.Body.Cloud["provider"] = s.deps.Config.Cloud
				out.Body.Components = r.components
			}
			return out, nil
		})
	api.Get(s.API, "/api/v1/health/detailed", sdk.Op{ID: "api-health-detailed", Summary: "Per-component metrics; redacted without authentication", Tags: []string{"health"}, Auth: sdk.AuthNone,
		Responses: s.unhealthyResponse(detailedBody{})},
		func(ctx context.Context, _ *struct{}) (*detailed, error) { return s.detailed(ctx), nil })
	api.Get(s.API, "/api/v1/health/data", sdk.Op{ID: "api-health-data", Summary: "Data freshness by tenant",
		Description: "For a signed-in caller, the data freshness map of its tenants keyed by tenant name; for an anonymous caller, only the counts of fresh and stale tenants. A tenant is stale when any data domain's last sync is older than its threshold or missing; an admin is also told why, and of failed syncs, in each tenant's problems.",
		Tags:        []string{"health"}, Auth: sdk.AuthNone},
		func(ctx context.Context, _ *struct{}) (*dataHealth, error) {
			m, err := s.freshnessMap(ctx)
			if err != nil {
				return nil, err
			}
			if p := api.PrincipalFrom(ctx); p != nil {
				// Why a domain is stale may name subscriptions and
				// directories: the reasons are an admin's.
				if !p.IsAdmin {
					for k, f := range m {
						m[k] = f.Redacted()
					}
				}
				return &dataHealth{Body: freshnessReport{tenants: m}}, nil
			}
			counts := &freshnessCounts{}
			for _, f := range m {
				if f.Stale {
					counts.Stale++
				} else {
					counts.Fresh++
				}
			}
			return &dataHealth{Body: freshnessReport{counts: counts}}, nil
		})
	api.Get(s.API, "/api/v1/status", sdk.Op{ID: "api-status", Summary: "Service status summary", Tags: []string{"health"}, Auth: sdk.AuthNone},
		func(ctx context.Context, _ *struct{}) (*struct{ Body statusBody }, error) {
			r := s.check(ctx)
			out := &struct{ Body statusBody }{}
			out.Body.Status, out.Body.Components = r.status, r.components
			if s.deps.Jobs != nil {
				alerts, err := s.deps.Jobs.Alerts(ctx, 500)
				if err != nil {
					return nil, err
				}
				for _, a := range alerts.Alerts {
					if !a.Resolved {
						out.Body.Alerts.ActiveCount++
					}
				}
			}
			out.Body.Cache.HitRatePercent = s.deps.Cache.Stats().HitRatePercent
			out.Body.Performance = map[string]any{"goroutines": runtime.NumGoroutine()}
			if api.PrincipalFrom(ctx) != nil {
				out.Body.Performance["uptime_seconds"] = time.Since(s.deps.StartedAt).Seconds()
			}
			return out, nil
		})
}

// unhealthyResponse declares the 503 of a health report: the same report,
// saying unhealthy.
func (s *Server) unhealthyResponse(body any) map[string]*huma.Response {
	return map[string]*huma.Response{"503": {Description: "Unhealthy: the database does not answer",
		Content: map[string]*huma.MediaType{"application/json": {Schema: api.SchemaOf(s.API, body)}}}}
}

func (s *Server) detailed(ctx context.Context) *detailed {
	r := s.check(ctx)
	authed := api.PrincipalFrom(ctx) != nil
	st := s.deps.Cache.Stats()
	pool := s.deps.DB.Stats()
	body := detailedBody{
		Status: r.status,
		Components: map[string]any{
			"database":         r.components["database"].Status,
			"scheduler":        r.components["scheduler"].Status,
			"cache":            r.components["cache"].Status,
			"azure_configured": s.deps.Config.Cloud == "azure" || s.deps.Config.Cloud == "sim",
		},
		CacheMetrics:   map[string]any{"backend": st.Backend, "hit_rate_percent": st.HitRatePercent},
		DatabasePool:   map[string]any{"open_connections": pool.OpenConnections, "in_use": pool.InUse, "idle": pool.Idle},
		TokenBlacklist: map[string]any{"backend": s.revocations.Backend(), "enabled": true},
	}
	if st, ok := r.components["redis"]; ok {
		body.Components["redis"] = st.Status
	}
	if authed {
		body.Version, body.Environment = s.deps.Version, s.deps.Config.Env
		body.UptimeSeconds = time.Since(s.deps.StartedAt).Seconds()
		body.CacheMetrics["hits"], body.CacheMetrics["misses"] = st.Hits, st.Misses
		body.DatabasePool["max_open_connections"] = pool.MaxOpenConnections
		body.DatabasePool["wait_count"] = pool.WaitCount
		body.DatabasePool["wait_duration_seconds"] = pool.WaitDuration.Seconds()
		body.Plugins = r.plugins
		body.PluginHealth = map[string]pluginHealth{}
		for name, ph := range s.deps.Plugins.CheckHealth(ctx) {
			status := strings.ToLower(strings.TrimPrefix(ph.Status.String(), "HEALTH_STATUS_"))
			body.PluginHealth[name] = pluginHealth{Status: status, Message: ph.Message, Details: ph.Details}
		}
		var mem runtime.MemStats
		runtime.ReadMemStats(&mem)
		body.Runtime = map[string]any{"goroutines": runtime.NumGoroutine(), "heap_alloc_bytes": mem.HeapAlloc, "go_version": runtime.Version()}
		body.States = r.components
		if n, err := s.revocations.Active(ctx); err == nil {
			body.TokenBlacklist["active_revocations"] = n
		} else {
			body.TokenBlacklist["error"] = err.Error()
		}
	}
	return &detailed{Status: httpStatus(r.status), Body: body}
}

func (s *Server) freshnessMap(ctx context.Context) (map[string]freshness.TenantFreshness, error) {
	p := api.PrincipalFrom(ctx)
	var ids []string
	if p != nil {
		if len(p.TenantIDs) == 0 {
			return map[string]freshness.TenantFreshness{}, nil
		}
		ids = p.TenantIDs
	}
	tenants, err := s.deps.Tenancy.Tenants(ctx, ids, false)
	if err != nil {
		return nil, err
	}
	// An anonymous caller is only told counts, so its map is keyed by id,
	// which is unique where names need not be.
	keys := make([]freshness.Tenant, 0, len(tenants))
	for _, t := range tenants {
		key := t.ID
		if p != nil {
			key = t.Name
		}
		keys = append(keys, freshness.Tenant{ID: t.ID, Key: key})
	}
	thresholds := s.freshnessThresholds()
	return s.deps.Freshness.Map(ctx, keys, freshness.Domains(thresholds), thresholds, time.Now())
}

// freshnessThresholds are the data domains the installed plugins' jobs keep
// current, with their thresholds (freshness.Thresholds); none without a
// scheduler.
func (s *Server) freshnessThresholds() map[string]time.Duration {
	if s.deps.Jobs == nil {
		return map[string]time.Duration{}
	}
	return freshness.Thresholds(s.deps.Jobs.DataDomains())
}
