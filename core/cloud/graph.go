package cloud

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// GraphAudience is Microsoft Graph's resource identifier in the public
// cloud, the audience of its tokens. The simulated cloud issues and checks
// tokens for it too, so the credential requests the same scope from
// either.
const GraphAudience = "https://graph.microsoft.com"

// The Graph pipeline's name and version in the telemetry header.
const (
	graphModule  = "steward-graph"
	graphVersion = "v1.0.0"
)

// usersPageSize is the page of users asked for. Graph allows up to 999
// users a page, but only 120 when signInActivity is selected, as Users
// does.
const usersPageSize = "120"

// graphClients builds a Graph client per customer tenant on first use and
// keeps it, each on its tenant's credential.
type graphClients struct {
	opts     policy.ClientOptions
	creds    *credentials
	endpoint string
	audience string

	mu      sync.Mutex
	tenants map[string]*GraphClient
}

// newGraphClients keeps what Graph clients are built from: the shared
// client options (transport, retries, telemetry) and the credentials of
// the tenants.
func newGraphClients(cfg Config, opts policy.ClientOptions, ep Endpoints, creds *credentials) *graphClients {
	audience := GraphAudience
	if cfg.Provider == ProviderAzure && ep.Graph != PublicGraph {
		// A national cloud's Graph (graph.microsoft.us, …) accepts tokens
		// for its own URL only.
		audience = ep.Graph
	}
	return &graphClients{opts: opts, creds: creds, endpoint: ep.Graph, audience: audience, tenants: map[string]*GraphClient{}}
}

// GraphClient reads one customer tenant's directory through Microsoft
// Graph v1.0: users, MFA registration, directory roles, access reviews,
// domains, Intune devices, Conditional Access policies, the security
// defaults policy, Privileged Identity Management's role assignments and
// eligibilities, groups' members, Identity Protection's risky users, and
// applications and service principals with their credentials. It authenticates in that tenant with the
// application's client credentials, as a multi-tenant application
// consented in each customer tenant does, and shares the transport and
// retry policy of the Azure clients: throttled (429) and failed (5xx)
// requests are retried with backoff and jitter, waiting as long as
// Retry-After asks. Failures are *Error, like the Azure clients'. It is
// safe for concurrent use.
//
// Requests go through an Azure SDK pipeline (bearer token, retry,
// telemetry policies) rather than the Graph SDK: Steward reads a handful of
// collections, which does not warrant that SDK's size.
type GraphClient struct {
	tenantID string
	endpoint string
	pl       runtime.Pipeline
	// err is why the client could not be built; every call returns it.
	err error
}

// Graph is the Graph client of a customer tenant. A client that cannot be
// built (no Graph endpoint, a managed identity asked for another tenant)
// says why on every call.
func (c *Clients) Graph(tenantID string) *GraphClient {
	g := c.graph
	key := strings.ToLower(tenantID)
	g.mu.Lock()
	defer g.mu.Unlock()
	if gc, ok := g.tenants[key]; ok {
		return gc
	}
	gc := g.build(tenantID)
	g.tenants[key] = gc
	return gc
}

func (g *graphClients) build(tenantID string) *GraphClient {
	gc := &GraphClient{tenantID: tenantID, endpoint: g.endpoint}
	if g.endpoint == "" {
		gc.err = errors.New("cloud: graph: no Microsoft Graph endpoint is configured")
		return gc
	}
	cred, err := g.creds.in(tenantID)
	if err != nil {
		gc.err = fmt.Errorf("cloud: graph: %w", err)
		return gc
	}
	// The token policy runs on every try, as in the Azure clients, so a
	// retry after a long Retry-After pause gets a fresh token if needed.
	gc.pl = runtime.NewPipeline(graphModule, graphVersion, runtime.PipelineOptions{
		PerRetry: []policy.Policy{runtime.NewBearerTokenPolicy(cred, []string{g.audience + "/.default"}, nil)},
	}, &g.opts)
	return gc
}

// GraphUser is a user of the directory, a member or a guest.
type GraphUser struct {
	// ID is the user's object id.
	ID          string
	DisplayName string
	// UserPrincipalName is the sign-in name. A guest's is the external
	// form (alex_partner.example#EXT#@…), so read its address from Mail.
	UserPrincipalName string
	Mail              string
	// UserType is Member or Guest.
	UserType       string
	AccountEnabled bool
	Created        time.Time
	// LastSignIn is the last interactive sign-in; zero when the user has
	// never signed in.
	LastSignIn time.Time
}

type graphUserJSON struct {
	ID                string    `json:"id"`
	DisplayName       string    `json:"displayName"`
	UserPrincipalName string    `json:"userPrincipalName"`
	Mail              string    `json:"mail"`
	UserType          string    `json:"userType"`
	AccountEnabled    bool      `json:"accountEnabled"`
	CreatedDateTime   time.Time `json:"createdDateTime"`
	SignInActivity    *struct {
		LastSignInDateTime time.Time `json:"lastSignInDateTime"`
	} `json:"signInActivity"`
}

// Users calls fn for each user of the tenant, page by page. An error from
// fn stops the listing and is returned as is.
func (g *GraphClient) Users(ctx context.Context, fn func(GraphUser) error) error {
	return g.users(ctx, "list users", "", fn)
}

// Guests calls fn for each guest of the tenant, filtered by Graph.
func (g *GraphClient) Guests(ctx context.Context, fn func(GraphUser) error) error {
	return g.users(ctx, "list guests", "userType eq 'Guest'", fn)
}

// DisabledUsers calls fn for each user whose account is disabled, filtered
// by Graph.
func (g *GraphClient) DisabledUsers(ctx context.Context, fn func(GraphUser) error) error {
	return g.users(ctx, "list disabled users", "accountEnabled eq false", fn)
}

func (g *GraphClient) users(ctx context.Context, op, filter string, fn func(GraphUser) error) error {
	q := url.Values{
		// signInActivity is only returned when selected, and selecting
		// replaces the default properties, so all are named.
		"$select": {"id,displayName,userPrincipalName,mail,userType,accountEnabled,createdDateTime,signInActivity"},
		"$top":    {usersPageSize},
	}
	if filter != "" {
		q.Set("$filter", filter)
	}
	return graphList(ctx, g, g.op(op), "/users", q, func(u *graphUserJSON) error {
		out := GraphUser{ID: u.ID, DisplayName: u.DisplayName, UserPrincipalName: u.UserPrincipalName, Mail: u.Mail,
			UserType: u.UserType, AccountEnabled: u.AccountEnabled, Created: u.CreatedDateTime}
		if u.SignInActivity != nil {
			out.LastSignIn = u.SignInActivity.LastSignInDateTime
		}
		return fn(out)
	})
}

// RegistrationDetail is a user's authentication methods registration, from
// Graph's registration report.
type RegistrationDetail struct {
	// ID is the user's object id.
	ID                string
	UserPrincipalName string
	UserDisplayName   string
	// UserType is member or guest, in lower case as the report has it.
	UserType string
	// IsAdmin is set for holders of an administrative directory role.
	IsAdmin               bool
	IsMFACapable          bool
	IsMFARegistered       bool
	IsPasswordlessCapable bool
	IsSSPRRegistered      bool
	// MethodsRegistered are Graph's method names, e.g. fido2,
	// microsoftAuthenticatorPush, mobilePhone.
	MethodsRegistered []string
	// DefaultMFAMethod is the method MFA prompts for; "none" when the
	// user has none.
	DefaultMFAMethod string
	LastUpdated      time.Time
}

type registrationJSON struct {
	ID                    string    `json:"id"`
	UserPrincipalName     string    `json:"userPrincipalName"`
	UserDisplayName       string    `json:"userDisplayName"`
	UserType              string    `json:"userType"`
	IsAdmin               bool      `json:"isAdmin"`
	IsMfaCapable          bool      `json:"isMfaCapable"`
	IsMfaRegistered       bool      `json:"isMfaRegistered"`
	IsPasswordlessCapable bool      `json:"isPasswordlessCapable"`
	IsSsprRegistered      bool      `json:"isSsprRegistered"`
	MethodsRegistered     []string  `json:"methodsRegistered"`
	DefaultMfaMethod      string    `json:"defaultMfaMethod"`
	LastUpdatedDateTime   time.Time `json:"lastUpdatedDateTime"`
}

// RegistrationDetails calls fn for each user's MFA registration, page by
// page. An error from fn stops the listing and is returned as is.
func (g *GraphClient) RegistrationDetails(ctx context.Context, fn func(RegistrationDetail) error) error {
	return graphList(ctx, g, g.op("list MFA registration details"), "/reports/authenticationMethods/userRegistrationDetails", nil,
		func(r *registrationJSON) error {
			return fn(RegistrationDetail{ID: r.ID, UserPrincipalName: r.UserPrincipalName, UserDisplayName: r.UserDisplayName,
				UserType: r.UserType, IsAdmin: r.IsAdmin, IsMFACapable: r.IsMfaCapable, IsMFARegistered: r.IsMfaRegistered,
				IsPasswordlessCapable: r.IsPasswordlessCapable, IsSSPRRegistered: r.IsSsprRegistered,
				MethodsRegistered: r.MethodsRegistered, DefaultMFAMethod: r.DefaultMfaMethod, LastUpdated: r.LastUpdatedDateTime})
		})
}

// DirectoryRole is a directory role activated in the tenant.
type DirectoryRole struct {
	// ID is the role's object id in this tenant; RoleMembers takes it.
	ID          string
	DisplayName string
	Description string
	// TemplateID identifies the role across tenants, e.g.
	// 62e90394-69f5-4237-9190-012177145e10 for Global Administrator.
	TemplateID string
}

type directoryRoleJSON struct {
	ID             string `json:"id"`
	DisplayName    string `json:"displayName"`
	Description    string `json:"description"`
	RoleTemplateID string `json:"roleTemplateId"`
}

// DirectoryRoles calls fn for each directory role activated in the tenant.
// An error from fn stops the listing and is returned as is.
func (g *GraphClient) DirectoryRoles(ctx context.Context, fn func(DirectoryRole) error) error {
	return graphList(ctx, g, g.op("list directory roles"), "/directoryRoles", nil, func(r *directoryRoleJSON) error {
		return fn(DirectoryRole{ID: r.ID, DisplayName: r.DisplayName, Description: r.Description, TemplateID: r.RoleTemplateID})
	})
}

// RoleMember is a holder of a directory role.
type RoleMember struct {
	ID string
	// Type is the directory object's type: user, group or
	// servicePrincipal.
	Type        string
	DisplayName string
	// UserPrincipalName is set for users.
	UserPrincipalName string
}

type roleMemberJSON struct {
	ODataType         string `json:"@odata.type"`
	ID                string `json:"id"`
	DisplayName       string `json:"displayName"`
	UserPrincipalName string `json:"userPrincipalName"`
}

// member is the directory object as a RoleMember, its type without the
// "#microsoft.graph." prefix.
func (m *roleMemberJSON) member() RoleMember {
	return RoleMember{ID: m.ID, Type: strings.TrimPrefix(m.ODataType, "#microsoft.graph."), DisplayName: m.DisplayName,
		UserPrincipalName: m.UserPrincipalName}
}

// RoleMembers calls fn for each member of a directory role, given by the
// role's object id. An unknown role is ErrNotFound. An error from fn stops
// the listing and is returned as is.
func (g *GraphClient) RoleMembers(ctx context.Context, roleID string, fn func(RoleMember) error) error {
	return graphList(ctx, g, g.op("list members of directory role "+roleID), "/directoryRoles/"+url.PathEscape(roleID)+"/members", nil,
		func(m *roleMemberJSON) error { return fn(m.member()) })
}

// AccessReview is an access review definition with its instances, each
// with its decisions.
type AccessReview struct {
	ID          string
	DisplayName string
	// Status is NotStarted, InProgress, Completed and so on.
	Status    string
	Created   time.Time
	Instances []AccessReviewInstance
}

// AccessReviewInstance is one run of an access review.
type AccessReviewInstance struct {
	ID        string
	Status    string
	Start     time.Time
	End       time.Time
	Decisions []AccessReviewDecision
}

// AccessReviewDecision is a reviewer's decision about a principal.
type AccessReviewDecision struct {
	ID string
	// Decision is Approve, Deny, NotReviewed or DontKnow.
	Decision string
	// Recommendation is Graph's: Approve, Deny or NotAvailable.
	Recommendation             string
	PrincipalID                string
	PrincipalDisplayName       string
	PrincipalUserPrincipalName string
	// ReviewedBy is the reviewer's user principal name and Reviewed when
	// the decision was made; both are empty for an item not reviewed.
	ReviewedBy string
	Reviewed   time.Time
}

type accessReviewJSON struct {
	ID              string    `json:"id"`
	DisplayName     string    `json:"displayName"`
	Status          string    `json:"status"`
	CreatedDateTime time.Time `json:"createdDateTime"`
}

type accessReviewInstanceJSON struct {
	ID            string    `json:"id"`
	Status        string    `json:"status"`
	StartDateTime time.Time `json:"startDateTime"`
	EndDateTime   time.Time `json:"endDateTime"`
}

type identityJSON struct {
	ID                string `json:"id"`
	DisplayName       string `json:"displayName"`
	UserPrincipalName string `json:"userPrincipalName"`
}

type accessReviewDecisionJSON struct {
	ID               string       `json:"id"`
	Decision         string       `json:"decision"`
	Recommendation   string       `json:"recommendation"`
	ReviewedDateTime time.Time    `json:"reviewedDateTime"`
	ReviewedBy       identityJSON `json:"reviewedBy"`
	Principal        identityJSON `json:"principal"`
}

// AccessReviews calls fn for each access review definition of the tenant,
// with its instances and their decisions. A definition is passed once all
// of its decisions are read: a review's decisions are bounded by the
// principals it covers. An error from fn stops the listing and is returned
// as is.
func (g *GraphClient) AccessReviews(ctx context.Context, fn func(AccessReview) error) error {
	const definitions = "/identityGovernance/accessReviews/definitions"
	return graphList(ctx, g, g.op("list access reviews"), definitions, nil, func(d *accessReviewJSON) error {
		r := AccessReview{ID: d.ID, DisplayName: d.DisplayName, Status: d.Status, Created: d.CreatedDateTime}
		instances := definitions + "/" + url.PathEscape(d.ID) + "/instances"
		err := graphList(ctx, g, g.op("list instances of access review "+d.ID), instances, nil, func(in *accessReviewInstanceJSON) error {
			inst := AccessReviewInstance{ID: in.ID, Status: in.Status, Start: in.StartDateTime, End: in.EndDateTime}
			decisions := instances + "/" + url.PathEscape(in.ID) + "/decisions"
			err := graphList(ctx, g, g.op("list decisions of access review "+d.ID), decisions, nil, func(dec *accessReviewDecisionJSON) error {
				out := AccessReviewDecision{ID: dec.ID, Decision: dec.Decision, Recommendation: dec.Recommendation,
					PrincipalID: dec.Principal.ID, PrincipalDisplayName: dec.Principal.DisplayName,
					PrincipalUserPrincipalName: dec.Principal.UserPrincipalName,
					ReviewedBy:                 dec.ReviewedBy.UserPrincipalName, Reviewed: dec.ReviewedDateTime}
				inst.Decisions = append(inst.Decisions, out)
				return nil
			})
			r.Instances = append(r.Instances, inst)
			return err
		})
		if err != nil {
			return err
		}
		return fn(r)
	})
}

// Domain is a domain of the tenant.
type Domain struct {
	// Name is the domain name, Graph's id.
	Name string
	// AuthenticationType is Managed (cloud sign-in) or Federated.
	AuthenticationType string
	IsDefault          bool
	IsInitial          bool
	IsVerified         bool
}

type domainJSON struct {
	ID                 string `json:"id"`
	AuthenticationType string `json:"authenticationType"`
	IsDefault          bool   `json:"isDefault"`
	IsInitial          bool   `json:"isInitial"`
	IsVerified         bool   `json:"isVerified"`
}

// Domains calls fn for each domain of the tenant. An error from fn stops
// the listing and is returned as is.
func (g *GraphClient) Domains(ctx context.Context, fn func(Domain) error) error {
	return graphList(ctx, g, g.op("list domains"), "/domains", nil, func(d *domainJSON) error {
		return fn(Domain{Name: d.ID, AuthenticationType: d.AuthenticationType, IsDefault: d.IsDefault, IsInitial: d.IsInitial, IsVerified: d.IsVerified})
	})
}

// ManagedDevice is a device Intune manages.
type ManagedDevice struct {
	ID                string
	Name              string
	UserID            string
	UserPrincipalName string
	// OperatingSystem is e.g. Windows, macOS, iOS or Android.
	OperatingSystem string
	OSVersion       string
	// ComplianceState is compliant, noncompliant, unknown, inGracePeriod
	// and so on.
	ComplianceState string
	IsEncrypted     bool
	Model           string
	Manufacturer    string
	Enrolled        time.Time
	LastSync        time.Time
}

type managedDeviceJSON struct {
	ID                string    `json:"id"`
	DeviceName        string    `json:"deviceName"`
	UserID            string    `json:"userId"`
	UserPrincipalName string    `json:"userPrincipalName"`
	OperatingSystem   string    `json:"operatingSystem"`
	OSVersion         string    `json:"osVersion"`
	ComplianceState   string    `json:"complianceState"`
	IsEncrypted       bool      `json:"isEncrypted"`
	Model             string    `json:"model"`
	Manufacturer      string    `json:"manufacturer"`
	EnrolledDateTime  time.Time `json:"enrolledDateTime"`
	LastSyncDateTime  time.Time `json:"lastSyncDateTime"`
}

// ManagedDevices calls fn for each device Intune manages in the tenant,
// page by page. An error from fn stops the listing and is returned as is.
func (g *GraphClient) ManagedDevices(ctx context.Context, fn func(ManagedDevice) error) error {
	return graphList(ctx, g, g.op("list managed devices"), "/deviceManagement/managedDevices", nil, func(d *managedDeviceJSON) error {
		return fn(ManagedDevice{ID: d.ID, Name: d.DeviceName, UserID: d.UserID, UserPrincipalName: d.UserPrincipalName,
			OperatingSystem: d.OperatingSystem, OSVersion: d.OSVersion, ComplianceState: d.ComplianceState, IsEncrypted: d.IsEncrypted,
			Model: d.Model, Manufacturer: d.Manufacturer, Enrolled: d.EnrolledDateTime, LastSync: d.LastSyncDateTime})
	})
}

// ConditionalAccessPolicy is a Conditional Access policy of the tenant:
// whom and what it covers, and the controls it grants access with.
type ConditionalAccessPolicy struct {
	ID          string
	DisplayName string
	// State is enabled, disabled or enabledForReportingButNotEnforced
	// (report-only: evaluated and logged, never enforced).
	State string
	// IncludeUsers and ExcludeUsers are user object ids or the keywords
	// All, None and GuestsOrExternalUsers; the groups are group object
	// ids and the roles directory role template ids.
	IncludeUsers  []string
	ExcludeUsers  []string
	IncludeGroups []string
	ExcludeGroups []string
	IncludeRoles  []string
	ExcludeRoles  []string
	// IncludeApplications are application ids or All, Office365 or None.
	IncludeApplications []string
	// ClientAppTypes are all, browser, mobileAppsAndDesktopClients,
	// exchangeActiveSync or other: the last two are the legacy
	// authentication clients.
	ClientAppTypes []string
	// GrantOperator is AND or OR over BuiltInControls (block, mfa,
	// compliantDevice and so on); empty for a policy that grants nothing,
	// such as one of session controls only.
	GrantOperator   string
	BuiltInControls []string
	// AuthenticationStrength is the id of the authentication strength
	// the policy requires, a stronger form of mfa; empty when none.
	AuthenticationStrength string
}

type conditionalAccessPolicyJSON struct {
	ID          string `json:"id"`
	DisplayName string `json:"displayName"`
	State       string `json:"state"`
	Conditions  struct {
		ClientAppTypes []string `json:"clientAppTypes"`
		Applications   *struct {
			IncludeApplications []string `json:"includeApplications"`
		} `json:"applications"`
		Users *struct {
			IncludeUsers  []string `json:"includeUsers"`
			ExcludeUsers  []string `json:"excludeUsers"`
			IncludeGroups []string `json:"includeGroups"`
			ExcludeGroups []string `json:"excludeGroups"`
			IncludeRoles  []string `json:"includeRoles"`
			ExcludeRoles  []string `json:"excludeRoles"`
		} `json:"users"`
	} `json:"conditions"`
	GrantControls *struct {
		Operator               string   `json:"operator"`
		BuiltInControls        []string `json:"builtInControls"`
		AuthenticationStrength *struct {
			ID string `json:"id"`
		} `json:"authenticationStrength"`
	} `json:"grantControls"`
}

// ConditionalAccessPolicies calls fn for each Conditional Access policy of
// the tenant, whatever its state. An error from fn stops the listing and
// is returned as is.
func (g *GraphClient) ConditionalAccessPolicies(ctx context.Context, fn func(ConditionalAccessPolicy) error) error {
	return graphList(ctx, g, g.op("list Conditional Access policies"), "/identity/conditionalAccess/policies", nil,
		func(p *conditionalAccessPolicyJSON) error {
			out := ConditionalAccessPolicy{ID: p.ID, DisplayName: p.DisplayName, State: p.State, ClientAppTypes: p.Conditions.ClientAppTypes}
			if a := p.Conditions.Applications; a != nil {
				out.IncludeApplications = a.IncludeApplications
			}
			if u := p.Conditions.Users; u != nil {
				out.IncludeUsers, out.ExcludeUsers = u.IncludeUsers, u.ExcludeUsers
				out.IncludeGroups, out.ExcludeGroups = u.IncludeGroups, u.ExcludeGroups
				out.IncludeRoles, out.ExcludeRoles = u.IncludeRoles, u.ExcludeRoles
			}
			if gc := p.GrantControls; gc != nil {
				out.GrantOperator, out.BuiltInControls = gc.Operator, gc.BuiltInControls
				if gc.AuthenticationStrength != nil {
					out.AuthenticationStrength = gc.AuthenticationStrength.ID
				}
			}
			return fn(out)
		})
}

// SecurityDefaults reports whether the tenant enforces Entra ID's
// security defaults, from its identitySecurityDefaultsEnforcementPolicy.
func (g *GraphClient) SecurityDefaults(ctx context.Context) (bool, error) {
	if g.err != nil {
		return false, g.err
	}
	var p struct {
		IsEnabled bool `json:"isEnabled"`
	}
	if err := g.get(ctx, g.endpoint+"/v1.0/policies/identitySecurityDefaultsEnforcementPolicy", &p); err != nil {
		return false, wrap(g.op("read the security defaults policy"), err)
	}
	return p.IsEnabled, nil
}

// RoleScheduleInstance is a directory role assignment as Privileged
// Identity Management holds it: active (usable now) or eligible (to be
// activated when needed), given to a user, a group or a service principal.
type RoleScheduleInstance struct {
	ID          string
	PrincipalID string
	// PrincipalType is user, group or servicePrincipal; PrincipalUPN is
	// set for users.
	PrincipalType  string
	PrincipalName  string
	PrincipalUPN   string
	RoleTemplateID string
	// AssignmentType is Assigned or Activated for an active assignment,
	// empty for an eligibility.
	AssignmentType string
	// MemberType is Direct, Group (through a group's membership) or
	// Inherited.
	MemberType string
	Start      time.Time
	// End is zero for a permanent assignment.
	End time.Time
}

type roleScheduleInstanceJSON struct {
	ID               string          `json:"id"`
	PrincipalID      string          `json:"principalId"`
	RoleDefinitionID string          `json:"roleDefinitionId"`
	AssignmentType   string          `json:"assignmentType"`
	MemberType       string          `json:"memberType"`
	StartDateTime    time.Time       `json:"startDateTime"`
	EndDateTime      *time.Time      `json:"endDateTime"`
	Principal        *roleMemberJSON `json:"principal"`
}

// ActiveRoleAssignments calls fn for each active assignment of the role
// given by its template id, with its principal. An error from fn stops
// the listing and is returned as is.
func (g *GraphClient) ActiveRoleAssignments(ctx context.Context, roleTemplateID string, fn func(RoleScheduleInstance) error) error {
	return g.roleInstances(ctx, "list active assignments of role "+roleTemplateID, "/roleManagement/directory/roleAssignmentScheduleInstances", roleTemplateID, fn)
}

// EligibleRoleAssignments calls fn for each eligibility for the role given
// by its template id, with its principal. An error from fn stops the
// listing and is returned as is.
func (g *GraphClient) EligibleRoleAssignments(ctx context.Context, roleTemplateID string, fn func(RoleScheduleInstance) error) error {
	return g.roleInstances(ctx, "list eligible assignments of role "+roleTemplateID, "/roleManagement/directory/roleEligibilityScheduleInstances", roleTemplateID, fn)
}

func (g *GraphClient) roleInstances(ctx context.Context, op, path, roleTemplateID string, fn func(RoleScheduleInstance) error) error {
	q := url.Values{"$filter": {"roleDefinitionId eq '" + strings.ReplaceAll(roleTemplateID, "'", "''") + "'"}, "$expand": {"principal"}}
	return graphList(ctx, g, g.op(op), path, q, func(in *roleScheduleInstanceJSON) error {
		out := RoleScheduleInstance{ID: in.ID, PrincipalID: in.PrincipalID, RoleTemplateID: in.RoleDefinitionID,
			AssignmentType: in.AssignmentType, MemberType: in.MemberType, Start: in.StartDateTime}
		if in.EndDateTime != nil {
			out.End = *in.EndDateTime
		}
		if p := in.Principal; p != nil {
			out.PrincipalType = strings.TrimPrefix(p.ODataType, "#microsoft.graph.")
			out.PrincipalName, out.PrincipalUPN = p.DisplayName, p.UserPrincipalName
		}
		return fn(out)
	})
}

// GroupMembers calls fn for each member of a group, given by its object
// id, and of the groups nested in it. An unknown group is ErrNotFound. An
// error from fn stops the listing and is returned as is.
func (g *GraphClient) GroupMembers(ctx context.Context, groupID string, fn func(RoleMember) error) error {
	return graphList(ctx, g, g.op("list members of group "+groupID), "/groups/"+url.PathEscape(groupID)+"/transitiveMembers", nil,
		func(m *roleMemberJSON) error { return fn(m.member()) })
}

// RiskyUser is a user Identity Protection judged at risk, now or before.
type RiskyUser struct {
	// ID is the user's object id.
	ID                string
	UserDisplayName   string
	UserPrincipalName string
	// RiskLevel is low, medium, high, hidden or none; RiskState atRisk,
	// confirmedCompromised, remediated, dismissed, confirmedSafe or none;
	// RiskDetail why the state is what it is.
	RiskLevel   string
	RiskState   string
	RiskDetail  string
	LastUpdated time.Time
}

type riskyUserJSON struct {
	ID                      string    `json:"id"`
	UserDisplayName         string    `json:"userDisplayName"`
	UserPrincipalName       string    `json:"userPrincipalName"`
	RiskLevel               string    `json:"riskLevel"`
	RiskState               string    `json:"riskState"`
	RiskDetail              string    `json:"riskDetail"`
	RiskLastUpdatedDateTime time.Time `json:"riskLastUpdatedDateTime"`
}

// RiskyUsers calls fn for each user Identity Protection has judged at
// risk, whatever its state now. An error from fn stops the listing and is
// returned as is.
func (g *GraphClient) RiskyUsers(ctx context.Context, fn func(RiskyUser) error) error {
	return graphList(ctx, g, g.op("list risky users"), "/identityProtection/riskyUsers", nil, func(r *riskyUserJSON) error {
		return fn(RiskyUser{ID: r.ID, UserDisplayName: r.UserDisplayName, UserPrincipalName: r.UserPrincipalName, RiskLevel: r.RiskLevel,
			RiskState: r.RiskState, RiskDetail: r.RiskDetail, LastUpdated: r.RiskLastUpdatedDateTime})
	})
}

// AppRegistration is an application registered in the tenant, or a
// service principal in it, with its credentials.
type AppRegistration struct {
	// ID is the object's id, AppID the application's (client) id.
	ID          string
	AppID       string
	DisplayName string
	// Kind is application or servicePrincipal.
	Kind        string
	Credentials []AppCredential
}

// AppCredential is a client secret (Type password) or a certificate (Type
// certificate) of an application or a service principal.
type AppCredential struct {
	KeyID       string
	Type        string
	DisplayName string
	Start       time.Time
	End         time.Time
}

type credentialJSON struct {
	KeyID         string    `json:"keyId"`
	DisplayName   string    `json:"displayName"`
	StartDateTime time.Time `json:"startDateTime"`
	EndDateTime   time.Time `json:"endDateTime"`
}

type appRegistrationJSON struct {
	ID                  string           `json:"id"`
	AppID               string           `json:"appId"`
	DisplayName         string           `json:"displayName"`
	PasswordCredentials []credentialJSON `json:"passwordCredentials"`
	KeyCredentials      []credentialJSON `json:"keyCredentials"`
}

// Applications calls fn for each application registered in the tenant,
// with its client secrets and certificates. An error from fn stops the
// listing and is returned as is.
func (g *GraphClient) Applications(ctx context.Context, fn func(AppRegistration) error) error {
	return g.apps(ctx, "list applications", "/applications", "application", fn)
}

// ServicePrincipals calls fn for each service principal of the tenant,
// with its client secrets and certificates. An error from fn stops the
// listing and is returned as is.
func (g *GraphClient) ServicePrincipals(ctx context.Context, fn func(AppRegistration) error) error {
	return g.apps(ctx, "list service principals", "/servicePrincipals", "servicePrincipal", fn)
}

func (g *GraphClient) apps(ctx context.Context, op, path, kind string, fn func(AppRegistration) error) error {
	q := url.Values{"$select": {"id,appId,displayName,passwordCredentials,keyCredentials"}}
	return graphList(ctx, g, g.op(op), path, q, func(a *appRegistrationJSON) error {
		out := AppRegistration{ID: a.ID, AppID: a.AppID, DisplayName: a.DisplayName, Kind: kind}
		for _, set := range []struct {
			typ   string
			creds []credentialJSON
		}{{"password", a.PasswordCredentials}, {"certificate", a.KeyCredentials}} {
			for _, c := range set.creds {
				out.Credentials = append(out.Credentials, AppCredential{KeyID: c.KeyID, Type: set.typ, DisplayName: c.DisplayName,
					Start: c.StartDateTime, End: c.EndDateTime})
			}
		}
		return fn(out)
	})
}

func (g *GraphClient) op(what string) string { return what + " in tenant " + g.tenantID }

// graphPage is a page of a Graph collection.
type graphPage[T any] struct {
	Value    []*T   `json:"value"`
	NextLink string `json:"@odata.nextLink"`
}

// graphList calls fn for each item of the collection at path (under v1.0)
// with the query, following @odata.nextLink a page at a time. A failed
// page's error is op's *Error; fn's error is returned as is.
func graphList[T any](ctx context.Context, g *GraphClient, op, path string, query url.Values, fn func(*T) error) error {
	if g.err != nil {
		return g.err
	}
	first := g.endpoint + "/v1.0" + path
	if len(query) > 0 {
		// Encode writes spaces as "+", a space only to form decoding; in
		// a URL's query "+" is itself, so OData wants %20.
		first += "?" + strings.ReplaceAll(query.Encode(), "+", "%20")
	}
	pager := runtime.NewPager(runtime.PagingHandler[graphPage[T]]{
		More: func(p graphPage[T]) bool { return p.NextLink != "" },
		Fetcher: func(ctx context.Context, cur *graphPage[T]) (graphPage[T], error) {
			next := first
			if cur != nil {
				next = cur.NextLink
				if err := g.sameService(next); err != nil {
					return graphPage[T]{}, err
				}
			}
			var page graphPage[T]
			return page, g.get(ctx, next, &page)
		},
	})
	return walk(ctx, pager, func(p graphPage[T]) []*T { return p.Value }, fn, failAs(op))
}

// sameService refuses a next link off the Graph endpoint: the pipeline
// would send the tenant's token wherever the link points.
func (g *GraphClient) sameService(link string) error {
	u, err := url.Parse(link)
	if err != nil {
		return fmt.Errorf("next link %q: %w", link, err)
	}
	base, err := url.Parse(g.endpoint)
	if err != nil {
		return err
	}
	if !strings.EqualFold(u.Scheme, base.Scheme) || !strings.EqualFold(u.Host, base.Host) {
		return fmt.Errorf("next link %q leaves %s", link, g.endpoint)
	}
	return nil
}

func (g *GraphClient) get(ctx context.Context, link string, v any) error {
	req, err := runtime.NewRequest(ctx, http.MethodGet, link)
	if err != nil {
		return err
	}
	req.Raw().Header.Set("Accept", "application/json")
	resp, err := g.pl.Do(req)
	if err != nil {
		return err
	}
	if !runtime.HasStatusCode(resp, http.StatusOK) {
		return runtime.NewResponseError(resp)
	}
	return runtime.UnmarshalAsJSON(resp, v)
}
