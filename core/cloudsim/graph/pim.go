package graph

import (
	"slices"
	"strings"

	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Privileged Identity Management: the role assignment and eligibility
// schedule instances of the directory, and the members of the groups
// roles are assigned to. Every holder of an activated role (see
// directoryRoles) has a direct, permanent active assignment; the world's
// role assignments add active and eligible ones, to users or to groups.

func (srv *server) registerPIM(v string) {
	srv.handle("GET /"+v+"/roleManagement/directory/roleAssignmentScheduleInstances", listAssignmentInstances)
	srv.handle("GET /"+v+"/roleManagement/directory/roleEligibilityScheduleInstances", listEligibilityInstances)
	srv.handle("GET /"+v+"/groups/{id}/transitiveMembers", listGroupMembers)
}

// scheduleInstanceJSON is a unifiedRoleAssignmentScheduleInstance or a
// unifiedRoleEligibilityScheduleInstance: the eligibility's has no
// assignmentType. Principal is present when the request expands it.
type scheduleInstanceJSON struct {
	ID               string         `json:"id"`
	PrincipalID      string         `json:"principalId"`
	RoleDefinitionID string         `json:"roleDefinitionId"`
	DirectoryScopeID string         `json:"directoryScopeId"`
	AppScopeID       *string        `json:"appScopeId"`
	StartDateTime    string         `json:"startDateTime"`
	EndDateTime      *string        `json:"endDateTime"`
	MemberType       string         `json:"memberType"`
	AssignmentType   string         `json:"assignmentType,omitempty"`
	Principal        *principalJSON `json:"principal,omitempty"`
}

// principalJSON is an expanded principal: a user or a group.
type principalJSON struct {
	ODataType         string `json:"@odata.type"`
	ID                string `json:"id"`
	DisplayName       string `json:"displayName"`
	UserPrincipalName string `json:"userPrincipalName,omitempty"`
	Mail              string `json:"mail,omitempty"`
}

// groupID is the object id of a group of the directory, by name.
func groupID(t world.Tenant, name string) string {
	return derivedID("group", t.DirectoryTenantID, name)
}

// principalOf is a world assignment's principal: a user of the directory
// by address, or a group by "group:" and its name.
func (c *call) principalOf(name string) principalJSON {
	if group, ok := strings.CutPrefix(name, "group:"); ok {
		return principalJSON{ODataType: "#microsoft.graph.group", ID: groupID(c.tenant, group), DisplayName: group}
	}
	for _, u := range c.users() {
		if strings.EqualFold(u.Email, name) {
			return c.userPrincipal(u)
		}
	}
	return principalJSON{ODataType: "#microsoft.graph.user", ID: derivedID("user", c.tenant.DirectoryTenantID, name), DisplayName: name}
}

func (c *call) userPrincipal(u world.User) principalJSON {
	return principalJSON{ODataType: "#microsoft.graph.user", ID: idp.ObjectID(u), DisplayName: u.Name,
		UserPrincipalName: userPrincipalName(c.tenant, u), Mail: u.Email}
}

// instances are the directory's schedule instances of one kind (active
// or eligible): for active ones, first every role holder's.
func (c *call) instances(kind string) []scheduleInstanceJSON {
	expand := strings.Contains(c.r.URL.Query().Get("$expand"), "principal")
	start := stamp(policyCreated)
	var out []scheduleInstanceJSON
	add := func(p principalJSON, role string) {
		in := scheduleInstanceJSON{ID: derivedID(kind, c.tenant.DirectoryTenantID, role, p.ID), PrincipalID: p.ID, RoleDefinitionID: role,
			DirectoryScopeID: "/", StartDateTime: start, MemberType: "Direct"}
		if kind == "active" {
			in.AssignmentType = "Assigned"
		}
		if expand {
			in.Principal = &p
		}
		out = append(out, in)
	}
	if kind == "active" {
		for _, r := range directoryRoles {
			for _, u := range c.users() {
				if r.holds(u) {
					add(c.userPrincipal(u), r.template)
				}
			}
		}
	}
	for _, a := range c.world.RoleAssignments {
		if a.Kind == kind && strings.EqualFold(a.DirectoryTenantID, c.tenant.DirectoryTenantID) {
			add(c.principalOf(a.Principal), a.Role())
		}
	}
	return out
}

func instanceProps(in scheduleInstanceJSON) map[string]any {
	return map[string]any{"roleDefinitionId": in.RoleDefinitionID, "principalId": in.PrincipalID, "directoryScopeId": in.DirectoryScopeID}
}

func listAssignmentInstances(c *call) {
	listOf(c, "roleManagement/directory/roleAssignmentScheduleInstances", c.instances("active"), instanceProps)
}

func listEligibilityInstances(c *call) {
	listOf(c, "roleManagement/directory/roleEligibilityScheduleInstances", c.instances("eligible"), instanceProps)
}

// groupNames are the names of the directory's groups: those its users
// carry and those its role assignments name.
func (c *call) groupNames() []string {
	var out []string
	for _, u := range c.users() {
		out = append(out, u.Groups...)
	}
	for _, a := range c.world.RoleAssignments {
		if group, ok := strings.CutPrefix(a.Principal, "group:"); ok && strings.EqualFold(a.DirectoryTenantID, c.tenant.DirectoryTenantID) {
			out = append(out, group)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// listGroupMembers lists a group's members: the directory's users whose
// groups name it. Groups do not nest in the world, so transitive members
// are the direct ones.
func listGroupMembers(c *call) {
	id := c.r.PathValue("id")
	for _, name := range c.groupNames() {
		if !strings.EqualFold(groupID(c.tenant, name), id) {
			continue
		}
		out := []memberJSON{}
		for _, u := range c.users() {
			if slices.Contains(u.Groups, name) {
				out = append(out, memberJSON{ODataType: "#microsoft.graph.user", ID: idp.ObjectID(u), BusinessPhones: []string{},
					DisplayName: u.Name, Mail: u.Email, UserPrincipalName: userPrincipalName(c.tenant, u)})
			}
		}
		listOf[memberJSON](c, "directoryObjects", out, nil)
		return
	}
	c.notFound(id)
}
