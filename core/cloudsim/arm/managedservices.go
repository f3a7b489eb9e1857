package arm

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Microsoft.ManagedServices: Azure Lighthouse, and the access it grants.
//
// The world's first tenant is the managing tenant, as Steward
// authenticates there. Every subscription of another tenant marked
// delegated carries one registration definition, which grants the managing
// tenant Reader, Cost Management Reader and Security Reader, and one
// assignment of it. The managing tenant's own subscriptions need none.
//
// Resource Manager lets a token reach the subscriptions of its own tenant,
// and a managing tenant's token those of the delegated tenants as well:
// a tenant that is not delegated is read only with a token of its own
// directory, issued to the application it consented to. Any other
// subscription answers 403 AuthorizationFailed on every
// subscription-scoped route and is left out of listings, and so does
// every subscription for a token of a directory that withdrew its
// consent (world.Tenant.Consented). A billing account is reached as its
// tenant's subscriptions are. Which principal
// of the managing tenant holds the roles is not checked.

// The built-in roles a Steward delegation grants.
const (
	RoleReader               = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
	RoleCostManagementReader = "72fafb9e-0641-4937-9268-a91bfd8191a3"
	RoleSecurityReader       = "39bc4728-0917-49c7-9d2c-d95423bc2eb4"
)

// lighthouse is the namespace of the ids the simulator derives for
// delegations, the same in every run.
var lighthouse = uuid.MustParse("5d0c5b7e-8d1f-4e4a-9f0b-2c6a7e3d1b90")

func (srv *server) registerManagedServices() {
	base := "/subscriptions/{subscriptionId}/providers/Microsoft.ManagedServices/"
	srv.handle("GET "+base+"registrationDefinitions", srv.registrationDefinitions)
	srv.handle("GET "+base+"registrationAssignments", srv.registrationAssignments)
}

// managingTenant is the directory tenant id of the world's first tenant.
func (srv *server) managingTenant() string {
	if len(srv.sim.World().Tenants) == 0 {
		return ""
	}
	return srv.sim.World().Tenants[0].DirectoryTenantID
}

// managed reports whether t delegates its subscriptions to the managing
// tenant.
func (srv *server) managed(t world.Tenant) bool {
	return t.Delegated && !strings.EqualFold(t.DirectoryTenantID, srv.managingTenant())
}

// reaches reports whether a caller of directory tenant tid may use the
// subscriptions of tenant t. A directory that withdrew its consent to the
// application has no service principal left to hold roles, so a token it
// issued before reaches nothing.
func (srv *server) reaches(tid string, t world.Tenant) bool {
	if !srv.sim.Consents(tid) {
		return false
	}
	return strings.EqualFold(t.DirectoryTenantID, tid) || srv.managed(t) && strings.EqualFold(tid, srv.managingTenant())
}

// authorized checks the caller may use the request's subscription,
// answering 403 as Resource Manager does when not. Unknown subscriptions
// pass, for the route to answer 404.
func (srv *server) authorized(w http.ResponseWriter, r *http.Request, c idp.Claims) bool {
	id := r.PathValue("subscriptionId")
	if id == "" {
		return true
	}
	t, _, ok := srv.subscription(id)
	if !ok || srv.reaches(c.TenantID, t) {
		return true
	}
	cloudsim.WriteError(w, http.StatusForbidden, "AuthorizationFailed", fmt.Sprintf(
		"The client '%s' with object id '%s' does not have authorization to perform action '%s' over scope '/subscriptions/%s' or the scope is invalid. If access was recently granted, please refresh your credentials.",
		c.ObjectID, c.ObjectID, action(r), id))
	return false
}

// action names the operation a request performs, as authorization
// failures do: e.g. Microsoft.Consumption/budgets/write.
func action(r *http.Request) string {
	verb := map[string]string{http.MethodPut: "write", http.MethodPatch: "write", http.MethodDelete: "delete", http.MethodPost: "action"}[r.Method]
	if verb == "" {
		verb = "read"
	}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	for i := len(segs) - 2; i >= 0; i-- {
		if strings.EqualFold(segs[i], "providers") && i+2 < len(segs) {
			if verb == "action" {
				// A POST acts on its last segment, e.g.
				// Microsoft.CostManagement/query/action.
				return segs[i+1] + "/" + strings.Join(segs[i+2:], "/") + "/action"
			}
			return segs[i+1] + "/" + segs[i+2] + "/" + verb
		}
	}
	return "Microsoft.Resources/subscriptions/" + verb
}

type authorizationJSON struct {
	PrincipalID            string `json:"principalId"`
	PrincipalIDDisplayName string `json:"principalIdDisplayName"`
	RoleDefinitionID       string `json:"roleDefinitionId"`
}

type registrationDefinitionPropsJSON struct {
	Description                string              `json:"description"`
	Authorizations             []authorizationJSON `json:"authorizations"`
	RegistrationDefinitionName string              `json:"registrationDefinitionName"`
	ManagedByTenantID          string              `json:"managedByTenantId"`
	ManagedByTenantName        string              `json:"managedByTenantName"`
	ManageeTenantID            string              `json:"manageeTenantId"`
	ManageeTenantName          string              `json:"manageeTenantName"`
	ProvisioningState          string              `json:"provisioningState"`
}

type registrationDefinitionJSON struct {
	ID         string                          `json:"id"`
	Type       string                          `json:"type"`
	Name       string                          `json:"name"`
	Plan       any                             `json:"plan"`
	Properties registrationDefinitionPropsJSON `json:"properties"`
}

type registrationAssignmentPropsJSON struct {
	RegistrationDefinitionID string                      `json:"registrationDefinitionId"`
	ProvisioningState        string                      `json:"provisioningState"`
	RegistrationDefinition   *registrationDefinitionJSON `json:"registrationDefinition,omitempty"`
}

type registrationAssignmentJSON struct {
	ID         string                          `json:"id"`
	Type       string                          `json:"type"`
	Name       string                          `json:"name"`
	Properties registrationAssignmentPropsJSON `json:"properties"`
}

// delegation is the definition and assignment of a delegated
// subscription. The definition's id is the same in every subscription of
// a tenant, as one offer deployed across them.
func (srv *server) delegation(t world.Tenant, subID string) (registrationDefinitionJSON, registrationAssignmentJSON) {
	managing := srv.sim.World().Tenants[0]
	defName := uuid.NewSHA1(lighthouse, []byte(strings.ToLower(managing.DirectoryTenantID+"/"+t.DirectoryTenantID))).String()
	principal := uuid.NewSHA1(lighthouse, []byte(strings.ToLower(managing.DirectoryTenantID+"/steward-operators"))).String()
	var auths []authorizationJSON
	for _, role := range []string{RoleReader, RoleCostManagementReader, RoleSecurityReader} {
		auths = append(auths, authorizationJSON{PrincipalID: principal, PrincipalIDDisplayName: "Steward Operators", RoleDefinitionID: role})
	}
	def := registrationDefinitionJSON{
		ID:   "/subscriptions/" + subID + "/providers/Microsoft.ManagedServices/registrationDefinitions/" + defName,
		Type: "Microsoft.ManagedServices/registrationDefinitions",
		Name: defName,
		Properties: registrationDefinitionPropsJSON{
			Description:                "Read access to cost, policy and security data for " + managing.Name,
			Authorizations:             auths,
			RegistrationDefinitionName: "Steward governance",
			ManagedByTenantID:          managing.DirectoryTenantID,
			ManagedByTenantName:        managing.Name,
			ManageeTenantID:            t.DirectoryTenantID,
			ManageeTenantName:          t.Name,
			ProvisioningState:          "Succeeded",
		},
	}
	asgName := uuid.NewSHA1(lighthouse, []byte(strings.ToLower(subID))).String()
	asg := registrationAssignmentJSON{
		ID:   "/subscriptions/" + subID + "/providers/Microsoft.ManagedServices/registrationAssignments/" + asgName,
		Type: "Microsoft.ManagedServices/registrationAssignments",
		Name: asgName,
		Properties: registrationAssignmentPropsJSON{
			RegistrationDefinitionID: def.ID,
			ProvisioningState:        "Succeeded",
		},
	}
	return def, asg
}

// delegated finds the request's subscription and whether it has a
// delegation, answering 404 or 400 when the request is wrong.
func (srv *server) delegated(w http.ResponseWriter, r *http.Request) (world.Tenant, string, bool) {
	subID := r.PathValue("subscriptionId")
	t, s, ok := srv.subscription(subID)
	if !ok {
		subscriptionNotFound(w, subID)
		return t, "", false
	}
	// The simulator has no filters to offer; saying so beats ignoring one.
	if r.URL.Query().Get("$filter") != "" {
		badRequest(w, "The simulator does not support $filter on Lighthouse listings.")
		return t, "", false
	}
	return t, s.ID, true
}

func (srv *server) registrationDefinitions(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	t, subID, ok := srv.delegated(w, r)
	if !ok {
		return
	}
	value := []registrationDefinitionJSON{}
	if srv.managed(t) {
		def, _ := srv.delegation(t, subID)
		value = append(value, def)
	}
	cloudsim.WriteJSON(w, map[string]any{"value": value})
}

func (srv *server) registrationAssignments(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	t, subID, ok := srv.delegated(w, r)
	if !ok {
		return
	}
	value := []registrationAssignmentJSON{}
	if srv.managed(t) {
		def, asg := srv.delegation(t, subID)
		if strings.EqualFold(r.URL.Query().Get("$expandRegistrationDefinition"), "true") {
			asg.Properties.RegistrationDefinition = &def
		}
		value = append(value, asg)
	}
	cloudsim.WriteJSON(w, map[string]any{"value": value})
}
