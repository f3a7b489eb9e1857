package tenancy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/sdk"
)

// markupRE matches tags; names and descriptions are shown in pages and
// e-mails, so markup is removed before storing rather than escaped on
// every output.
var markupRE = regexp.MustCompile(`<[^>]*>`)

func cleanText(s string) string { return strings.TrimSpace(markupRE.ReplaceAllString(s, "")) }

// maxGroupLen bounds one access group; the schema cannot, as the list's
// items carry no limits of their own.
const maxGroupLen = 256

// TenantFields are the optional fields a create and an update share. It is
// exported because the schema generator flattens only exported embedded
// structs into the request body.
type TenantFields struct {
	Description      *string   `json:"description,omitempty" maxLength:"2000" doc:"Markup is stripped"`
	BillingAccountID *string   `json:"billing_account_id,omitempty" maxLength:"200" doc:"Billing account for cost data; empty clears it"`
	AccessGroups     *[]string `json:"access_groups,omitempty" maxItems:"100" doc:"Identity-provider groups whose members may see the tenant"`
	UseDelegation    *bool     `json:"use_delegation,omitempty" doc:"Reach the tenant through delegated access instead of its own app registration"`
	BrandColor       *string   `json:"brand_color,omitempty" pattern:"^(#[0-9a-fA-F]{6})?$" doc:"#rrggbb accenting the web pages scoped to the tenant; empty restores the default"`
}

type tenantCreateInput struct {
	Body struct {
		Name              string `json:"name" minLength:"1" maxLength:"200" doc:"1-200 characters once trimmed; markup is stripped"`
		DirectoryTenantID string `json:"directory_tenant_id" format:"uuid" doc:"The cloud directory (tenant) GUID; one Steward tenant per directory"`
		SubscriptionID    string `json:"subscription_id" format:"uuid"`
		TenantFields
	}
}

type tenantUpdateBody struct {
	Name              *string `json:"name,omitempty" minLength:"1" maxLength:"200" doc:"1-200 characters once trimmed; markup is stripped"`
	DirectoryTenantID *string `json:"directory_tenant_id,omitempty" format:"uuid"`
	SubscriptionID    *string `json:"subscription_id,omitempty" format:"uuid"`
	IsActive          *bool   `json:"is_active,omitempty" doc:"true reactivates a deactivated tenant"`
	TenantFields
}

// changed names the fields given, for the audit entry.
func (b *tenantUpdateBody) changed() []string {
	out := []string{}
	for name, given := range map[string]bool{
		"name": b.Name != nil, "directory_tenant_id": b.DirectoryTenantID != nil, "subscription_id": b.SubscriptionID != nil,
		"is_active": b.IsActive != nil, "description": b.Description != nil, "billing_account_id": b.BillingAccountID != nil, "brand_color": b.BrandColor != nil,
		"access_groups": b.AccessGroups != nil, "use_delegation": b.UseDelegation != nil,
	} {
		if given {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

type tenantUpdateInput struct {
	TenantID string `path:"tenant_id" format:"uuid"`
	Body     tenantUpdateBody
}

type tenantPathInput struct {
	TenantID string `path:"tenant_id" format:"uuid"`
}

type tenantMemberInput struct {
	TenantID string `path:"tenant_id" format:"uuid"`
	UserID   string `path:"user_id" maxLength:"64"`
}

// tenantMembers shows both ways to see a tenant: assignment by an admin,
// and membership of one of its access groups (resolved at sign-in from
// the identity provider, so those users are not listed here).
type tenantMembers struct {
	TenantID     string   `json:"tenant_id"`
	AccessGroups []string `json:"access_groups" doc:"Identity-provider groups whose members may also see the tenant"`
	Members      []Member `json:"members" doc:"Users assigned by an admin"`
}

func invalid(field, msg string, value any) error {
	return huma.Error422UnprocessableEntity("validation failed", &huma.ErrorDetail{Location: "body." + field, Message: msg, Value: value})
}

// normalize cleans the optional fields in place and reports the first
// invalid one as a 422 naming it.
func (f *TenantFields) normalize() error {
	if f.Description != nil {
		d := cleanText(*f.Description)
		f.Description = &d
	}
	if f.BillingAccountID != nil {
		b := strings.TrimSpace(*f.BillingAccountID)
		f.BillingAccountID = &b
	}
	if f.AccessGroups != nil {
		groups := make([]string, 0, len(*f.AccessGroups))
		for i, g := range *f.AccessGroups {
			g = strings.TrimSpace(g)
			if g == "" || utf8.RuneCountInString(g) > maxGroupLen {
				return invalid(fmt.Sprintf("access_groups[%d]", i), fmt.Sprintf("expected 1-%d characters", maxGroupLen), (*f.AccessGroups)[i])
			}
			if !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
		f.AccessGroups = &groups
	}
	return nil
}

// cleanName strips and trims a name; the schema already bounds its length,
// and stripping only shortens it, so what is left to check is that
// something remains.
func cleanName(raw string) (string, error) {
	n := cleanText(raw)
	if n == "" {
		return "", invalid("name", "expected at least 1 character once trimmed and stripped of markup", raw)
	}
	return n, nil
}

func (r Routes) registerAdmin(a huma.API) {
	api.Post(a, "/api/v1/tenants", sdk.Op{ID: "tenants-create", Tags: []string{"tenants"},
		Summary: "Add a tenant", Status: http.StatusCreated, Auth: sdk.AuthAdmin, Errors: []int{http.StatusConflict},
		Description: "A directory id already managed is a 409. Directory and subscription ids are stored lower-cased."},
		func(ctx context.Context, in *tenantCreateInput) (*Tenant, error) {
			b := &in.Body
			name, err := cleanName(b.Name)
			if err != nil {
				return nil, err
			}
			if err := b.normalize(); err != nil {
				return nil, err
			}
			t := Tenant{Name: name, DirectoryTenantID: strings.ToLower(b.DirectoryTenantID),
				SubscriptionID: strings.ToLower(b.SubscriptionID), IsActive: true}
			if b.Description != nil {
				t.Description = *b.Description
			}
			if b.BillingAccountID != nil && *b.BillingAccountID != "" {
				t.BillingAccountID = b.BillingAccountID
			}
			if b.AccessGroups != nil {
				t.AccessGroups = *b.AccessGroups
			}
			if b.UseDelegation != nil {
				t.UseDelegation = *b.UseDelegation
			}
			if b.BrandColor != nil {
				t.BrandColor = strings.ToLower(*b.BrandColor)
			}
			err = r.Store.CreateTenant(ctx, &t)
			if errors.Is(err, ErrDuplicate) {
				return nil, huma.Error409Conflict("a tenant with that directory_tenant_id already exists")
			}
			if err != nil {
				return nil, err
			}
			r.Audit.Record(ctx, audit.Entry{Action: "tenant.create.success", Status: audit.StatusSuccess, TenantID: &t.ID, ResourceType: "tenant", ResourceID: t.ID,
				Details: map[string]any{"name": t.Name, "directory_tenant_id": t.DirectoryTenantID, "subscription_id": t.SubscriptionID}})
			return &t, nil
		})
	api.Patch(a, "/api/v1/tenants/{tenant_id}", sdk.Op{ID: "tenants-update", Tags: []string{"tenants"},
		Summary: "Change a tenant", Description: "Only the fields given change.", Auth: sdk.AuthAdmin, Errors: []int{http.StatusNotFound, http.StatusConflict}},
		func(ctx context.Context, in *tenantUpdateInput) (*Tenant, error) {
			b := &in.Body
			p := TenantPatch{IsActive: b.IsActive}
			if b.Name != nil {
				name, err := cleanName(*b.Name)
				if err != nil {
					return nil, err
				}
				p.Name = &name
			}
			if err := b.normalize(); err != nil {
				return nil, err
			}
			p.Description, p.BillingAccountID, p.AccessGroups, p.UseDelegation = b.Description, b.BillingAccountID, b.AccessGroups, b.UseDelegation
			if b.BrandColor != nil {
				c := strings.ToLower(*b.BrandColor)
				p.BrandColor = &c
			}
			if b.DirectoryTenantID != nil {
				d := strings.ToLower(*b.DirectoryTenantID)
				p.DirectoryTenantID = &d
			}
			if b.SubscriptionID != nil {
				sub := strings.ToLower(*b.SubscriptionID)
				p.SubscriptionID = &sub
			}
			t, err := r.Store.UpdateTenant(ctx, in.TenantID, p)
			switch {
			case errors.Is(err, ErrNotFound):
				return nil, huma.Error404NotFound("no tenant with that id")
			case errors.Is(err, ErrDuplicate):
				return nil, huma.Error409Conflict("another tenant has that directory_tenant_id")
			case err != nil:
				return nil, err
			}
			r.Audit.Record(ctx, audit.Entry{Action: "tenant.update.success", Status: audit.StatusSuccess, TenantID: &t.ID, ResourceType: "tenant", ResourceID: t.ID,
				Details: map[string]any{"fields": b.changed()}})
			return &t, nil
		})
	api.Delete(a, "/api/v1/tenants/{tenant_id}", sdk.Op{ID: "tenants-deactivate", Tags: []string{"tenants"},
		Summary: "Deactivate a tenant", Auth: sdk.AuthAdmin, Errors: []int{http.StatusNotFound},
		Description: "The tenant leaves every scope and list at once; its record, data and assignments are kept, admins can still read it, and PATCH is_active=true brings it back."},
		func(ctx context.Context, in *tenantPathInput) (*sdk.Empty, error) {
			err := r.Store.DeactivateTenant(ctx, in.TenantID)
			if errors.Is(err, ErrNotFound) {
				return nil, huma.Error404NotFound("no tenant with that id")
			}
			if err != nil {
				return nil, err
			}
			r.Audit.Record(ctx, audit.Entry{Action: "tenant.deactivate.success", Status: audit.StatusSuccess, TenantID: &in.TenantID, ResourceType: "tenant", ResourceID: in.TenantID})
			return nil, nil
		})
	api.Get(a, "/api/v1/tenants/{tenant_id}/members", sdk.Op{ID: "tenant-members-list", Tags: []string{"tenants"},
		Summary: "Who may see a tenant", Auth: sdk.AuthAdmin, Errors: []int{http.StatusNotFound}},
		func(ctx context.Context, in *tenantPathInput) (*tenantMembers, error) {
			t, err := r.tenantForAdmin(ctx, in.TenantID)
			if err != nil {
				return nil, err
			}
			members, err := r.Store.Members(ctx, t.ID)
			if err != nil {
				return nil, err
			}
			groups := t.AccessGroups
			if groups == nil {
				groups = []string{}
			}
			return &tenantMembers{TenantID: t.ID, AccessGroups: groups, Members: members}, nil
		})
	api.Put(a, "/api/v1/tenants/{tenant_id}/members/{user_id}", sdk.Op{ID: "tenant-members-add", Tags: []string{"tenants"},
		Summary: "Assign a user to a tenant", Description: "Assigning a user already assigned changes nothing and answers the same.",
		Auth: sdk.AuthAdmin, Errors: []int{http.StatusNotFound}},
		func(ctx context.Context, in *tenantMemberInput) (*Member, error) {
			if _, err := r.tenantForAdmin(ctx, in.TenantID); err != nil {
				return nil, err
			}
			if _, err := r.Store.User(ctx, in.UserID); errors.Is(err, ErrNotFound) {
				return nil, huma.Error404NotFound("no user with that id")
			} else if err != nil {
				return nil, err
			}
			m, err := r.Store.Member(ctx, in.TenantID, in.UserID)
			if err == nil {
				return &m, nil
			}
			if !errors.Is(err, ErrNotFound) {
				return nil, err
			}
			if err := r.Store.AddMember(ctx, in.TenantID, in.UserID); err != nil {
				return nil, err
			}
			if m, err = r.Store.Member(ctx, in.TenantID, in.UserID); err != nil {
				return nil, err
			}
			// Only a change is audited: a repeated assignment did nothing.
			r.Audit.Record(ctx, audit.Entry{Action: "tenant.member_add.success", Status: audit.StatusSuccess, TenantID: &in.TenantID, ResourceType: "user", ResourceID: in.UserID,
				Details: map[string]any{"email": m.Email}})
			return &m, nil
		})
	api.Delete(a, "/api/v1/tenants/{tenant_id}/members/{user_id}", sdk.Op{ID: "tenant-members-remove", Tags: []string{"tenants"},
		Summary: "Withdraw a user's assignment to a tenant", Auth: sdk.AuthAdmin, Errors: []int{http.StatusNotFound},
		Description: "Access through the tenant's access groups is unaffected. A user not assigned is a 404."},
		func(ctx context.Context, in *tenantMemberInput) (*sdk.Empty, error) {
			err := r.Store.RemoveMember(ctx, in.TenantID, in.UserID)
			if errors.Is(err, ErrNotFound) {
				return nil, huma.Error404NotFound("that user is not assigned to that tenant")
			}
			if err != nil {
				return nil, err
			}
			r.Audit.Record(ctx, audit.Entry{Action: "tenant.member_remove.success", Status: audit.StatusSuccess, TenantID: &in.TenantID, ResourceType: "user", ResourceID: in.UserID})
			return nil, nil
		})
}

// tenantForAdmin reads a tenant, active or not, as a 404 when unknown.
func (r Routes) tenantForAdmin(ctx context.Context, id string) (Tenant, error) {
	t, err := r.Store.Tenant(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return t, huma.Error404NotFound("no tenant with that id")
	}
	return t, err
}
