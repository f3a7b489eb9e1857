package graph

import (
	"strings"

	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Directory roles with their members, and domains.

// The template ids of the directory roles every simulated tenant has
// activated. They are Entra ID's, the same in every tenant, while a role's
// object id differs from tenant to tenant.
const (
	GlobalAdministrator         = "62e90394-69f5-4237-9190-012177145e10"
	PrivilegedRoleAdministrator = "e8611ab8-c189-46e8-94e1-60213ab1f814"
	SecurityReader              = "5d6b6bb7-de71-4623-b4af-96380a352509"
)

// directoryRole is an activated role and who holds it. The world only says
// whether a user is privileged, so every privileged user is a Global
// Administrator, those who also administer the governance application
// (hold one of its app roles) are Privileged Role Administrators too, and
// Security Reader is activated with no members, as a role whose last
// member left stays.
type directoryRole struct {
	template, name, description string
	holds                       func(world.User) bool
}

var directoryRoles = []directoryRole{
	{GlobalAdministrator, "Global Administrator",
		"Can manage all aspects of Microsoft Entra ID and Microsoft services that use Microsoft Entra identities.",
		func(u world.User) bool { return u.IsPrivileged }},
	{PrivilegedRoleAdministrator, "Privileged Role Administrator",
		"Can manage role assignments in Microsoft Entra ID, and all aspects of Privileged Identity Management.",
		func(u world.User) bool { return u.IsPrivileged && len(u.Roles) > 0 }},
	{SecurityReader, "Security Reader",
		"Can read security information and reports in Microsoft Entra ID and Office 365.",
		func(world.User) bool { return false }},
}

func (srv *server) registerDirectory(v string) {
	srv.handle("GET /"+v+"/directoryRoles", listDirectoryRoles)
	srv.handle("GET /"+v+"/directoryRoles/{id}/members", listRoleMembers)
	srv.handle("GET /"+v+"/domains", listDomains)
}

type directoryRoleJSON struct {
	ID              string  `json:"id"`
	DeletedDateTime *string `json:"deletedDateTime"`
	Description     string  `json:"description"`
	DisplayName     string  `json:"displayName"`
	RoleTemplateID  string  `json:"roleTemplateId"`
}

func roleID(t world.Tenant, r directoryRole) string {
	return derivedID("role", t.DirectoryTenantID, r.template)
}

func listDirectoryRoles(c *call) {
	out := make([]directoryRoleJSON, len(directoryRoles))
	for i, r := range directoryRoles {
		out[i] = directoryRoleJSON{ID: roleID(c.tenant, r), Description: r.description, DisplayName: r.name, RoleTemplateID: r.template}
	}
	listOf(c, "directoryRoles", out, func(r directoryRoleJSON) map[string]any {
		return map[string]any{"displayName": r.DisplayName, "roleTemplateId": r.RoleTemplateID}
	})
}

// memberJSON is a role member as a directoryObject: a user with its type
// annotated and its default properties.
type memberJSON struct {
	ODataType         string   `json:"@odata.type"`
	ID                string   `json:"id"`
	BusinessPhones    []string `json:"businessPhones"`
	DisplayName       string   `json:"displayName"`
	Mail              string   `json:"mail"`
	UserPrincipalName string   `json:"userPrincipalName"`
}

func listRoleMembers(c *call) {
	id := c.r.PathValue("id")
	for _, r := range directoryRoles {
		if !strings.EqualFold(roleID(c.tenant, r), id) {
			continue
		}
		out := []memberJSON{}
		for _, u := range c.users() {
			if r.holds(u) {
				out = append(out, memberJSON{ODataType: "#microsoft.graph.user", ID: idp.ObjectID(u), BusinessPhones: []string{},
					DisplayName: u.Name, Mail: u.Email, UserPrincipalName: userPrincipalName(c.tenant, u)})
			}
		}
		// The world's active assignments of the role hold it too; an
		// eligible one holds it only once activated.
		for _, a := range c.world.RoleAssignments {
			if a.Kind == "active" && a.Role() == r.template && strings.EqualFold(a.DirectoryTenantID, c.tenant.DirectoryTenantID) {
				p := c.principalOf(a.Principal)
				out = append(out, memberJSON{ODataType: p.ODataType, ID: p.ID, BusinessPhones: []string{}, DisplayName: p.DisplayName,
					Mail: p.Mail, UserPrincipalName: p.UserPrincipalName})
			}
		}
		listOf[memberJSON](c, "directoryObjects", out, nil)
		return
	}
	c.notFound(id)
}

type domainJSON struct {
	ID                               string   `json:"id"`
	AuthenticationType               string   `json:"authenticationType"`
	IsAdminManaged                   bool     `json:"isAdminManaged"`
	IsDefault                        bool     `json:"isDefault"`
	IsInitial                        bool     `json:"isInitial"`
	IsRoot                           bool     `json:"isRoot"`
	IsVerified                       bool     `json:"isVerified"`
	PasswordNotificationWindowInDays int      `json:"passwordNotificationWindowInDays"`
	PasswordValidityPeriodInDays     int      `json:"passwordValidityPeriodInDays"`
	SupportedServices                []string `json:"supportedServices"`
}

// listDomains lists the tenant's domains from the world, all verified and
// managed (cloud-only sign-in); the first is the default, as it is the
// users' domain in the demo world.
func listDomains(c *call) {
	out := make([]domainJSON, len(c.tenant.Domains))
	for i, d := range c.tenant.Domains {
		out[i] = domainJSON{ID: d, AuthenticationType: "Managed", IsAdminManaged: true, IsDefault: i == 0, IsRoot: true, IsVerified: true,
			PasswordNotificationWindowInDays: 14, PasswordValidityPeriodInDays: 2147483647,
			SupportedServices: []string{"Email", "OfficeCommunicationsOnline"}}
	}
	listOf(c, "domains", out, func(d domainJSON) map[string]any {
		return map[string]any{"isDefault": d.IsDefault, "isVerified": d.IsVerified, "authenticationType": d.AuthenticationType}
	})
}
