package graph

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Conditional Access policies and the security defaults policy.

func (srv *server) registerPolicies(v string) {
	srv.handle("GET /"+v+"/identity/conditionalAccess/policies", listConditionalAccessPolicies)
	srv.handle("GET /"+v+"/identity/conditionalAccess/policies/{id}", getConditionalAccessPolicy)
	srv.handle("GET /"+v+"/policies/identitySecurityDefaultsEnforcementPolicy", getSecurityDefaults)
}

// conditionalAccessPolicyJSON is a conditionalAccessPolicy with the
// properties Graph always returns; the conditions the world does not
// model (platforms, locations, risk levels, devices) are empty, as in a
// policy that sets none.
type conditionalAccessPolicyJSON struct {
	ID               string           `json:"id"`
	TemplateID       *string          `json:"templateId"`
	DisplayName      string           `json:"displayName"`
	CreatedDateTime  string           `json:"createdDateTime"`
	ModifiedDateTime *string          `json:"modifiedDateTime"`
	State            string           `json:"state"`
	SessionControls  *struct{}        `json:"sessionControls"`
	Conditions       caConditionsJSON `json:"conditions"`
	GrantControls    *caGrantsJSON    `json:"grantControls"`
}

type caConditionsJSON struct {
	UserRiskLevels             []string             `json:"userRiskLevels"`
	SignInRiskLevels           []string             `json:"signInRiskLevels"`
	ClientAppTypes             []string             `json:"clientAppTypes"`
	ServicePrincipalRiskLevels []string             `json:"servicePrincipalRiskLevels"`
	Platforms                  *struct{}            `json:"platforms"`
	Locations                  *struct{}            `json:"locations"`
	Devices                    *struct{}            `json:"devices"`
	ClientApplications         *struct{}            `json:"clientApplications"`
	Applications               caApplicationsJSON   `json:"applications"`
	Users                      caUsersConditionJSON `json:"users"`
}

type caApplicationsJSON struct {
	IncludeApplications                         []string `json:"includeApplications"`
	ExcludeApplications                         []string `json:"excludeApplications"`
	IncludeUserActions                          []string `json:"includeUserActions"`
	IncludeAuthenticationContextClassReferences []string `json:"includeAuthenticationContextClassReferences"`
}

type caUsersConditionJSON struct {
	IncludeUsers  []string `json:"includeUsers"`
	ExcludeUsers  []string `json:"excludeUsers"`
	IncludeGroups []string `json:"includeGroups"`
	ExcludeGroups []string `json:"excludeGroups"`
	IncludeRoles  []string `json:"includeRoles"`
	ExcludeRoles  []string `json:"excludeRoles"`
}

type caGrantsJSON struct {
	Operator                    string    `json:"operator"`
	BuiltInControls             []string  `json:"builtInControls"`
	CustomAuthenticationFactors []string  `json:"customAuthenticationFactors"`
	TermsOfUse                  []string  `json:"termsOfUse"`
	AuthenticationStrength      *struct{} `json:"authenticationStrength"`
}

// policyCreated is when the simulator says every policy was created: a
// fixed day, as the world does not say.
var policyCreated = time.Date(2024, 3, 1, 9, 30, 0, 0, time.UTC)

// policiesOf are the call's tenant's policies in the world's order.
func (c *call) policiesOf() []conditionalAccessPolicyJSON {
	out := []conditionalAccessPolicyJSON{}
	for _, p := range c.world.ConditionalAccessPolicies {
		if strings.EqualFold(p.DirectoryTenantID, c.tenant.DirectoryTenantID) {
			out = append(out, c.policyOf(p))
		}
	}
	return out
}

func (c *call) policyOf(p world.ConditionalAccessPolicy) conditionalAccessPolicyJSON {
	apps := p.ClientAppTypes
	if len(apps) == 0 {
		apps = []string{"all"}
	}
	operator := p.GrantOperator
	if operator == "" {
		operator = "OR"
	}
	return conditionalAccessPolicyJSON{
		ID:              p.ID,
		DisplayName:     p.Name,
		CreatedDateTime: stamp(policyCreated),
		State:           p.State,
		Conditions: caConditionsJSON{
			UserRiskLevels: []string{}, SignInRiskLevels: []string{}, ServicePrincipalRiskLevels: []string{},
			ClientAppTypes: apps,
			Applications: caApplicationsJSON{IncludeApplications: []string{"All"}, ExcludeApplications: []string{},
				IncludeUserActions: []string{}, IncludeAuthenticationContextClassReferences: []string{}},
			Users: caUsersConditionJSON{IncludeUsers: c.principals(p.IncludeUsers), ExcludeUsers: c.principals(p.ExcludeUsers),
				IncludeGroups: []string{}, ExcludeGroups: []string{}, IncludeRoles: nonNil(p.IncludeRoles), ExcludeRoles: []string{}},
		},
		GrantControls: &caGrantsJSON{Operator: operator, BuiltInControls: p.GrantControls, CustomAuthenticationFactors: []string{}, TermsOfUse: []string{}},
	}
}

// principals are a policy's users as Graph names them: the keywords as
// they are, a user of the directory by its object id.
func (c *call) principals(users []string) []string {
	out := []string{}
	for _, name := range users {
		id := name
		for _, u := range c.users() {
			if strings.EqualFold(u.Email, name) {
				id = idp.ObjectID(u)
				break
			}
		}
		out = append(out, id)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func listConditionalAccessPolicies(c *call) {
	listOf(c, "identity/conditionalAccess/policies", c.policiesOf(), func(p conditionalAccessPolicyJSON) map[string]any {
		return map[string]any{"state": p.State, "displayName": p.DisplayName}
	})
}

func getConditionalAccessPolicy(c *call) {
	id := c.r.PathValue("id")
	for _, p := range c.policiesOf() {
		if strings.EqualFold(p.ID, id) {
			c.entity("identity/conditionalAccess/policies/$entity", p)
			return
		}
	}
	c.notFound(id)
}

// securityDefaultsID is the security defaults policy's id, the same in
// every directory.
const securityDefaultsID = "00000000-0000-0000-0000-000000000005"

func getSecurityDefaults(c *call) {
	c.entity("policies/identitySecurityDefaultsEnforcementPolicy/$entity", map[string]any{
		"id":          securityDefaultsID,
		"displayName": "Security Defaults",
		"description": "Security defaults is a set of basic identity security mechanisms recommended by Microsoft. When enabled, these recommendations will be automatically enforced in your organization. Administrators and users will be better protected from common identity related attacks.",
		"isEnabled":   c.tenant.SecurityDefaults,
	})
}

// entity answers one entity: its properties with the OData context of
// path.
func (c *call) entity(path string, v any) {
	b, err := json.Marshal(v)
	body := map[string]any{}
	if err == nil {
		err = json.Unmarshal(b, &body)
	}
	if err != nil {
		c.error(http.StatusInternalServerError, "generalException", err.Error())
		return
	}
	body["@odata.context"] = c.context(path)
	c.ok(body)
}
