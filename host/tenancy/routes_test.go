package tenancy_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/host/app/apptest"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/sdk/protocol"
)

const (
	newDirectory    = "0A1B2C3D-0000-4000-8000-000000000001"
	newSubscription = "0A1B2C3D-0000-4000-8000-0000000000AA"
	unknownTenant   = "00000000-0000-4000-8000-00000000dead"
)

func TestTenantRoutes(t *testing.T) {
	h := apptest.Start(t, apptest.Options{})
	admin := h.Login()
	own := h.Tenant("Own", "dir-own")
	other := h.Tenant("Other", "dir-other")
	u, user := h.User("user@own.example", own)
	_, nobody := h.User("nobody@example.com")

	names := func(token string) []string {
		t.Helper()
		var ts []tenancy.Tenant
		if a := h.Do(http.MethodGet, "/api/v1/tenants", token, "", ""); a.Expect(t, "tenants-list", http.StatusOK) {
			a.Decode(t, &ts)
		}
		out := []string{}
		for _, tn := range ts {
			out = append(out, tn.Name)
		}
		slices.Sort(out)
		return out
	}
	// refused answers 403 naming no tenant.
	refused := func(t *testing.T, what string, a apptest.Answer) {
		t.Helper()
		if a.Expect(t, what, http.StatusForbidden) && (a.Problem(t).Detail != protocol.MsgNoTenantAccess || strings.Contains(string(a.Body), other.ID) || strings.Contains(string(a.Body), "Other")) {
			t.Errorf("%s: %s", what, a.Body)
		}
	}

	t.Run("each caller sees its scope", func(t *testing.T) {
		if got := names(admin); !slices.Equal(got, []string{"Other", "Own"}) {
			t.Errorf("admin sees %v", got)
		}
		if got := names(user); !slices.Equal(got, []string{"Own"}) {
			t.Errorf("user sees %v", got)
		}
		if got := names(nobody); len(got) != 0 {
			t.Errorf("a user of no tenant sees %v", got)
		}
		h.Do(http.MethodGet, "/api/v1/tenants/"+own.ID, user, "", "").Expect(t, "own tenant", http.StatusOK)
		refused(t, "another tenant", h.Do(http.MethodGet, "/api/v1/tenants/"+other.ID, user, "", ""))
		// An unknown id is refused like another tenant's, so a standard
		// user cannot tell which ids exist; an admin is told.
		refused(t, "an unknown tenant as a standard user", h.Do(http.MethodGet, "/api/v1/tenants/"+unknownTenant, user, "", ""))
		h.Do(http.MethodGet, "/api/v1/tenants/"+unknownTenant, admin, "", "").Expect(t, "an unknown tenant as an admin", http.StatusNotFound)
		if a := h.Do(http.MethodGet, "/api/v1/tenants/not-a-uuid", admin, "", ""); a.Expect(t, "a malformed id", http.StatusUnprocessableEntity) && !a.Problem(t).Names("path.tenant_id") {
			t.Errorf("a malformed id: %s", a.Body)
		}
		h.Do(http.MethodGet, "/api/v1/tenants", "", "", "").Expect(t, "anonymous", http.StatusUnauthorized)
	})

	var created tenancy.Tenant
	t.Run("an admin creates a tenant", func(t *testing.T) {
		body := `{"name":"  <b>Acme</b> ","directory_tenant_id":"` + newDirectory + `","subscription_id":"` + newSubscription + `",` +
			`"description":"<i>Brand</i> A","access_groups":[" g1 ","g1","g2"],"billing_account_id":" ba-1 "}`
		h.JSON(http.MethodPost, "/api/v1/tenants", user, body).Expect(t, "create as a standard user", http.StatusForbidden)
		h.JSON(http.MethodPost, "/api/v1/tenants", "", body).Expect(t, "create anonymous", http.StatusUnauthorized)
		a := h.JSON(http.MethodPost, "/api/v1/tenants", admin, body)
		if !a.Expect(t, "create", http.StatusCreated) {
			t.FailNow()
		}
		a.Decode(t, &created)
		if created.Name != "Acme" || created.Description != "Brand A" || created.DirectoryTenantID != strings.ToLower(newDirectory) ||
			created.SubscriptionID != strings.ToLower(newSubscription) || !created.IsActive || created.BillingAccountID == nil || *created.BillingAccountID != "ba-1" {
			t.Errorf("created %s", a.Body)
		}
		stored, err := tenancy.New(h.DB).Tenant(t.Context(), created.ID)
		if err != nil || !slices.Equal(stored.AccessGroups, []string{"g1", "g2"}) {
			t.Errorf("stored access groups %v (%v)", stored.AccessGroups, err)
		}
		if es := h.Audit("tenant.create.success"); len(es) != 1 || es[0].ResourceID != created.ID || es[0].TenantID == nil || *es[0].TenantID != created.ID || es[0].Details["name"] != "Acme" {
			t.Errorf("create audit: %+v", es)
		}
		a = h.JSON(http.MethodPost, "/api/v1/tenants", admin, body)
		if a.Expect(t, "a directory already managed", http.StatusConflict) && a.Problem(t).Detail != "a tenant with that directory_tenant_id already exists" {
			t.Errorf("duplicate: %s", a.Body)
		}
		for body, location := range map[string]string{
			`{"name":"<b></b>","directory_tenant_id":"` + unknownTenant + `","subscription_id":"` + newSubscription + `"}`:                       "body.name",
			`{"name":"X","directory_tenant_id":"` + unknownTenant + `","subscription_id":"` + newSubscription + `","access_groups":["ok","  "]}`: "body.access_groups[1]",
			`{"name":"X","directory_tenant_id":"nope","subscription_id":"` + newSubscription + `"}`:                                              "body.directory_tenant_id",
		} {
			if a := h.JSON(http.MethodPost, "/api/v1/tenants", admin, body); a.Expect(t, body, http.StatusUnprocessableEntity) && !a.Problem(t).Names(location) {
				t.Errorf("%s: %s does not name %s", body, a.Body, location)
			}
		}
	})

	t.Run("an admin changes a tenant", func(t *testing.T) {
		path := "/api/v1/tenants/" + created.ID
		h.JSON(http.MethodPatch, path, user, `{"name":"Mine"}`).Expect(t, "update as a standard user", http.StatusForbidden)
		a := h.JSON(http.MethodPatch, path, admin, `{"name":"Acme Corp","use_delegation":true}`)
		var got tenancy.Tenant
		if a.Expect(t, "update", http.StatusOK) {
			a.Decode(t, &got)
			if got.Name != "Acme Corp" || !got.UseDelegation || got.Description != "Brand A" {
				t.Errorf("updated %s", a.Body)
			}
		}
		if es := h.Audit("tenant.update.success"); len(es) != 1 || !slices.Equal(anyStrings(es[0].Details["fields"]), []string{"name", "use_delegation"}) {
			t.Errorf("update audit: %+v", es)
		}
		if a := h.JSON(http.MethodPatch, path, admin, `{"directory_tenant_id":"dir-own"}`); a.Expect(t, "a malformed directory", http.StatusUnprocessableEntity) && !a.Problem(t).Names("body.directory_tenant_id") {
			t.Errorf("malformed directory: %s", a.Body)
		}
		h.JSON(http.MethodPatch, "/api/v1/tenants/"+unknownTenant, admin, `{"name":"X"}`).Expect(t, "update an unknown tenant", http.StatusNotFound)

		// The brand colour is #rrggbb, stored lower-cased; empty restores
		// the default.
		for body, want := range map[string]string{`{"brand_color":"#1A73E8"}`: "#1a73e8", `{"brand_color":""}`: ""} {
			var got tenancy.Tenant
			if a := h.JSON(http.MethodPatch, path, admin, body); a.Expect(t, body, http.StatusOK) {
				a.Decode(t, &got)
				if got.BrandColor != want || got.Name != "Acme Corp" {
					t.Errorf("%s: %s", body, a.Body)
				}
			}
		}
		for _, bad := range []string{`"red"`, `"#12345"`, `"#1234567"`, `"1a73e8"`, `"#gggggg"`} {
			if a := h.JSON(http.MethodPatch, path, admin, `{"brand_color":`+bad+`}`); a.Expect(t, bad, http.StatusUnprocessableEntity) && !a.Problem(t).Names("body.brand_color") {
				t.Errorf("brand colour %s: %s", bad, a.Body)
			}
		}
	})

	t.Run("an admin deactivates a tenant and brings it back", func(t *testing.T) {
		path := "/api/v1/tenants/" + own.ID
		h.Do(http.MethodDelete, path, user, "", "").Expect(t, "deactivate as a standard user", http.StatusForbidden)
		h.Do(http.MethodDelete, path, admin, "", "").Expect(t, "deactivate", http.StatusNoContent)
		if got := names(user); len(got) != 0 {
			t.Errorf("user still sees %v", got)
		}
		refused(t, "a deactivated tenant", h.Do(http.MethodGet, path, user, "", ""))
		if es := h.Audit("tenant.deactivate.success"); len(es) != 1 || es[0].ResourceID != own.ID {
			t.Errorf("deactivate audit: %+v", es)
		}
		h.Do(http.MethodDelete, "/api/v1/tenants/"+unknownTenant, admin, "", "").Expect(t, "deactivate an unknown tenant", http.StatusNotFound)
		h.JSON(http.MethodPatch, path, admin, `{"is_active":true}`).Expect(t, "reactivate", http.StatusOK)
		if got := names(user); !slices.Equal(got, []string{"Own"}) {
			t.Errorf("after reactivation user sees %v", got)
		}
	})

	t.Run("an admin assigns and withdraws a member", func(t *testing.T) {
		members := "/api/v1/tenants/" + other.ID + "/members"
		h.Do(http.MethodGet, members, user, "", "").Expect(t, "members as a standard user", http.StatusForbidden)
		h.Do(http.MethodPut, members+"/"+u.ID, user, "", "").Expect(t, "self-assignment", http.StatusForbidden)
		for range 2 {
			// A repeated assignment answers the same and is audited once.
			h.Do(http.MethodPut, members+"/"+u.ID, admin, "", "").Expect(t, "assign", http.StatusOK)
		}
		if es := h.Audit("tenant.member_add.success"); len(es) != 1 || es[0].ResourceID != u.ID || es[0].Details["email"] != u.Email {
			t.Errorf("assign audit: %+v", es)
		}
		// The assignment applies to the user's next request.
		h.Do(http.MethodGet, "/api/v1/tenants/"+other.ID, user, "", "").Expect(t, "an assigned tenant", http.StatusOK)
		var list struct {
			TenantID     string           `json:"tenant_id"`
			AccessGroups []string         `json:"access_groups"`
			Members      []tenancy.Member `json:"members"`
		}
		if a := h.Do(http.MethodGet, members, admin, "", ""); a.Expect(t, "members", http.StatusOK) {
			a.Decode(t, &list)
			if list.TenantID != other.ID || !slices.Equal(list.AccessGroups, other.AccessGroups) || len(list.Members) != 1 || list.Members[0].UserID != u.ID {
				t.Errorf("members: %s", a.Body)
			}
		}
		h.Do(http.MethodPut, members+"/no-such-user", admin, "", "").Expect(t, "assign an unknown user", http.StatusNotFound)
		h.Do(http.MethodPut, "/api/v1/tenants/"+unknownTenant+"/members/"+u.ID, admin, "", "").Expect(t, "assign to an unknown tenant", http.StatusNotFound)
		h.Do(http.MethodGet, "/api/v1/tenants/"+unknownTenant+"/members", admin, "", "").Expect(t, "members of an unknown tenant", http.StatusNotFound)

		h.Do(http.MethodDelete, members+"/"+u.ID, admin, "", "").Expect(t, "withdraw", http.StatusNoContent)
		refused(t, "a withdrawn tenant", h.Do(http.MethodGet, "/api/v1/tenants/"+other.ID, user, "", ""))
		if a := h.Do(http.MethodDelete, members+"/"+u.ID, admin, "", ""); a.Expect(t, "withdraw again", http.StatusNotFound) && a.Problem(t).Detail != "that user is not assigned to that tenant" {
			t.Errorf("withdraw again: %s", a.Body)
		}
		if es := h.Audit("tenant.member_remove.success"); len(es) != 1 {
			t.Errorf("withdraw audit: %+v", es)
		}
	})
}

func anyStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, s := range l {
		str, _ := s.(string)
		out = append(out, str)
	}
	return out
}
