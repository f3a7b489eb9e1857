package onboarding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/host/tenancy"
)

// Bounds of the verification form's free-text fields, in characters.
const (
	MaxTenantNameLen  = 200
	MaxDescriptionLen = 2000
)

// Request is the verification form: which customer tenant and subscription
// to take on, and what to call the tenant.
type Request struct {
	TenantName string
	// DirectoryTenantID is the customer's cloud directory tenant id.
	DirectoryTenantID string
	SubscriptionID    string
	Description       string
	// Direct is a tenant read with Steward's application's own token in its
	// directory, after its administrator granted admin consent there,
	// rather than through Azure Lighthouse delegation; it is registered
	// with use_delegation false.
	Direct bool
}

// FieldError names a form field and what is wrong with it.
type FieldError struct {
	Field   string
	Message string
}

// Clean trims the request's fields and checks them, returning every
// problem so a form can show them all at once. Ids are returned lower-case,
// as Azure prints them, so the same tenant is not registered twice under
// two spellings.
func (r Request) Clean() (Request, []FieldError) {
	var errs []FieldError
	r.TenantName = strings.TrimSpace(r.TenantName)
	r.Description = strings.TrimSpace(r.Description)
	switch n := utf8.RuneCountInString(r.TenantName); {
	case n == 0:
		errs = append(errs, FieldError{"tenant_name", "tenant_name is required"})
	case n > MaxTenantNameLen || !utf8.ValidString(r.TenantName) || strings.ContainsFunc(r.TenantName, unicode.IsControl):
		errs = append(errs, FieldError{"tenant_name", fmt.Sprintf("tenant_name must be at most %d characters without control characters", MaxTenantNameLen)})
	}
	var ok bool
	if r.DirectoryTenantID, ok = cleanGUID(r.DirectoryTenantID); !ok {
		errs = append(errs, FieldError{"tenant_id", "tenant_id must be the directory tenant id, a GUID such as 00000000-0000-0000-0000-000000000000"})
	}
	if r.SubscriptionID, ok = cleanGUID(r.SubscriptionID); !ok {
		errs = append(errs, FieldError{"subscription_id", "subscription_id must be a GUID such as 00000000-0000-0000-0000-000000000000"})
	}
	if utf8.RuneCountInString(r.Description) > MaxDescriptionLen || !utf8.ValidString(r.Description) {
		errs = append(errs, FieldError{"description", fmt.Sprintf("description must be at most %d characters", MaxDescriptionLen)})
	}
	return r, errs
}

// cleanGUID accepts only the hyphenated 36-character form Azure shows, not
// the braced or URN forms uuid.Parse also takes.
func cleanGUID(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 36 {
		return s, false
	}
	if _, err := uuid.Parse(s); err != nil {
		return s, false
	}
	return strings.ToLower(s), true
}

// Cloud is what verification asks the cloud; *cloud.Clients provides it.
type Cloud interface {
	CheckDelegation(ctx context.Context, subscriptionID string) error
	Subscription(ctx context.Context, id string) (cloud.Subscription, error)
	// Access resolves how a tenant is read; a direct tenant with the
	// application's token in its own directory.
	Access(ctx context.Context, tenants []cloud.Tenant) []cloud.TenantAccess
	// CheckGraph reads Microsoft Graph in a directory with the
	// application's token there.
	CheckGraph(ctx context.Context, directoryTenantID string) error
	AdminConsentURL(directoryTenantID, redirectURI string) (string, error)
}

// Tenants stores the verified tenant; *tenancy.Store provides it.
type Tenants interface {
	CreateTenant(ctx context.Context, t *tenancy.Tenant) error
}

// Outcome is how a verification ended.
type Outcome int

// The outcomes, each with its own HTTP status at the routes.
const (
	// Created: every check passed and the tenant was recorded.
	Created Outcome = iota
	// Failed: a check failed; nothing was recorded.
	Failed
	// Duplicate: the checks passed but the directory tenant is already
	// managed.
	Duplicate
	// Unavailable: the cloud could not answer (throttled, down, or
	// Steward's own credential refused); nothing was recorded and a retry
	// may succeed.
	Unavailable
)

// Check is one verification step and its result.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

// Check names. A delegated tenant is checked for CheckNotManagingTenant,
// CheckDelegationReach, CheckDirectory, CheckGraph and CheckNotRegistered;
// a direct one for CheckConsent, CheckSubscriptionRead, CheckDirectory,
// CheckGraph and CheckNotRegistered.
const (
	CheckNotManagingTenant = "not_managing_tenant"
	CheckDelegationReach   = "subscription_reachable_by_delegation"
	// CheckConsent: the directory issues Steward's application a token,
	// which it does once its administrator granted admin consent.
	CheckConsent = "application_consented_in_directory"
	// CheckSubscriptionRead: Resource Manager lets the application's own
	// token read the subscription (a reader role assigned to it).
	CheckSubscriptionRead = "subscription_readable_in_directory"
	CheckDirectory        = "subscription_in_directory_tenant"
	// CheckGraph: Microsoft Graph answers the application in the
	// directory. Lighthouse delegation does not reach Entra ID, so a
	// delegated tenant needs the consent too.
	CheckGraph         = "graph_readable_in_directory"
	CheckNotRegistered = "tenant_not_already_managed"
)

// Result is a verification's report. Reason is the first failure's detail,
// empty on success.
type Result struct {
	Outcome Outcome
	Tenant  *tenancy.Tenant
	Checks  []Check
	Reason  string
}

// Verifier checks a delegation through the cloud and records the tenant.
type Verifier struct {
	// Cloud is nil when the host has no cloud configured; every
	// verification then fails as Unavailable.
	Cloud   Cloud
	Tenants Tenants
	// ManagingTenantID is Steward's own directory tenant, which cannot
	// delegate to itself.
	ManagingTenantID string
	// ConsentRedirectURI is where the admin consent URLs a failed check
	// names send the administrator back to.
	ConsentRedirectURI string
}

// Verify runs the checks on a cleaned request, in order, stopping at the
// first failure, and creates the tenant when all pass: with use_delegation
// for a delegated request, without for a direct one. The returned error is
// for failures of Steward's own store only.
func (v *Verifier) Verify(ctx context.Context, r Request) (Result, error) {
	c := &checks{}
	if v.Cloud == nil {
		first := CheckDelegationReach
		if r.Direct {
			first = CheckConsent
		}
		return c.fail(Unavailable, first, "no cloud is configured on this Steward host; access cannot be checked"), nil
	}
	var ok bool
	if r.Direct {
		ok = v.direct(ctx, c, r)
	} else {
		ok = v.delegated(ctx, c, r)
	}
	if !ok {
		return c.res, nil
	}
	if !v.graph(ctx, c, r) {
		return c.res, nil
	}
	t := &tenancy.Tenant{Name: r.TenantName, Description: r.Description, DirectoryTenantID: r.DirectoryTenantID,
		SubscriptionID: r.SubscriptionID, UseDelegation: !r.Direct, IsActive: true}
	err := v.Tenants.CreateTenant(ctx, t)
	if errors.Is(err, tenancy.ErrDuplicate) {
		return c.fail(Duplicate, CheckNotRegistered, "directory tenant "+r.DirectoryTenantID+" is already managed by Steward"), nil
	}
	if err != nil {
		return Result{}, err
	}
	c.pass(CheckNotRegistered, "tenant recorded as "+t.ID)
	c.res.Outcome, c.res.Tenant = Created, t
	return c.res, nil
}

// checks collects a verification's checks as they run.
type checks struct{ res Result }

func (c *checks) pass(name, detail string) {
	c.res.Checks = append(c.res.Checks, Check{Name: name, Passed: true, Detail: detail})
}

// fail records the failed check that ends the verification, and returns
// the result.
func (c *checks) fail(o Outcome, name, detail string) Result {
	c.res.Checks = append(c.res.Checks, Check{Name: name, Detail: detail})
	c.res.Outcome, c.res.Reason = o, detail
	return c.res
}

// delegated checks that Steward's managing tenant reaches the subscription
// through Azure Lighthouse and that it belongs to the directory named.
func (v *Verifier) delegated(ctx context.Context, c *checks, r Request) bool {
	if v.ManagingTenantID != "" && strings.EqualFold(r.DirectoryTenantID, v.ManagingTenantID) {
		c.fail(Failed, CheckNotManagingTenant, "tenant "+r.DirectoryTenantID+" is Steward's managing tenant; it needs no delegation and cannot be onboarded through it "+
			"(register it without delegation)")
		return false
	}
	c.pass(CheckNotManagingTenant, "tenant "+r.DirectoryTenantID+" is not Steward's managing tenant")
	err := v.Cloud.CheckDelegation(ctx, r.SubscriptionID)
	switch {
	case errors.Is(err, cloud.ErrNotDelegated):
		c.fail(Failed, CheckDelegationReach, "Azure Resource Manager refused Steward access to subscription "+r.SubscriptionID+
			": it is not delegated to Steward's managing tenant, or the delegation grants no reading role. Deploy the onboarding template to the subscription and retry. ("+err.Error()+")")
		return false
	case errors.Is(err, cloud.ErrNotFound):
		c.fail(Failed, CheckDelegationReach, "subscription "+r.SubscriptionID+" does not exist ("+err.Error()+")")
		return false
	case err != nil:
		c.fail(Unavailable, CheckDelegationReach, "the cloud could not be asked about subscription "+r.SubscriptionID+"; retry shortly ("+err.Error()+")")
		return false
	}
	c.pass(CheckDelegationReach, "Steward's managing tenant reaches subscription "+r.SubscriptionID)
	sub, err := v.Cloud.Subscription(ctx, r.SubscriptionID)
	if err != nil {
		c.fail(Unavailable, CheckDirectory, "the cloud could not be asked about subscription "+r.SubscriptionID+"; retry shortly ("+err.Error()+")")
		return false
	}
	return v.inDirectory(c, r, sub)
}

// inDirectory checks the subscription belongs to the directory named.
// Without it a subscription Steward reaches could be registered under
// another customer's directory id.
func (v *Verifier) inDirectory(c *checks, r Request, sub cloud.Subscription) bool {
	if !strings.EqualFold(sub.TenantID, r.DirectoryTenantID) {
		c.fail(Failed, CheckDirectory, fmt.Sprintf("subscription %s belongs to directory tenant %s, not %s", r.SubscriptionID, sub.TenantID, r.DirectoryTenantID))
		return false
	}
	c.pass(CheckDirectory, fmt.Sprintf("subscription %s (%s) belongs to directory tenant %s", r.SubscriptionID, sub.DisplayName, r.DirectoryTenantID))
	return true
}

// direct checks that the directory issues Steward's application a token
// (its admin consent), that Resource Manager lets that token read the
// subscription, and that it belongs to the directory, through the
// resolution every sync uses (cloud.Clients.Access).
func (v *Verifier) direct(ctx context.Context, c *checks, r Request) bool {
	dir, sub := r.DirectoryTenantID, r.SubscriptionID
	a := v.Cloud.Access(ctx, []cloud.Tenant{{Name: r.TenantName, DirectoryTenantID: dir, SubscriptionID: sub}})[0]
	var authErr *azidentity.AuthenticationFailedError
	switch {
	case refusedToken(a.Err):
		c.fail(Failed, CheckConsent, fmt.Sprintf("directory %s refused Steward's application a token: it has not granted the application admin consent (%s). %s and retry.",
			dir, refusalOf(a.Err), v.consentFix(dir)))
		return false
	case errors.As(a.Err, &authErr):
		c.fail(Unavailable, CheckConsent, "the identity provider could not be asked for a token of directory "+dir+"; retry shortly ("+a.Err.Error()+")")
		return false
	}
	c.pass(CheckConsent, "directory "+dir+" issues Steward's application a token")
	switch {
	case errors.Is(a.Err, cloud.ErrForbidden):
		c.fail(Failed, CheckSubscriptionRead, "Azure Resource Manager refused Steward's application subscription "+sub+" (403): assign the application Reader and Cost Management Reader "+
			"on the subscription in directory "+dir+" and retry")
		return false
	case errors.Is(a.Err, cloud.ErrNotFound):
		c.fail(Failed, CheckSubscriptionRead, "subscription "+sub+" does not exist in directory "+dir)
		return false
	case a.Err != nil:
		c.fail(Unavailable, CheckSubscriptionRead, "the cloud could not be asked about subscription "+sub+"; retry shortly ("+a.Err.Error()+")")
		return false
	case !slices.ContainsFunc(a.Subscriptions, func(id string) bool { return strings.EqualFold(id, sub) }):
		c.fail(Failed, CheckSubscriptionRead, fmt.Sprintf("directory %s lists %d other subscriptions to Steward's application but not %s: assign the application Reader and "+
			"Cost Management Reader on it and retry", dir, len(a.Subscriptions), sub))
		return false
	}
	c.pass(CheckSubscriptionRead, "Steward's application reads subscription "+sub+" with its token of directory "+dir)
	s, err := a.Subscription(ctx, sub)
	if err != nil {
		c.fail(Unavailable, CheckDirectory, "the cloud could not be asked about subscription "+sub+"; retry shortly ("+err.Error()+")")
		return false
	}
	return v.inDirectory(c, r, s)
}

// graph checks Microsoft Graph answers Steward's application in the
// directory, for the identity data every tenant's sync reads.
func (v *Verifier) graph(ctx context.Context, c *checks, r Request) bool {
	dir := r.DirectoryTenantID
	err := v.Cloud.CheckGraph(ctx, dir)
	switch {
	case errors.Is(err, cloud.ErrNoAccess):
		lead := "Microsoft Graph refused Steward's application in directory " + dir
		if !r.Direct {
			lead += " (Azure Lighthouse delegation does not reach Entra ID, so the directory must consent to the application as well)"
		}
		c.fail(Failed, CheckGraph, fmt.Sprintf("%s: %v. %s and retry.", lead, err, v.consentFix(dir)))
		return false
	case err != nil:
		c.fail(Unavailable, CheckGraph, "Microsoft Graph could not be asked about directory "+dir+"; retry shortly ("+err.Error()+")")
		return false
	}
	c.pass(CheckGraph, "Microsoft Graph answers Steward's application in directory "+dir)
	return true
}

// consentFix says how an administrator of the directory grants Steward's
// application admin consent: at its admin consent URL when Steward has one.
func (v *Verifier) consentFix(dir string) string {
	u, err := v.Cloud.AdminConsentURL(dir, v.ConsentRedirectURI)
	if err != nil || v.ConsentRedirectURI == "" {
		return "An administrator of directory " + dir + " grants Steward's application admin consent"
	}
	return "An administrator of directory " + dir + " grants Steward's application admin consent at " + u
}

// refusedToken reports whether err is the identity provider refusing the
// application a token, as a directory without its admin consent does, not
// failing to answer.
func refusedToken(err error) bool {
	var authErr *azidentity.AuthenticationFailedError
	return errors.As(err, &authErr) && authErr.RawResponse != nil && authErr.RawResponse.StatusCode < 500
}

// refusalOf is the identity provider's words in a refused token's error,
// as cloud.TenantError tells them, without the tenant's name or the fix
// that error adds.
func refusalOf(err error) string {
	var te *cloud.TenantError
	if errors.As(err, &te) {
		err = te.Err
	}
	msg := err.Error()
	if _, words, ok := strings.Cut(msg, "a token: "); ok {
		return words
	}
	return msg
}

// publicCheck is what a caller who may not see other tenants is told of a
// check: a detail for its passing and one for its failing, which is then
// the verification's reason, naming no subscription, directory or tenant
// and repeating none of the cloud's words.
type publicCheck struct{ passed, failed string }

// publicChecks are the checks as the anonymous are told them.
var publicChecks = map[string]publicCheck{
	CheckNotManagingTenant: {"the directory tenant is not Steward's managing tenant",
		"the directory tenant is Steward's managing tenant, which is not onboarded through delegation"},
	CheckDelegationReach: {"Steward's managing tenant reaches the subscription through Azure Lighthouse",
		"Steward's managing tenant does not reach the subscription through Azure Lighthouse: deploy the onboarding template to the subscription and retry"},
	CheckConsent: {"the directory issues Steward's application a token",
		"the directory refuses Steward's application a token: an administrator of the directory grants the application admin consent (the onboarding page's consent step) and retries"},
	CheckSubscriptionRead: {"Steward's application reads the subscription",
		"Steward's application cannot read the subscription: assign it Reader and Cost Management Reader on the subscription and retry"},
	CheckDirectory: {"the subscription belongs to the directory tenant named",
		"the subscription does not belong to the directory tenant named"},
	CheckGraph: {"Microsoft Graph answers Steward's application in the directory",
		"Microsoft Graph refuses Steward's application in the directory: an administrator of the directory grants the application admin consent (the onboarding page's consent step) and retries"},
	CheckNotRegistered: {"the tenant was registered", "the directory tenant is already managed by Steward"},
}

// reasonUnavailable replaces an unavailable cloud's error text.
const reasonUnavailable = "the cloud could not be asked; retry shortly"

// Redacted returns the result as a caller who may not see other tenants is
// shown it: each check with whether it passed, and a detail and reason that
// name no subscription, directory or tenant and repeat none of the cloud's
// error text. A created tenant's result is its creator's to see.
func (r Result) Redacted() Result {
	if r.Outcome == Created {
		return r
	}
	out := Result{Outcome: r.Outcome, Checks: make([]Check, 0, len(r.Checks))}
	for _, c := range r.Checks {
		pc := Check{Name: c.Name, Passed: c.Passed, Detail: publicChecks[c.Name].passed}
		if !c.Passed {
			pc.Detail = publicChecks[c.Name].failed
			if r.Outcome == Unavailable {
				pc.Detail = reasonUnavailable
			}
			out.Reason = pc.Detail
		}
		out.Checks = append(out.Checks, pc)
	}
	return out
}
