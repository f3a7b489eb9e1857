// Package app wires the host together: configuration, store, cache, rate
// limiter, token issuer, plugin supervisor, scheduler and HTTP server. The
// steward command and the end-to-end tests both start the host through it.
package app

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing/fstest"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stewardhq/steward/core/cache"
	"github.com/stewardhq/steward/core/cloudsim/stack"
	"github.com/stewardhq/steward/core/config"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/host/apikeys"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/auth"
	"github.com/stewardhq/steward/host/authcache"
	"github.com/stewardhq/steward/host/freshness"
	"github.com/stewardhq/steward/host/jobs"
	"github.com/stewardhq/steward/host/notifications"
	"github.com/stewardhq/steward/host/plugins"
	"github.com/stewardhq/steward/host/pluginstore"
	"github.com/stewardhq/steward/host/ratelimit"
	"github.com/stewardhq/steward/host/redisconn"
	"github.com/stewardhq/steward/host/server"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/migrations"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// Version is the host's version, set at build time.
var Version = "dev"

// Host is a running Steward host.
type Host struct {
	Config    config.Config
	Logger    hclog.Logger
	DB        *bun.DB
	Server    *server.Server
	Plugins   *plugins.Supervisor
	Jobs      *jobs.Scheduler
	Registry  *prometheus.Registry
	limiter   *ratelimit.Limiter
	redis     *redisconn.Conn
	changes   *authcache.Changes
	sim       *stack.Stack
	audit     *audit.Store
	cache     cache.Cache
	cancel    context.CancelFunc
	schedOn   atomic.Bool
	ReadyTook time.Duration

	// Notifications keeps channels, subscriptions, events and the outbox
	// that notify, this replica's delivery worker, works through.
	Notifications *notifications.Store
	notify        *notifications.Worker
}

// OpenDB opens the configured database and applies the host's migrations.
func OpenDB(ctx context.Context, cfg config.Config) (*bun.DB, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	db, err := store.Open(ctx, cfg.DatabaseURL, store.Options{})
	if err != nil {
		return nil, err
	}
	if _, err := store.Migrate(ctx, db, migrations.FS, migrations.Table); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return db, nil
}

// Options tune Start.
type Options struct {
	Logger hclog.Logger
	// Mount adds routes to the app before the plugin dispatcher; benchmarks
	// use it to serve a plugin's handler in the host for comparison.
	Mount func(*fiber.App)
}

// Start builds the host and starts its plugins and scheduler. It does not
// listen: the caller serves h.Server.App.
func Start(ctx context.Context, cfg config.Config, o Options) (*Host, error) {
	logger := o.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	t0 := time.Now()
	h := &Host{Config: cfg, Logger: logger, Registry: prometheus.NewRegistry()}
	h.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ctx, h.cancel = context.WithCancel(ctx)
	ok := false
	defer func() {
		if !ok {
			h.Close()
		}
	}()
	var err error
	if h.DB, err = OpenDB(ctx, cfg); err != nil {
		return nil, err
	}
	h.Registry.MustRegister(collectors.NewDBStatsCollector(h.DB.DB, "steward"))
	// One client for every part that keeps state in Redis, each under a
	// prefix of its own; redisconn documents what each does when Redis is
	// unreachable.
	var rc redis.UniversalClient
	if cfg.RedisURL != "" {
		if h.redis, err = redisconn.Open(ctx, cfg.RedisURL, logger.Named("redis")); err != nil {
			return nil, err
		}
		h.Registry.MustRegister(h.redis)
		rc = h.redis.Client()
	}
	c, err := cache.New(rc, cfg.RedisPrefix+":cache")
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	h.cache = c
	h.Registry.MustRegister(cacheCollector{c})
	if h.limiter, err = ratelimit.New(ratelimit.Config{Redis: rc, Prefix: cfg.RedisPrefix + ":ratelimit", DefaultPerMinute: cfg.RateLimitPerMinute, AuthPerMinute: cfg.AuthRateLimitPerMinute,
		CostlyPerMinute: cfg.CostlyRateLimitPerMinute, UIPerMinute: cfg.UIRateLimitPerMinute}); err != nil {
		return nil, fmt.Errorf("rate limiter: %w", err)
	}
	secret, _, err := auth.SelectSecret(cfg.Env, cfg.JWTSecret, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	keys, err := SigningKeys(secret, cfg.JWTPreviousSecrets)
	if err != nil {
		return nil, err
	}
	issuer, err := auth.NewIssuer(keys, cfg.AccessTokenTTL, cfg.RefreshTokenTTL, "steward")
	if err != nil {
		return nil, err
	}
	if h.Notifications, err = notifications.New(h.DB, secret); err != nil {
		return nil, err
	}
	h.changes = authcache.New(rc, cfg.RedisPrefix, logger.Named("authcache"))
	ten := tenancy.New(h.DB)
	ten.OnChange(h.changes.Changed)
	ten.CacheActive(authcache.NewCache[struct{}, []tenancy.Tenant](h.changes, 1))
	apiKeys := apikeys.New(h.DB, ten)
	apiKeys.OnChange(h.changes.Changed)
	aud := audit.NewStore(h.DB)
	h.audit = aud
	fresh := freshness.NewStore(h.DB)
	h.Notifications.AllowHTTP(cfg.Env == config.Development)
	// A subscription may name the host's event types and those of the
	// plugins running when it is made.
	h.Notifications.SetEventTypes(func() []notifications.EventType {
		if h.Plugins == nil {
			return notifications.HostEventTypes
		}
		return h.Plugins.EventTypes()
	})

	cloudCfg, cloudClients, err := h.cloudConfig(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	cloudJSON, err := json.Marshal(cloudCfg)
	if err != nil {
		return nil, err
	}
	if h.sim != nil && cfg.Env == config.Development && cfg.SimBootstrap {
		n, err := registerWorldTenants(ctx, ten, h.sim.Sim.World())
		if err != nil {
			return nil, err
		}
		logger.Info("world tenants registered", "new", n, "total", len(h.sim.Sim.World().Tenants))
	}

	rp, err := h.relyingParty(cfg)
	if err != nil {
		return nil, err
	}
	cfg.OIDC.AdminTenants = adminTenants(cfg, cloudCfg)
	switch {
	case rp != nil && len(cfg.OIDC.AdminTenants) == 0:
		logger.Warn("no managing directory: the identity provider makes no admin (set STEWARD_OIDC_ADMIN_TENANTS or STEWARD_AZURE_TENANT_ID)")
	case rp != nil:
		logger.Info("identity provider sign-in", "issuer", rp.Issuer(), "admin_directories", cfg.OIDC.AdminTenants, "registered_only", cfg.OIDC.RegisteredOnly)
	}

	var srv *server.Server
	decls, err := loadDecls(cfg)
	if err != nil {
		return nil, err
	}
	stores, err := pluginstore.New(ctx, pluginstore.Options{DB: h.DB, URL: cfg.DatabaseURL, DataDir: cfg.DataDir, Secret: secret, Logger: logger.Named("plugins")})
	if err != nil {
		return nil, err
	}
	h.Plugins, err = plugins.New(decls, plugins.Options{
		Logger: logger.Named("plugins"), Environment: cfg.Env, DataDir: cfg.DataDir,
		Cloud:    cloudJSON,
		Backend:  &backend{tenants: ten, audit: aud, fresh: fresh, notify: h.Notifications, log: logger.Named("notifications")},
		Reserved: func(method, path string) bool { return srv != nil && srv.Reserved(method, path) },
		Storage:  stores.Prepare,
		Migrate: func(ctx context.Context, plugin, databaseURL string, files []*pluginv1.Migration) error {
			fsys := fstest.MapFS{}
			for _, f := range files {
				fsys[f.Name] = &fstest.MapFile{Data: f.Content}
			}
			return stores.Migrate(ctx, plugin, databaseURL, fsys)
		},
		OnChange: func(string) {
			if srv != nil {
				srv.AddPluginOperations()
				h.refreshJobs()
			}
		},
		Registerer: h.Registry,
	})
	if err != nil {
		return nil, err
	}
	h.Jobs = jobs.New(h.DB, supervisorRunner{h.Plugins}, jobs.Options{Logger: logger, Registerer: h.Registry})
	// Every replica works the tenants of every spread run (a job that
	// works tenant by tenant) from the queue in the database.
	err = h.Jobs.Spread(ctx, jobs.SpreadOptions{PieceTimeout: cfg.SyncTenantTimeout, Tenants: func(ctx context.Context) ([]string, error) {
		active, err := ten.Tenants(ctx, nil, false)
		ids := make([]string, len(active))
		for i, t := range active {
			ids[i] = t.ID
		}
		return ids, err
	}})
	if err != nil {
		return nil, err
	}
	srv = server.New(server.Deps{
		Config: cfg, Version: Version, Logger: logger.Named("http"), DB: h.DB, SessionSecret: string(secret), Cache: c, Limiter: h.limiter, Issuer: issuer, Changes: h.changes, OIDC: rp,
		Revocations: auth.NewRevocations(h.DB, rc, cfg.RedisPrefix+":revoked"), Redis: h.redis,
		Tenancy: ten, APIKeys: apiKeys, Audit: aud, Freshness: fresh, Notifications: h.Notifications, Jobs: h.Jobs, Plugins: h.Plugins, Registry: h.Registry,
		StartedAt: t0, SchedulerUp: h.schedOn.Load, Mount: o.Mount, Cloud: cloudClients, ManagingTenantID: cloudCfg.TenantID,
		PendingMigrations:  h.pendingMigrations,
		ConsentRedirectURI: publicOrigin(cfg) + "/onboarding/consent/callback",
	})
	h.Server = srv
	if err := h.Plugins.Start(ctx); err != nil {
		return nil, fmt.Errorf("plugins: %w", err)
	}
	srv.AddPluginOperations()
	h.refreshJobs()
	h.Jobs.Start(ctx)
	h.schedOn.Store(true)
	if err := h.startNotify(ctx, cfg, logger); err != nil {
		return nil, err
	}
	if h.sim != nil && cfg.Env == config.Development && cfg.SimBootstrap {
		h.firstSync(ctx)
	}
	if cfg.AuditRetention > 0 {
		go pruneAudit(ctx, aud, cfg.AuditRetention, logger.Named("audit"))
	}
	h.Registry.MustRegister(pluginCollector{h.Plugins})
	h.ReadyTook = time.Since(t0)
	ok = true
	return h, nil
}

func loadDecls(cfg config.Config) ([]plugins.Decl, error) {
	if _, err := os.Stat(cfg.PluginsFile); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	abs, err := filepath.Abs(cfg.PluginsFile)
	if err != nil {
		return nil, err
	}
	return plugins.LoadFile(cfg.PluginsFile, filepath.Dir(abs))
}

// ReloadPluginsFile re-reads plugins.hcl and applies it (see
// plugins.Supervisor.Apply); SIGHUP calls it. A file that does not parse
// changes nothing. Each change is logged and audited as the system's.
func (h *Host) ReloadPluginsFile(ctx context.Context) ([]plugins.Change, error) {
	decls, err := loadDecls(h.Config)
	if err != nil {
		h.Logger.Error("plugins.hcl not applied; the plugins go on as they were", "file", h.Config.PluginsFile, "error", err)
		return nil, err
	}
	changes := h.Plugins.Apply(ctx, decls)
	for _, c := range changes {
		entry := audit.Entry{Action: "plugin.apply.success", Status: audit.StatusSuccess, ActorID: "system", ResourceType: "plugin", ResourceID: c.Plugin,
			Details: map[string]any{"change": string(c.Action), "source": h.Config.PluginsFile}}
		if c.Err != nil {
			entry.Action, entry.Status, entry.Details["error"] = "plugin.apply.failure", audit.StatusFailure, c.Err.Error()
			h.Logger.Error("plugins.hcl change failed", "plugin", c.Plugin, "change", c.Action, "error", c.Err)
		} else {
			h.Logger.Info("plugins.hcl change applied", "plugin", c.Plugin, "change", c.Action)
		}
		if err := h.audit.Append(ctx, entry); err != nil {
			h.Logger.Error("audit append failed", "error", err)
		}
	}
	h.Logger.Info("plugins.hcl applied", "file", h.Config.PluginsFile, "changes", len(changes))
	return changes, nil
}

// refreshJobs registers every running plugin's jobs with the scheduler,
// with plugins.hcl's schedule overrides.
func (h *Host) refreshJobs() {
	var specs []jobs.Spec
	for _, name := range h.Plugins.Names() {
		inst, _ := h.Plugins.Instance(name)
		desc := inst.Description()
		if desc == nil {
			continue
		}
		var published []string
		for _, d := range desc.Datasets {
			published = append(published, d.Name)
		}
		for _, j := range desc.Jobs {
			sched := j.DefaultSchedule
			if o, ok := inst.Decl().Schedules[j.Name]; ok {
				sched = o
			}
			stale := time.Duration(j.StaleAfterSeconds) * time.Second
			if o, ok := inst.Decl().StaleAfter[j.Name]; ok {
				stale = o
			}
			spec := jobs.Spec{Plugin: name, Name: j.Name, JobType: j.JobType, DataDomain: j.DataDomain, Schedule: sched, StaleAfter: stale, Reads: j.Reads, PerTenant: j.PerTenant}
			// A job that keeps its plugin's data domain keeps what its
			// plugin publishes.
			if j.DataDomain != "" {
				spec.Produces = published
			}
			specs = append(specs, spec)
		}
	}
	if err := h.Jobs.SetSpecs(specs); err != nil {
		h.Logger.Error("job schedules", "error", err)
	}
}

// Close stops the scheduler and plugins and closes the store.
func (h *Host) Close() {
	if h.cancel != nil {
		h.cancel()
	}
	if h.Jobs != nil {
		h.schedOn.Store(false)
		h.Jobs.Stop()
	}
	if h.notify != nil {
		h.notify.Stop()
	}
	if h.Plugins != nil {
		h.Plugins.Stop()
	}
	if h.changes != nil {
		h.changes.Close()
	}
	// Last of Redis's users: the cache, limiter and revocation list hold
	// no connection of their own.
	if h.redis != nil {
		_ = h.redis.Close()
	}
	if h.DB != nil {
		_ = h.DB.Close()
	}
	if h.sim != nil {
		h.sim.Sim.Close()
	}
}

// startNotify starts this replica's notification delivery worker, which
// works through the outbox shared by every replica.
func (h *Host) startNotify(ctx context.Context, cfg config.Config, logger hclog.Logger) error {
	var roots *x509.CertPool
	if cfg.Notify.CAFile != "" {
		pem, err := os.ReadFile(cfg.Notify.CAFile)
		if err != nil {
			return fmt.Errorf("STEWARD_NOTIFY_CA_FILE: %w", err)
		}
		if roots, err = x509.SystemCertPool(); err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return fmt.Errorf("STEWARD_NOTIFY_CA_FILE: no PEM certificate in %s", cfg.Notify.CAFile)
		}
	}
	h.notify = notifications.NewWorker(h.Notifications, notifications.DeliveryOptions{
		PollInterval: cfg.Notify.PollInterval, RetryMin: cfg.Notify.RetryMin, RetryMax: cfg.Notify.RetryMax,
		MaxAttempts: cfg.Notify.MaxAttempts, Timeout: cfg.Notify.Timeout, AllowPrivateNetworks: cfg.Notify.AllowPrivateNetworks,
		RootCAs: roots, PublicOrigin: publicOrigin(cfg), Logger: logger.Named("notify"), Registerer: h.Registry,
	})
	h.notify.Start(ctx)
	return nil
}

// pendingMigrations counts this binary's host migrations the database has
// not applied.
func (h *Host) pendingMigrations(ctx context.Context) (int, error) {
	st, err := store.Status(ctx, h.DB, migrations.FS, migrations.Table)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range st {
		if !m.Applied {
			n++
		}
	}
	return n, nil
}

// firstSync queues one run of every job that keeps a data domain current,
// so a development host shows data right after start-up; the jobs that
// read others' datasets follow their producers (jobs.Scheduler.FirstSync).
func (h *Host) firstSync(ctx context.Context) {
	if _, err := h.Jobs.FirstSync(ctx, "system"); err != nil {
		h.Logger.Warn("first sync not queued", "error", err)
	}
}

// pruneAudit deletes entries older than the retention once an hour, and
// records each pruning in the log it prunes.
func pruneAudit(ctx context.Context, aud *audit.Store, retention time.Duration, logger hclog.Logger) {
	tick := time.NewTicker(time.Hour)
	defer tick.Stop()
	for {
		cutoff := time.Now().Add(-retention)
		n, err := aud.Prune(ctx, cutoff)
		entry := audit.Entry{Action: "audit.prune.success", Status: audit.StatusSuccess, ActorID: "system", ResourceType: "audit_log",
			Details: map[string]any{"deleted": n, "older_than": cutoff.UTC().Format(time.RFC3339)}}
		if err != nil {
			logger.Error("audit pruning failed", "error", err)
			entry.Action, entry.Status, entry.Details["error"] = "audit.prune.failure", audit.StatusFailure, err.Error()
		}
		if n > 0 || err != nil {
			if err := aud.Append(ctx, entry); err != nil {
				logger.Error("audit append failed", "error", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// SigningKeys names each key by a digest of it, so every replica agrees on
// the kid without configuration and a rotated secret gets a new kid while
// tokens signed with the previous ones keep verifying.
func SigningKeys(current []byte, previous []string) (auth.KeySet, error) {
	kid := func(secret []byte) string {
		sum := sha256.Sum256(secret)
		return hex.EncodeToString(sum[:6])
	}
	ks := auth.KeySet{Current: kid(current), Keys: map[string][]byte{kid(current): current}}
	for _, p := range previous {
		secret, err := auth.SecretFromEnv(p)
		if err != nil {
			return ks, fmt.Errorf("STEWARD_JWT_PREVIOUS_SECRETS: %w", err)
		}
		ks.Keys[kid(secret)] = secret
	}
	return ks, nil
}

// supervisorRunner adapts the supervisor to the scheduler's Runner.
type supervisorRunner struct{ sup *plugins.Supervisor }

// A run whose plugin process a reload replaced, or that crashed, is
// queued again.
func (r supervisorRunner) RunJob(ctx context.Context, plugin, job, runID string, tenantIDs []string, ev jobs.Events) (int64, error) {
	n, err := r.sup.RunJob(ctx, plugin, job, runID, tenantIDs, protocol.JobEvents{
		Progress: func(p *pluginv1.JobProgress) {
			ev.Progress(jobs.Progress{Done: p.Done, Total: p.Total, Message: p.Message})
		},
		Alert: func(a *pluginv1.JobAlert) {
			ev.Alert(jobs.RunAlert{Severity: a.Severity, Title: a.Title, Message: a.Message})
		},
	})
	if errors.Is(err, plugins.ErrProcessReplaced) || (pluginCrashed(err) && ctx.Err() == nil) {
		err = fmt.Errorf("%w: %w", jobs.ErrRequeue, err)
	}
	return n, err
}

// pluginCrashed reports whether a run ended because its plugin's process
// went away (a crash, a kill) or was not there to start it: the run did
// not fail, and the supervisor restarts the process. A call under way
// when the process dies ends Unavailable, or Canceled when the supervisor
// closed the dead process's connection first; the caller tells the latter
// from its own cancellation by its context.
func pluginCrashed(err error) bool {
	var down *plugins.UnavailableError
	if errors.As(err, &down) {
		return down.Down == ""
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled:
		return true
	}
	return false
}
