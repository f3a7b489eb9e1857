package server

import (
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/pages"
	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// dispatch hands a request to the plugin that declared its route, after
// the host has enforced the route's auth requirement, parameter
// declarations, brand (narrowToBrand), tenant input and, for sync routes, the concurrency limit.
func (s *Server) dispatch(c *fiber.Ctx) error {
	r, rawParams := s.matchPlugin(c)
	if r == nil {
		return c.Next()
	}
	c.Locals(localRoute, r.Pattern)
	principal := toProto(PrincipalOf(c))
	if status, detail := r.Admit(principal); status != 0 {
		if status == http.StatusUnauthorized {
			c.Set("WWW-Authenticate", "Bearer")
			if msg, ok := c.Locals(localAuthError).(string); ok {
				detail = msg
			}
			if r.View != "" {
				return pages.Unauthenticated(c, func() error { return writeProblem(c, status, detail, nil) })
			}
		}
		return writeProblem(c, status, detail, nil)
	}
	// The picker names a brand as tenant_id=brand:<id>, which a page is
	// asked for with brand_id instead, before the tenant is checked.
	if r.View == protocol.ViewPage {
		if loc := pages.PickedBrand(c); loc != "" {
			return c.Redirect(loc, http.StatusSeeOther)
		}
	}
	query := func(name string) []string {
		var out []string
		for _, v := range c.Context().QueryArgs().PeekMulti(name) {
			out = append(out, string(v))
		}
		return out
	}
	params, errs := inputErrors(c, rawParams)
	if len(errs) == 0 {
		errs = r.Validate(query, params)
	}
	if len(errs) > 0 {
		return writeProblem(c, http.StatusUnprocessableEntity, protocol.MsgValidationFailed, errs)
	}
	if refused, err := s.narrowToBrand(c, &r.Route, principal); err != nil || refused != nil {
		if err != nil {
			return err
		}
		if refused.Status == http.StatusNotFound && r.View == protocol.ViewPage && pages.WantsPage(c) {
			return s.pages.RefuseBrand(c)
		}
		return writeProblem(c, refused.Status, refused.Detail, refused.Errors)
	}
	var body []byte
	if r.NeedsBody() {
		body = c.Body()
	}
	if status := r.CheckTenant(principal, query, params, body); status != 0 {
		if r.View == protocol.ViewPage && pages.WantsPage(c) {
			return s.pages.RefuseTenant(c, status)
		}
		return writeProblem(c, status, protocol.MsgNoTenantAccess, nil)
	}
	if r.TriggerJob != "" {
		return s.triggerJob(c, r.TriggerJob)
	}
	// A page laid out from a slot's fragments is the host's to render; a
	// browser's navigation to a page the plugin renders gets the host's
	// layout, which loads the page's HTML from this path with htmx.
	if r.View == protocol.ViewPage && (r.Slot != "" || pages.WantsPage(c)) {
		caller, _ := callerOf(c)
		if r.Slot != "" {
			return s.pages.SlotPage(c, caller, r.Title, r.Description, r.Slot)
		}
		return s.pages.PluginPage(c, caller, r.Title)
	}
	if r.RateClass == pluginv1.RateClass_RATE_CLASS_SYNC {
		if !s.syncSlots.TryAcquire(1) {
			c.Set(fiber.HeaderRetryAfter, "1")
			return writeProblem(c, http.StatusTooManyRequests, "too many sync requests in progress; retry shortly", nil)
		}
		defer s.syncSlots.Release(1)
	}
	return s.deps.Plugins.Proxy(c, r, params, principal, requestID(c))
}

// triggerJob answers a plugin's trigger path as POST /api/v1/sync/{job_type}
// answers jobType, within the same bound on sync requests in flight.
func (s *Server) triggerJob(c *fiber.Ctx, jobType string) error {
	if !s.syncSlots.TryAcquire(1) {
		c.Set(fiber.HeaderRetryAfter, "1")
		return writeProblem(c, http.StatusTooManyRequests, "too many sync requests in progress; retry shortly", nil)
	}
	defer s.syncSlots.Release(1)
	ctx := api.WithCaller(c.UserContext(), PrincipalOf(c), api.Meta{ClientAddr: c.IP(), RequestID: requestID(c)})
	out, err := s.sync.Trigger(ctx, jobType)
	var se huma.StatusError
	if errors.As(err, &se) {
		return writeProblem(c, se.GetStatus(), se.Error(), nil)
	}
	if err != nil {
		return err
	}
	return c.Status(http.StatusAccepted).JSON(out)
}
