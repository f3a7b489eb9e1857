package tenancy_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/host/app/apptest"
	"github.com/stewardhq/steward/host/tenancy"
)

func TestBrandStore(t *testing.T) {
	eachDialect(t, func(t *testing.T, db *bun.DB, s *tenancy.Store) {
		ctx := context.Background()
		a := createTenant(t, s, tenancy.Tenant{Name: "A", DirectoryTenantID: "dir-a", IsActive: true})
		b := createTenant(t, s, tenancy.Tenant{Name: "B", DirectoryTenantID: "dir-b", IsActive: true})
		c := createTenant(t, s, tenancy.Tenant{Name: "C", DirectoryTenantID: "dir-c", IsActive: true})

		retail := tenancy.Brand{Name: "Retail"}
		if err := s.CreateBrand(ctx, &retail, []string{b.ID, a.ID}); err != nil {
			t.Fatal(err)
		}
		// The picker's read: names only, of the ids asked for.
		if named, err := s.BrandNames(ctx, []string{retail.ID, "no-such-brand"}); err != nil || len(named) != 1 || named[0].Name != "Retail" || named[0].TenantIDs != nil {
			t.Fatalf("brand names %+v, %v", named, err)
		}
		if named, err := s.BrandNames(ctx, nil); err != nil || len(named) != 0 {
			t.Fatalf("brand names of none %+v, %v", named, err)
		}
		if !slices.Equal(retail.TenantIDs, []string{a.ID, b.ID}) {
			t.Errorf("created brand's tenants %v, want A and B by name", retail.TenantIDs)
		}
		// The brand's tenants carry it, in the list every scope starts from.
		ts, err := s.Tenants(ctx, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, tn := range ts {
			if in := tn.BrandID != nil && *tn.BrandID == retail.ID; in != (tn.ID != c.ID) {
				t.Errorf("tenant %s brand %v", tn.Name, tn.BrandID)
			}
		}

		dup := tenancy.Brand{Name: "RETAIL"}
		if err := s.CreateBrand(ctx, &dup, nil); !errors.Is(err, tenancy.ErrDuplicate) {
			t.Errorf("a name in another case: %v, want ErrDuplicate", err)
		}
		// A tenant in another brand refuses the whole write.
		foods := tenancy.Brand{Name: "Foods"}
		var conflict *tenancy.TenantConflictError
		if err := s.CreateBrand(ctx, &foods, []string{c.ID, a.ID}); !errors.As(err, &conflict) || conflict.Index != 1 || conflict.Brand != "Retail" {
			t.Errorf("a tenant of another brand: %v", err)
		}
		var unknown *tenancy.UnknownTenantError
		if err := s.CreateBrand(ctx, &foods, []string{"no-such-tenant"}); !errors.As(err, &unknown) || unknown.Index != 0 {
			t.Errorf("an unknown tenant: %v", err)
		}
		if bs, err := s.Brands(ctx); err != nil || len(bs) != 1 {
			t.Fatalf("brands after refused writes: %+v %v", bs, err)
		}
		if got, err := s.Tenant(ctx, c.ID); err != nil || got.BrandID != nil {
			t.Errorf("a refused write moved tenant C: %v %v", got.BrandID, err)
		}

		// Scope narrowed to a brand.
		for _, tc := range []struct {
			name  string
			scope []string
			admin bool
			want  []string
			err   error
		}{
			{"admin", []string{a.ID, b.ID, c.ID}, true, []string{a.ID, b.ID}, nil},
			{"a user of one of its tenants", []string{b.ID, c.ID}, false, []string{b.ID}, nil},
			{"a user of none of them", []string{c.ID}, false, nil, tenancy.ErrNotFound},
			{"an unknown brand", []string{a.ID}, true, nil, tenancy.ErrNotFound},
		} {
			id := retail.ID
			if tc.name == "an unknown brand" {
				id = "00000000-0000-4000-8000-00000000dead"
			}
			got, err := s.BrandScope(ctx, id, tc.scope, tc.admin)
			if !errors.Is(err, tc.err) || (tc.err == nil && !slices.Equal(got, tc.want)) {
				t.Errorf("%s: %v %v, want %v %v", tc.name, got, err, tc.want, tc.err)
			}
		}

		// Replacing the tenants moves B out and C in; the name keeps its
		// uniqueness on update.
		names := []string{c.ID, a.ID}
		up, err := s.UpdateBrand(ctx, retail.ID, tenancy.BrandPatch{TenantIDs: &names})
		if err != nil || !slices.Equal(up.TenantIDs, []string{a.ID, c.ID}) || up.Name != "Retail" {
			t.Errorf("update: %+v %v", up, err)
		}
		other := tenancy.Brand{Name: "Travel"}
		if err := s.CreateBrand(ctx, &other, []string{b.ID}); err != nil {
			t.Fatal(err)
		}
		clash := "travel"
		if _, err := s.UpdateBrand(ctx, retail.ID, tenancy.BrandPatch{Name: &clash}); !errors.Is(err, tenancy.ErrDuplicate) {
			t.Errorf("rename to another brand's name: %v", err)
		}
		if _, err := s.UpdateBrand(ctx, "no-such-brand", tenancy.BrandPatch{}); !errors.Is(err, tenancy.ErrNotFound) {
			t.Errorf("update an unknown brand: %v", err)
		}
		none := []string{}
		if up, err := s.UpdateBrand(ctx, other.ID, tenancy.BrandPatch{TenantIDs: &none}); err != nil || len(up.TenantIDs) != 0 {
			t.Errorf("empty a brand: %+v %v", up, err)
		}

		if err := s.DeleteBrand(ctx, retail.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteBrand(ctx, retail.ID); !errors.Is(err, tenancy.ErrNotFound) {
			t.Errorf("delete twice: %v", err)
		}
		ts, err = s.Tenants(ctx, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, tn := range ts {
			if tn.BrandID != nil {
				t.Errorf("tenant %s still in brand %s after its deletion", tn.Name, *tn.BrandID)
			}
		}
	})
}

func TestBrandRoutes(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { testBrandRoutes(t, dialect) })
	}
}

func testBrandRoutes(t *testing.T, dialect string) {
	h := apptest.Start(t, apptest.Options{Dialect: dialect})
	admin := h.Login()
	own := h.Tenant("Own", "dir-own")
	sibling := h.Tenant("Sibling", "dir-sibling")
	other := h.Tenant("Other", "dir-other")
	_, user := h.User("user@own.example", own)
	_, stranger := h.User("user@other.example", other)

	var brand tenancy.Brand
	t.Run("an admin creates a brand", func(t *testing.T) {
		body := `{"name":" <b>Contoso</b> Retail ","description":"<i>Shops</i>","tenant_ids":["` + sibling.ID + `","` + own.ID + `"]}`
		h.JSON(http.MethodPost, "/api/v1/brands", user, body).Expect(t, "create as a standard user", http.StatusForbidden)
		h.JSON(http.MethodPost, "/api/v1/brands", "", body).Expect(t, "create anonymous", http.StatusUnauthorized)
		a := h.JSON(http.MethodPost, "/api/v1/brands", admin, body)
		if !a.Expect(t, "create", http.StatusCreated) {
			t.FailNow()
		}
		a.Decode(t, &brand)
		if brand.Name != "Contoso Retail" || brand.Description != "Shops" || !slices.Equal(brand.TenantIDs, []string{own.ID, sibling.ID}) {
			t.Errorf("created %s", a.Body)
		}
		if es := h.Audit("brand.create.success"); len(es) != 1 || es[0].ResourceID != brand.ID || es[0].Details["name"] != "Contoso Retail" {
			t.Errorf("create audit: %+v", es)
		}
		if a := h.JSON(http.MethodPost, "/api/v1/brands", admin, `{"name":"contoso retail"}`); a.Expect(t, "a duplicate name", http.StatusConflict) &&
			a.Problem(t).Detail != "a brand with that name already exists" {
			t.Errorf("duplicate: %s", a.Body)
		}
		if a := h.JSON(http.MethodPost, "/api/v1/brands", admin, `{"name":"Fabrikam","tenant_ids":["`+other.ID+`","`+own.ID+`"]}`); a.Expect(t, "a tenant of another brand", http.StatusConflict) &&
			!a.Problem(t).Names("body.tenant_ids[1]") {
			t.Errorf("conflict: %s", a.Body)
		}
		for body, location := range map[string]string{
			`{"name":"<b></b>"}`: "body.name",
			`{"name":""}`:        "body.name",
			`{}`:                 "body.name",
			`{"name":"Fabrikam","tenant_ids":["` + other.ID + `","` + unknownTenant + `"]}`: "body.tenant_ids[1]",
			`{"name":"Fabrikam","tenant_ids":[""]}`:                                         "body.tenant_ids[0]",
			`{"name":"` + strings.Repeat("x", 201) + `"}`:                                   "body.name",
			`{"name":"Fabrikam","description":"` + strings.Repeat("x", 2001) + `"}`:         "body.description",
		} {
			if a := h.JSON(http.MethodPost, "/api/v1/brands", admin, body); a.Expect(t, body, http.StatusUnprocessableEntity) && !a.Problem(t).Names(location) {
				t.Errorf("%.60s: %s does not name %s", body, a.Body, location)
			}
		}
		// No refused write left anything behind.
		if es := h.Audit("brand.create.success"); len(es) != 1 {
			t.Errorf("refused creates were audited: %d entries", len(es))
		}
		var got tenancy.Tenant
		if a := h.Do(http.MethodGet, "/api/v1/tenants/"+other.ID, admin, "", ""); a.Expect(t, "tenant", http.StatusOK) {
			a.Decode(t, &got)
			if got.BrandID != nil {
				t.Errorf("a refused create put Other in brand %s", *got.BrandID)
			}
		}
		if a := h.Do(http.MethodGet, "/api/v1/tenants/"+own.ID, admin, "", ""); a.Expect(t, "tenant", http.StatusOK) {
			a.Decode(t, &got)
			if got.BrandID == nil || *got.BrandID != brand.ID {
				t.Errorf("tenant Own's brand_id %v", got.BrandID)
			}
		}
	})

	t.Run("each caller sees the brands of its tenants", func(t *testing.T) {
		list := func(token string) []tenancy.Brand {
			t.Helper()
			var bs []tenancy.Brand
			if a := h.Do(http.MethodGet, "/api/v1/brands", token, "", ""); a.Expect(t, "list", http.StatusOK) {
				a.Decode(t, &bs)
			}
			return bs
		}
		if bs := list(admin); len(bs) != 1 || !slices.Equal(bs[0].TenantIDs, []string{own.ID, sibling.ID}) {
			t.Errorf("admin sees %+v", bs)
		}
		// A user of one of the brand's tenants sees the brand with that
		// tenant only.
		if bs := list(user); len(bs) != 1 || !slices.Equal(bs[0].TenantIDs, []string{own.ID}) {
			t.Errorf("user sees %+v", bs)
		}
		if bs := list(stranger); len(bs) != 0 {
			t.Errorf("a user of another tenant sees %+v", bs)
		}
		if a := h.Do(http.MethodGet, "/api/v1/brands/"+brand.ID, user, "", ""); a.Expect(t, "get as a user", http.StatusOK) && strings.Contains(string(a.Body), sibling.ID) {
			t.Errorf("user sees a tenant it may not: %s", a.Body)
		}
		h.Do(http.MethodGet, "/api/v1/brands/"+brand.ID, stranger, "", "").Expect(t, "get as a user of another tenant", http.StatusNotFound)
		h.Do(http.MethodGet, "/api/v1/brands/"+unknownTenant, admin, "", "").Expect(t, "get an unknown brand", http.StatusNotFound)
		if a := h.Do(http.MethodGet, "/api/v1/brands/not-a-uuid", admin, "", ""); a.Expect(t, "a malformed id", http.StatusUnprocessableEntity) && !a.Problem(t).Names("path.brand_id") {
			t.Errorf("malformed id: %s", a.Body)
		}
		h.Do(http.MethodGet, "/api/v1/brands", "", "", "").Expect(t, "anonymous", http.StatusUnauthorized)
	})

	t.Run("an admin changes a brand", func(t *testing.T) {
		path := "/api/v1/brands/" + brand.ID
		h.JSON(http.MethodPatch, path, user, `{"name":"Mine"}`).Expect(t, "update as a standard user", http.StatusForbidden)
		var got tenancy.Brand
		if a := h.JSON(http.MethodPatch, path, admin, `{"tenant_ids":["`+sibling.ID+`"]}`); a.Expect(t, "update", http.StatusOK) {
			a.Decode(t, &got)
			if got.Name != "Contoso Retail" || got.Description != "Shops" || !slices.Equal(got.TenantIDs, []string{sibling.ID}) {
				t.Errorf("updated %s", a.Body)
			}
		}
		if es := h.Audit("brand.update.success"); len(es) != 1 || !slices.Equal(anyStrings(es[0].Details["fields"]), []string{"tenant_ids"}) {
			t.Errorf("update audit: %+v", es)
		}
		// Own left the brand, so its user no longer sees it.
		h.Do(http.MethodGet, path, user, "", "").Expect(t, "a brand the user no longer sees", http.StatusNotFound)
		h.JSON(http.MethodPost, "/api/v1/brands", admin, `{"name":"Fabrikam Foods","tenant_ids":["`+other.ID+`"]}`).Expect(t, "a second brand", http.StatusCreated)
		if a := h.JSON(http.MethodPatch, path, admin, `{"name":"FABRIKAM FOODS"}`); a.Expect(t, "rename to another brand's name", http.StatusConflict) && strings.Contains(string(a.Body), "Contoso") {
			t.Errorf("rename conflict: %s", a.Body)
		}
		if a := h.JSON(http.MethodPatch, path, admin, `{"tenant_ids":["`+own.ID+`","`+other.ID+`"]}`); a.Expect(t, "a tenant of another brand", http.StatusConflict) && !a.Problem(t).Names("body.tenant_ids[1]") {
			t.Errorf("conflict: %s", a.Body)
		}
		// The refused update left the brand as it was.
		if a := h.Do(http.MethodGet, path, admin, "", ""); a.Expect(t, "get", http.StatusOK) {
			a.Decode(t, &got)
			if !slices.Equal(got.TenantIDs, []string{sibling.ID}) {
				t.Errorf("a refused update changed the tenants: %s", a.Body)
			}
		}
		if a := h.JSON(http.MethodPatch, path, admin, `{"name":"  "}`); a.Expect(t, "a blank name", http.StatusUnprocessableEntity) && !a.Problem(t).Names("body.name") {
			t.Errorf("blank name: %s", a.Body)
		}
		h.JSON(http.MethodPatch, "/api/v1/brands/"+unknownTenant, admin, `{"name":"X"}`).Expect(t, "update an unknown brand", http.StatusNotFound)
	})

	t.Run("an admin deletes a brand", func(t *testing.T) {
		path := "/api/v1/brands/" + brand.ID
		h.Do(http.MethodDelete, path, user, "", "").Expect(t, "delete as a standard user", http.StatusForbidden)
		h.Do(http.MethodDelete, path, admin, "", "").Expect(t, "delete", http.StatusNoContent)
		h.Do(http.MethodDelete, path, admin, "", "").Expect(t, "delete again", http.StatusNotFound)
		if es := h.Audit("brand.delete.success"); len(es) != 1 || es[0].ResourceID != brand.ID {
			t.Errorf("delete audit: %+v", es)
		}
		var got tenancy.Tenant
		if a := h.Do(http.MethodGet, "/api/v1/tenants/"+sibling.ID, admin, "", ""); a.Expect(t, "tenant", http.StatusOK) {
			a.Decode(t, &got)
			if got.BrandID != nil || !got.IsActive {
				t.Errorf("a deleted brand's tenant: %s", a.Body)
			}
		}
	})
}
