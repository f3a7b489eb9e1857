package pages

import (
	"errors"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/host/freshness"
	"github.com/stewardhq/steward/host/jobs"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/sdk/protocol"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// Fragment limits of the sync history table.
const (
	HistoryDefault = 15
	HistoryMax     = 100
)

// MountFragments adds the host's own fragments.
func (p *Pages) MountFragments(app *fiber.App) {
	app.Get("/partials/sync-status-card", p.signedIn(p.syncStatusCard))
	app.Get("/partials/sync-history-table", p.signedIn(p.syncHistoryTable))
	app.Get("/partials/tenant-sync-status", p.signedIn(p.tenantSyncStatus))
	app.Get("/partials/active-alerts", p.signedIn(p.activeAlerts))
	app.Post("/partials/active-alerts/:alert_id/resolve", p.signedIn(p.resolveAlert))
	app.Post("/partials/sync-now/:job_type", p.signedIn(p.syncNow))
}

func (p *Pages) syncStatusCard(c *fiber.Ctx, caller Caller) error {
	st, err := p.d.Jobs.Status(c.UserContext())
	if err != nil {
		return err
	}
	if !caller.Admin {
		st = st.Redacted()
	}
	return writeFragment(c, http.StatusOK, SyncStatusCard(st, time.Now()))
}

func (p *Pages) syncHistoryTable(c *fiber.Ctx, caller Caller) error {
	limit := HistoryDefault
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > HistoryMax {
			return p.invalid(c, "query.limit", "must be an integer from 1 to "+strconv.Itoa(HistoryMax))
		}
		limit = n
	}
	h, err := p.d.Jobs.History(c.UserContext(), limit)
	if err != nil {
		return err
	}
	if !caller.Admin {
		return writeFragment(c, http.StatusOK, SyncHistoryTable(h.Redacted(), nil))
	}
	names, err := p.d.Tenancy.UserNames(c.UserContext(), triggeredBy(h))
	if err != nil {
		return err
	}
	return writeFragment(c, http.StatusOK, SyncHistoryTable(h, names))
}

// triggeredBy are the actors who asked for the runs, each once.
func triggeredBy(h jobs.HistoryResponse) []string {
	var ids []string
	for _, r := range h.Logs {
		if r.TriggeredBy != nil && *r.TriggeredBy != "" && !slices.Contains(ids, *r.TriggeredBy) {
			ids = append(ids, *r.TriggeredBy)
		}
	}
	return ids
}

// tenantSyncStatus reports how fresh each domain of the caller's tenants
// is, or of the one tenant_id names (403 for a tenant the caller may not
// see, without its name), or of those of the brand brand_id names (404
// for a brand it cannot see).
// MaxTenantRows bounds the tenant sync status's limit.
const MaxTenantRows = 1000

func (p *Pages) tenantSyncStatus(c *fiber.Ctx, caller Caller) error {
	var ids []string
	// all is set while ids, empty, stands for every tenant.
	all := caller.Admin
	if !caller.Admin {
		ids = caller.TenantIDs
	}
	if id := c.Query("tenant_id"); id != "" {
		if !caller.CanSee(id) {
			return p.d.Problem(c, http.StatusForbidden, protocol.MsgNoTenantAccess)
		}
		ids = []string{id}
	} else if id := c.Query("brand_id"); id != "" {
		scoped, err := p.d.Tenancy.BrandScope(c.UserContext(), id, caller.TenantIDs, caller.Admin)
		if errors.Is(err, tenancy.ErrNotFound) {
			return p.d.Problem(c, http.StatusNotFound, MsgNoBrand)
		}
		if err != nil {
			return err
		}
		ids, all = scoped, false
	}
	limit := 0
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxTenantRows {
			return p.invalid(c, "query.limit", "must be a whole number of tenants from 1 to "+strconv.Itoa(MaxTenantRows))
		}
		limit = n
	}
	thresholds := map[string]time.Duration{}
	if p.d.FreshnessThresholds != nil {
		thresholds = p.d.FreshnessThresholds()
	}
	var rows []TenantSync
	if all || len(ids) > 0 {
		tenants, err := p.d.Tenancy.Tenants(c.UserContext(), ids, false)
		if err != nil {
			return err
		}
		keys := make([]freshness.Tenant, len(tenants))
		for i, t := range tenants {
			keys[i] = freshness.Tenant{ID: t.ID, Key: t.ID}
		}
		now := time.Now()
		m, err := p.d.Freshness.Map(c.UserContext(), keys, freshness.Domains(thresholds), thresholds, now)
		if err != nil {
			return err
		}
		for _, t := range tenants {
			f := m[t.ID]
			if !caller.Admin {
				f = f.Redacted()
			}
			rows = append(rows, TenantSync{ID: t.ID, Name: t.Name, Freshness: f})
		}
	}
	return writeFragment(c, http.StatusOK, TenantSyncStatus(rows, thresholds, time.Now(), limit))
}

func (p *Pages) activeAlerts(c *fiber.Ctx, caller Caller) error {
	a, err := p.d.Jobs.Alerts(c.UserContext(), 200)
	if err != nil {
		return err
	}
	if !caller.Admin {
		a = a.Redacted()
	}
	return writeFragment(c, http.StatusOK, ActiveAlerts(a, caller.Admin))
}

// resolveAlert is the form behind an alert's "Resolve" button: it resolves
// the alert as the signed-in admin and answers the refreshed list.
func (p *Pages) resolveAlert(c *fiber.Ctx, caller Caller) error {
	if !caller.Admin {
		return p.d.Problem(c, http.StatusForbidden, "admin role required")
	}
	id, err := strconv.ParseInt(c.Params("alert_id"), 10, 64)
	if err != nil || id < 1 {
		return p.invalid(c, "path.alert_id", "must be a positive integer")
	}
	notes := c.FormValue("resolution_notes")
	if len(notes) > 4000 {
		return p.invalid(c, "body.resolution_notes", "must be at most 4000 characters")
	}
	by := caller.Email
	if by == "" {
		by = caller.Name
	}
	_, err = p.d.Jobs.ResolveAlert(c.UserContext(), id, by, notes)
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		return p.d.Problem(c, http.StatusNotFound, "no sync alert with that id")
	case errors.Is(err, jobs.ErrAlreadyResolved):
	case err != nil:
		return err
	default:
		p.d.Audit(c, "sync.alert_resolve.success", "sync_alert", strconv.FormatInt(id, 10))
	}
	return p.activeAlerts(c, caller)
}

// syncNow is the sync dashboard's "Sync now" button: it queues the job
// type's runs as the API's sync trigger does, and answers a status line.
func (p *Pages) syncNow(c *fiber.Ctx, caller Caller) error {
	if !caller.Admin {
		return p.d.Problem(c, http.StatusForbidden, "admin role required")
	}
	jobType := c.Params("job_type")
	runs, err := p.d.Jobs.Trigger(c.UserContext(), jobType, caller.ID)
	if errors.Is(err, jobs.ErrUnknownJobType) {
		return p.d.Problem(c, http.StatusNotFound, "no enabled plugin provides the "+jobType+" sync")
	}
	if err != nil {
		return err
	}
	p.d.Audit(c, "sync.trigger.success", "sync_job", runs[0].ID)
	return writeFragment(c, http.StatusAccepted, sdkui.Join(sdkui.Badge("queued", sdkui.OK), template.HTML(" "), template.HTML(template.HTMLEscapeString(jobType+" sync queued: run "+runs[0].ID))))
}

// invalid answers a 422 naming the field, as the API does; for a fragment
// the body is the error state a slot shows.
func (p *Pages) invalid(c *fiber.Ctx, location, msg string) error {
	if c.Get("HX-Request") != "" {
		return writeFragment(c, http.StatusUnprocessableEntity, sdkui.ErrorState(location+" "+msg))
	}
	return p.d.Invalid(c, location, msg)
}
