package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/tenancy"
)

func TestTenantAdmin(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := newFixture(t, dialect)
			c := f.testTenantCreate(t)
			f.testTenantUpdate(t, c)
			f.testTenantMembers(t, c)
			f.testTenantDeactivate(t, c)
			f.testTenantAdminOnly(t, c)
			f.testTenantAudit(t, c)
		})
	}
}

func (f *fixture) sendJSON(method, path, token string, body any) response {
	f.h.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		f.h.t.Fatal(err)
	}
	return f.h.do(method, path, token, strings.NewReader(string(b)), "Content-Type", "application/json")
}

func (f *fixture) testTenantCreate(t *testing.T) tenancy.Tenant {
	dir, sub := uuid.NewString(), uuid.NewString()
	r := f.sendJSON(http.MethodPost, "/api/v1/tenants", f.admin, map[string]any{
		"name": "  <b>Brand C</b>  ", "description": "Third <script>alert(1)</script>brand", "directory_tenant_id": strings.ToUpper(dir),
		"subscription_id": sub, "billing_account_id": "ba-1", "access_groups": []string{"grp-c", " grp-c ", "grp-ops"}, "use_delegation": true,
	})
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var raw map[string]any
	r.json(t, &raw)
	for _, k := range []string{"id", "name", "description", "directory_tenant_id", "subscription_id", "use_delegation", "billing_account_id", "is_active", "created_at"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("tenant record lacks %s: %s", k, r.body)
		}
	}
	var c tenancy.Tenant
	r.json(t, &c)
	if c.ID == "" || c.Name != "Brand C" || c.Description != "Third alert(1)brand" || c.DirectoryTenantID != dir || c.SubscriptionID != sub ||
		c.BillingAccountID == nil || *c.BillingAccountID != "ba-1" || !c.UseDelegation || !c.IsActive || c.CreatedAt.IsZero() {
		t.Errorf("created %s", r.body)
	}
	if g := f.h.get("/api/v1/tenants/"+c.ID, f.admin); g.status != http.StatusOK {
		t.Errorf("GET the new tenant: %d %s", g.status, g.body)
	}

	minimal := f.sendJSON(http.MethodPost, "/api/v1/tenants", f.admin, map[string]any{"name": "Brand D", "directory_tenant_id": uuid.NewString(), "subscription_id": uuid.NewString()})
	var d tenancy.Tenant
	minimal.json(t, &d)
	if minimal.status != http.StatusCreated || d.Description != "" || d.BillingAccountID != nil || d.UseDelegation || !d.IsActive {
		t.Errorf("minimal create: %d %s", minimal.status, minimal.body)
	}

	dup := f.sendJSON(http.MethodPost, "/api/v1/tenants", f.admin, map[string]any{"name": "Brand C again", "directory_tenant_id": dir, "subscription_id": uuid.NewString()})
	if dup.status != http.StatusConflict {
		t.Errorf("duplicate directory id: %d %s", dup.status, dup.body)
	}

	valid := func() map[string]any {
		return map[string]any{"name": "Brand E", "directory_tenant_id": uuid.NewString(), "subscription_id": uuid.NewString()}
	}
	for _, tc := range []struct {
		field    string
		value    any
		location string
	}{
		{"name", "   ", "body.name"},
		{"name", "<i></i>", "body.name"},
		{"name", strings.Repeat("n", 201), "body.name"},
		{"name", nil, "body.name"},
		{"description", strings.Repeat("d", 2001), "body.description"},
		{"directory_tenant_id", "not-a-guid", "body.directory_tenant_id"},
		{"subscription_id", "", "body.subscription_id"},
		{"subscription_id", nil, "body.subscription_id"},
		{"access_groups", []string{"ok", "  "}, "body.access_groups[1]"},
		{"use_delegation", "yes", "body.use_delegation"},
	} {
		t.Run("invalid "+tc.field, func(t *testing.T) {
			body := valid()
			if tc.value == nil {
				delete(body, tc.field)
			} else {
				body[tc.field] = tc.value
			}
			expectInvalid(t, f.sendJSON(http.MethodPost, "/api/v1/tenants", f.admin, body), tc.location)
		})
	}
	return c
}

func (f *fixture) testTenantUpdate(t *testing.T, c tenancy.Tenant) {
	r := f.sendJSON(http.MethodPatch, "/api/v1/tenants/"+c.ID, f.admin, map[string]any{"description": "<p>Renamed</p> brand", "use_delegation": false})
	if r.status != http.StatusOK {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	var got tenancy.Tenant
	r.json(t, &got)
	if got.Description != "Renamed brand" || got.UseDelegation || got.Name != c.Name || got.DirectoryTenantID != c.DirectoryTenantID ||
		got.SubscriptionID != c.SubscriptionID || got.BillingAccountID == nil || *got.BillingAccountID != "ba-1" || !got.IsActive {
		t.Errorf("after patching description and delegation: %s", r.body)
	}
	f.h.get("/api/v1/tenants/"+c.ID, f.admin).json(t, &got)
	if got.Description != "Renamed brand" {
		t.Errorf("patch not stored: %+v", got)
	}

	if r := f.sendJSON(http.MethodPatch, "/api/v1/tenants/"+uuid.NewString(), f.admin, map[string]any{"name": "x"}); r.status != http.StatusNotFound {
		t.Errorf("patch of an unknown tenant: %d %s", r.status, r.body)
	}
	if r := f.sendJSON(http.MethodPatch, "/api/v1/tenants/"+c.ID, f.admin, map[string]any{"directory_tenant_id": f.tenantA.DirectoryTenantID}); r.status != http.StatusUnprocessableEntity {
		// Tenant A's fixture directory id is not a GUID, so it cannot be named here.
		t.Errorf("patch with a malformed directory id: %d %s", r.status, r.body)
	}
	other := f.sendJSON(http.MethodPost, "/api/v1/tenants", f.admin, map[string]any{"name": "Brand F", "directory_tenant_id": uuid.NewString(), "subscription_id": uuid.NewString()})
	var fTenant tenancy.Tenant
	other.json(t, &fTenant)
	if r := f.sendJSON(http.MethodPatch, "/api/v1/tenants/"+fTenant.ID, f.admin, map[string]any{"directory_tenant_id": c.DirectoryTenantID}); r.status != http.StatusConflict {
		t.Errorf("patch onto another tenant's directory id: %d %s", r.status, r.body)
	}
	expectInvalid(t, f.sendJSON(http.MethodPatch, "/api/v1/tenants/"+c.ID, f.admin, map[string]any{"name": " <br> "}), "body.name")
	expectInvalid(t, f.sendJSON(http.MethodPatch, "/api/v1/tenants/"+c.ID, f.admin, map[string]any{"access_groups": []string{""}}), "body.access_groups[0]")
	expectInvalid(t, f.h.do(http.MethodPatch, "/api/v1/tenants/not-a-uuid", f.admin, strings.NewReader(`{}`), "Content-Type", "application/json"), "path.tenant_id")
}

type membersBody struct {
	TenantID     string           `json:"tenant_id"`
	AccessGroups []string         `json:"access_groups"`
	Members      []tenancy.Member `json:"members"`
}

func (f *fixture) testTenantMembers(t *testing.T, c tenancy.Tenant) {
	h := f.h
	var list membersBody
	r := h.get("/api/v1/tenants/"+c.ID+"/members", f.admin)
	r.json(t, &list)
	if r.status != http.StatusOK || list.TenantID != c.ID || len(list.Members) != 0 || strings.Join(list.AccessGroups, ",") != "grp-c,grp-ops" {
		t.Fatalf("members of a new tenant: %d %s", r.status, r.body)
	}

	path := "/api/v1/tenants/" + c.ID + "/members/" + f.userA.ID
	first := h.do(http.MethodPut, path, f.admin, nil)
	var m1, m2 tenancy.Member
	first.json(t, &m1)
	if first.status != http.StatusOK || m1.UserID != f.userA.ID || m1.Email != f.userA.Email || m1.Name != f.userA.Name || m1.AssignedAt.IsZero() {
		t.Fatalf("assign: %d %s", first.status, first.body)
	}
	again := h.do(http.MethodPut, path, f.admin, nil)
	again.json(t, &m2)
	if again.status != http.StatusOK || !m2.AssignedAt.Equal(m1.AssignedAt) {
		t.Errorf("assigning again: %d %s, want the first assignment %s", again.status, again.body, first.body)
	}
	h.get("/api/v1/tenants/"+c.ID+"/members", f.admin).json(t, &list)
	if len(list.Members) != 1 || list.Members[0].Email != f.userA.Email {
		t.Errorf("members after assigning: %+v", list)
	}
	// The assignment applies to the user's next request.
	var seen []tenancy.Tenant
	h.get("/api/v1/tenants", f.tokenA).json(t, &seen)
	if len(seen) != 2 || (seen[0].ID != c.ID && seen[1].ID != c.ID) {
		t.Errorf("assigned user sees %+v, want tenants A and C", seen)
	}

	if r := h.do(http.MethodPut, "/api/v1/tenants/"+c.ID+"/members/no-such-user", f.admin, nil); r.status != http.StatusNotFound {
		t.Errorf("assigning an unknown user: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodPut, "/api/v1/tenants/"+uuid.NewString()+"/members/"+f.userA.ID, f.admin, nil); r.status != http.StatusNotFound {
		t.Errorf("assigning to an unknown tenant: %d %s", r.status, r.body)
	}
	if r := h.get("/api/v1/tenants/"+uuid.NewString()+"/members", f.admin); r.status != http.StatusNotFound {
		t.Errorf("members of an unknown tenant: %d %s", r.status, r.body)
	}

	if r := h.do(http.MethodDelete, path, f.admin, nil); r.status != http.StatusNoContent {
		t.Fatalf("unassign: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodDelete, path, f.admin, nil); r.status != http.StatusNotFound {
		t.Errorf("unassigning twice: %d %s", r.status, r.body)
	}
	if r := h.get("/api/v1/tenants/"+c.ID, f.tokenA); r.status != http.StatusForbidden {
		t.Errorf("unassigned user reads the tenant: %d %s", r.status, r.body)
	}
	// Assigned again for the deactivation check.
	if r := h.do(http.MethodPut, path, f.admin, nil); r.status != http.StatusOK {
		t.Fatalf("reassign: %d %s", r.status, r.body)
	}
}

func (f *fixture) testTenantDeactivate(t *testing.T, c tenancy.Tenant) {
	h := f.h
	if r := h.get("/api/v1/tenants/"+c.ID, f.tokenA); r.status != http.StatusOK {
		t.Fatalf("assigned user before deactivation: %d %s", r.status, r.body)
	}
	if r := h.do(http.MethodDelete, "/api/v1/tenants/"+c.ID, f.admin, nil); r.status != http.StatusNoContent {
		t.Fatalf("deactivate: %d %s", r.status, r.body)
	}
	var got tenancy.Tenant
	r := h.get("/api/v1/tenants/"+c.ID, f.admin)
	r.json(t, &got)
	if r.status != http.StatusOK || got.IsActive {
		t.Errorf("admin reads a deactivated tenant: %d %s", r.status, r.body)
	}
	for _, tok := range []string{f.admin, f.tokenA} {
		var list []tenancy.Tenant
		h.get("/api/v1/tenants", tok).json(t, &list)
		if !slices.ContainsFunc(list, func(tn tenancy.Tenant) bool { return tn.ID == f.tenantA.ID }) {
			t.Errorf("active tenant A is not listed: %+v", list)
		}
		for _, tn := range list {
			if tn.ID == c.ID {
				t.Errorf("deactivated tenant still listed: %+v", list)
			}
		}
	}
	if r := h.get("/api/v1/tenants/"+c.ID, f.tokenA); r.status != http.StatusForbidden {
		t.Errorf("assigned user reads a deactivated tenant: %d %s", r.status, r.body)
	}
	var me struct {
		Tenants []struct{ ID string } `json:"tenants"`
	}
	h.get("/api/v1/auth/me", f.tokenA).json(t, &me)
	if len(me.Tenants) != 1 || me.Tenants[0].ID != f.tenantA.ID {
		t.Errorf("scope after deactivation: %+v", me.Tenants)
	}
	if r := h.do(http.MethodDelete, "/api/v1/tenants/"+uuid.NewString(), f.admin, nil); r.status != http.StatusNotFound {
		t.Errorf("deactivating an unknown tenant: %d %s", r.status, r.body)
	}

	r = f.sendJSON(http.MethodPatch, "/api/v1/tenants/"+c.ID, f.admin, map[string]any{"is_active": true})
	if r.status != http.StatusOK {
		t.Fatalf("reactivate: %d %s", r.status, r.body)
	}
	if r := h.get("/api/v1/tenants/"+c.ID, f.tokenA); r.status != http.StatusOK {
		t.Errorf("assigned user after reactivation: %d %s", r.status, r.body)
	}
}

func (f *fixture) testTenantAdminOnly(t *testing.T, c tenancy.Tenant) {
	body := `{"name":"Brand Z","directory_tenant_id":"` + uuid.NewString() + `","subscription_id":"` + uuid.NewString() + `"}`
	for _, call := range []struct{ method, path, body string }{
		{http.MethodPost, "/api/v1/tenants", body},
		{http.MethodPatch, "/api/v1/tenants/" + f.tenantA.ID, `{"name":"Mine now"}`},
		{http.MethodDelete, "/api/v1/tenants/" + f.tenantA.ID, ""},
		{http.MethodGet, "/api/v1/tenants/" + f.tenantA.ID + "/members", ""},
		{http.MethodPut, "/api/v1/tenants/" + f.tenantA.ID + "/members/" + f.userA.ID, ""},
		{http.MethodDelete, "/api/v1/tenants/" + c.ID + "/members/" + f.userA.ID, ""},
	} {
		r := f.h.do(call.method, call.path, f.tokenA, strings.NewReader(call.body), "Content-Type", "application/json")
		if r.status != http.StatusForbidden {
			t.Errorf("standard user %s %s: %d %s", call.method, call.path, r.status, r.body)
		}
	}
	var a tenancy.Tenant
	f.h.get("/api/v1/tenants/"+f.tenantA.ID, f.admin).json(t, &a)
	if a.Name != f.tenantA.Name || !a.IsActive {
		t.Errorf("a refused call changed tenant A: %+v", a)
	}
}

func (f *fixture) testTenantAudit(t *testing.T, c tenancy.Tenant) {
	var page struct {
		Items []struct {
			Action       string         `json:"action"`
			ActorID      string         `json:"actor_id"`
			TenantID     *string        `json:"tenant_id"`
			ResourceType string         `json:"resource_type"`
			ResourceID   string         `json:"resource_id"`
			Details      map[string]any `json:"details"`
		} `json:"items"`
	}
	f.h.get("/api/v1/audit-logs?action_prefix=tenant.&tenant_id="+c.ID+"&limit=500", f.admin).json(t, &page)
	want := map[string]string{
		"tenant.create.success": c.ID, "tenant.update.success": c.ID, "tenant.deactivate.success": c.ID,
		"tenant.member_add.success": f.userA.ID, "tenant.member_remove.success": f.userA.ID,
	}
	found := map[string]int{}
	for _, e := range page.Items {
		if e.TenantID == nil || *e.TenantID != c.ID || e.ResourceID != want[e.Action] || e.ActorID == "" {
			t.Errorf("entry %+v", e)
		}
		found[e.Action]++
	}
	for action := range want {
		if found[action] == 0 {
			t.Errorf("no %s entry among %+v", action, found)
		}
	}
	// Assigned, unassigned, assigned again: a repeated assignment is not a change.
	if found["tenant.member_add.success"] != 2 || found["tenant.member_remove.success"] != 1 {
		t.Errorf("membership entries %+v, want 2 adds and 1 removal", found)
	}
}
