package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/plugins"
	"github.com/stewardhq/steward/sdk"
)

// Readiness check results.
const (
	checkOK       = "ok"
	checkFailing  = "failing"
	checkDegraded = "degraded"
)

// migrationsCheckEvery bounds how often readiness reads the migrations
// table: load balancers probe every few seconds, and what it guards
// against (a replica started on a database another version rolled back)
// does not come and go between probes.
const migrationsCheckEvery = 30 * time.Second

type migrationCheck struct {
	mu        sync.Mutex
	checkedAt time.Time
	pending   int
	err       error
}

type readyBody struct {
	Status string            `json:"status" enum:"ready,not_ready,draining" doc:"ready: send this replica traffic; not_ready: a check below fails; draining: the replica is stopping"`
	Checks map[string]string `json:"checks" doc:"Each check's result: database (answers), migrations (all of this version's applied), plugins (every enabled plugin has started), redis (reachable; degraded only: the service answers without it). Each is ok, failing or degraded."`
}

type ready struct {
	Status int
	Body   readyBody
}

// Drain marks the server as stopping: readiness answers 503 from now on, so
// load balancers stop sending it requests, and every response closes its
// connection, so a keep-alive client's next request opens one to another
// replica. The requests themselves are still served until the listener
// shuts down.
func (s *Server) Drain() { s.draining.Store(true) }

// closeWhileDraining closes the connection of every response given while
// draining. It looks once the handler has run, so an answer that saw the
// drain begin (readiness's "draining") closes its connection even when the
// request arrived just before.
func (s *Server) closeWhileDraining(c *fiber.Ctx) error {
	err := c.Next()
	if s.draining.Load() {
		c.Context().SetConnectionClose()
	}
	return err
}

func (s *Server) registerReady() {
	api.Get(s.API, "/api/v1/health/ready", sdk.Op{ID: "api-health-ready", Summary: "Readiness",
		Description: "Whether this replica should receive traffic: its database answers, this version's migrations are applied and every enabled plugin has started. " +
			"Answers 503 while any of those fails and from the moment the replica starts stopping (SIGTERM). Redis being unreachable is reported but does not fail readiness: " +
			"the service answers without it (see the health report), and failing every replica at once would turn a degraded service into an outage. " +
			"/api/v1/health stays the liveness check.",
		Tags: []string{"health"}, Auth: sdk.AuthNone,
		Responses: map[string]*huma.Response{"503": {Description: "Not ready, or draining",
			Content: map[string]*huma.MediaType{"application/json": {Schema: api.SchemaOf(s.API, readyBody{})}}}}},
		func(ctx context.Context, _ *struct{}) (*ready, error) { return s.readiness(ctx), nil })
}

func (s *Server) readiness(ctx context.Context) *ready {
	checks := map[string]string{"database": checkOK, "migrations": checkOK, "plugins": checkOK}
	pingCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.deps.DB.PingContext(pingCtx); err != nil {
		checks["database"] = checkFailing
	}
	if pending, err := s.pendingMigrations(ctx); err != nil || pending > 0 {
		checks["migrations"] = checkFailing
	}
	if s.deps.Plugins != nil {
		for _, p := range s.deps.Plugins.Statuses() {
			if p.State == plugins.StateStarting {
				checks["plugins"] = checkFailing
			}
		}
	}
	if s.deps.Redis != nil {
		checks["redis"] = checkOK
		if !s.deps.Redis.Status().Up {
			checks["redis"] = checkDegraded
		}
	}
	out := &ready{Status: http.StatusOK, Body: readyBody{Status: "ready", Checks: checks}}
	for _, v := range checks {
		if v == checkFailing {
			out.Status, out.Body.Status = http.StatusServiceUnavailable, "not_ready"
		}
	}
	if s.draining.Load() {
		out.Status, out.Body.Status = http.StatusServiceUnavailable, "draining"
	}
	return out
}

// pendingMigrations asks Deps.PendingMigrations at most once per
// migrationsCheckEvery; a failed look is asked again on the next probe.
func (s *Server) pendingMigrations(ctx context.Context) (int, error) {
	if s.deps.PendingMigrations == nil {
		return 0, nil
	}
	m := &s.migrations
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err == nil && !m.checkedAt.IsZero() && time.Since(m.checkedAt) < migrationsCheckEvery {
		return m.pending, nil
	}
	m.pending, m.err = s.deps.PendingMigrations(ctx)
	m.checkedAt = time.Now()
	return m.pending, m.err
}
