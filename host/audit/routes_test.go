package audit_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stewardhq/steward/host/app/apptest"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/sdk/protocol"
)

type page struct {
	Items  []audit.Entry `json:"items"`
	Total  int           `json:"total"`
	Limit  int           `json:"limit"`
	Offset int           `json:"offset"`
}

type summary struct {
	TenantID   *string        `json:"tenant_id"`
	Total      int            `json:"total"`
	ByCategory map[string]int `json:"by_category"`
}

func TestAuditRoutes(t *testing.T) {
	h := apptest.Start(t, apptest.Options{})
	admin := h.Login()
	own := h.Tenant("Own", "dir-own")
	other := h.Tenant("Other", "dir-other")
	u, user := h.User("user@own.example", own)
	ctx := context.Background()
	store := audit.NewStore(h.DB)
	for _, e := range []audit.Entry{
		{ActorID: u.ID, Action: "tenant.view.success", Status: audit.StatusSuccess, TenantID: &own.ID, ResourceType: "tenant"},
		{ActorID: u.ID, Action: "auth.logout.success", Status: audit.StatusSuccess, ResourceType: "session"},
		{ActorID: "someone-else", Action: "tenant.update.success", Status: audit.StatusSuccess, TenantID: &own.ID, ResourceType: "tenant"},
		{ActorID: "someone-else", Action: "tenant.update.success", Status: audit.StatusSuccess, TenantID: &other.ID, ResourceType: "tenant"},
	} {
		if err := store.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	_, all, err := store.List(ctx, audit.Filter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	list := func(token, query string) page {
		t.Helper()
		a := h.Do(http.MethodGet, "/api/v1/audit-logs"+query, token, "", "")
		var p page
		if a.Expect(t, "audit-logs"+query, http.StatusOK) {
			a.Decode(t, &p)
		}
		return p
	}

	t.Run("an admin reads every entry and filters them", func(t *testing.T) {
		if p := list(admin, ""); p.Total != all || p.Total < 5 || len(p.Items) != p.Total || p.Limit != 100 || p.Offset != 0 {
			t.Errorf("all entries: total %d of %d, %d items, limit %d offset %d", p.Total, all, len(p.Items), p.Limit, p.Offset)
		}
		if p := list(admin, "?tenant_id="+other.ID); p.Total != 1 || *p.Items[0].TenantID != other.ID {
			t.Errorf("one tenant's entries: %+v", p)
		}
		p := list(admin, "?action_prefix=tenant.&limit=2&offset=1")
		if p.Total != 3 || len(p.Items) != 2 || p.Limit != 2 || p.Offset != 1 {
			t.Errorf("a page of the tenant entries: %+v", p)
		}
		// Newest first: the page skips the last one appended.
		if len(p.Items) == 2 && (p.Items[0].TenantID == nil || *p.Items[0].TenantID != own.ID || p.Items[0].ActorID != "someone-else") {
			t.Errorf("page order: %+v", p.Items)
		}
		if logins := list(admin, "?action=auth.login.success"); logins.Total != 1 || logins.Items[0].ActorEmail != apptest.AdminEmail {
			t.Errorf("sign-ins: %+v", logins)
		}
	})

	t.Run("a standard user reads only its own entries", func(t *testing.T) {
		p := list(user, "")
		if p.Total != 2 {
			t.Errorf("own entries: %+v", p)
		}
		for _, e := range p.Items {
			if e.ActorID != u.ID {
				t.Errorf("entry of %s shown to %s", e.ActorID, u.ID)
			}
		}
		if p := list(user, "?tenant_id="+own.ID); p.Total != 1 || p.Items[0].Action != "tenant.view.success" {
			t.Errorf("own entries of its tenant: %+v", p)
		}
		a := h.Do(http.MethodGet, "/api/v1/audit-logs?actor_id=someone-else", user, "", "")
		if a.Expect(t, "another actor's entries", http.StatusForbidden) && a.Problem(t).Detail != "standard users may read only their own audit entries" {
			t.Errorf("another actor's entries: %s", a.Body)
		}
		a = h.Do(http.MethodGet, "/api/v1/audit-logs?tenant_id="+other.ID, user, "", "")
		if a.Expect(t, "another tenant's entries", http.StatusForbidden) && (a.Problem(t).Detail != protocol.MsgNoTenantAccess || strings.Contains(string(a.Body), other.ID)) {
			t.Errorf("another tenant's entries: %s", a.Body)
		}
	})

	t.Run("summary counts by category within the caller's reach", func(t *testing.T) {
		var s summary
		a := h.Do(http.MethodGet, "/api/v1/audit-logs/summary", admin, "", "")
		if a.Expect(t, "admin summary", http.StatusOK) {
			a.Decode(t, &s)
			if s.Total != all || s.ByCategory["tenant"] != 3 || s.TenantID != nil {
				t.Errorf("admin summary: %s", a.Body)
			}
		}
		a = h.Do(http.MethodGet, "/api/v1/audit-logs/summary?tenant_id="+own.ID, user, "", "")
		if a.Expect(t, "user summary of its tenant", http.StatusOK) {
			s = summary{}
			a.Decode(t, &s)
			if s.Total != 1 || s.ByCategory["tenant"] != 1 || s.TenantID == nil || *s.TenantID != own.ID {
				t.Errorf("user summary of its tenant: %s", a.Body)
			}
		}
		a = h.Do(http.MethodGet, "/api/v1/audit-logs/summary", user, "", "")
		if a.Expect(t, "user summary", http.StatusOK) {
			s = summary{}
			a.Decode(t, &s)
			if s.Total != 2 || s.ByCategory["auth"] != 1 || s.ByCategory["tenant"] != 1 {
				t.Errorf("user summary: %s", a.Body)
			}
		}
		a = h.Do(http.MethodGet, "/api/v1/audit-logs/summary?tenant_id="+other.ID, user, "", "")
		if a.Expect(t, "user summary of another tenant", http.StatusForbidden) && a.Problem(t).Detail != protocol.MsgNoTenantAccess {
			t.Errorf("user summary of another tenant: %s", a.Body)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, path := range []string{"/api/v1/audit-logs", "/api/v1/audit-logs/summary"} {
			a := h.Do(http.MethodGet, path, "", "", "")
			if a.Expect(t, path+" anonymous", http.StatusUnauthorized) {
				a.Problem(t)
			}
		}
		for query, location := range map[string]string{
			"limit=501": "query.limit", "offset=-1": "query.offset", "status=done": "query.status",
			"since=" + url.QueryEscape("yesterday"): "query.since",
		} {
			a := h.Do(http.MethodGet, "/api/v1/audit-logs?"+query, admin, "", "")
			if a.Expect(t, query, http.StatusUnprocessableEntity) && !a.Problem(t).Names(location) {
				t.Errorf("%s: %s does not name %s", query, a.Body, location)
			}
		}
	})
}
