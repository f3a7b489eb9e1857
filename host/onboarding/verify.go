package onboarding

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

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

// Check names.
const (
	CheckNotManagingTenant = "not_managing_tenant"
	CheckDelegationReach   = "subscription_reachable_by_delegation"
	CheckDirectory         = "subscription_in_directory_tenant"
	CheckNotRegistered     = "tenant_not_already_managed"
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
}

// Verify runs the checks on a cleaned request, in order, stopping at the
// first failure, and creates the tenant with use_delegation when all pass.
// The returned error is for failures of Steward's own store only.
func (v *Verifier) Verify(ctx context.Context, r Request) (Result, error) {
	var res Result
	fail := func(o Outcome, name, detail string) (Result, error) {
		res.Checks = append(res.Checks, Check{Name: name, Detail: detail})
		res.Outcome, res.Reason = o, detail
		return res, nil
	}
	pass := func(name, detail string) {
		res.Checks = append(res.Checks, Check{Name: name, Passed: true, Detail: detail})
	}

	if v.ManagingTenantID != "" && strings.EqualFold(r.DirectoryTenantID, v.ManagingTenantID) {
		return fail(Failed, CheckNotManagingTenant, "tenant "+r.DirectoryTenantID+" is Steward's own managing tenant; it needs no delegation and cannot be onboarded")
	}
	pass(CheckNotManagingTenant, "tenant "+r.DirectoryTenantID+" is not Steward's managing tenant")
	if v.Cloud == nil {
		return fail(Unavailable, CheckDelegationReach, "no cloud is configured on this Steward host; delegation cannot be checked")
	}
	err := v.Cloud.CheckDelegation(ctx, r.SubscriptionID)
	switch {
	case errors.Is(err, cloud.ErrNotDelegated):
		return fail(Failed, CheckDelegationReach, "Azure Resource Manager refused Steward access to subscription "+r.SubscriptionID+
			": it is not delegated to Steward's managing tenant, or the delegation grants no reading role. Deploy the onboarding template to the subscription and retry. ("+err.Error()+")")
	case errors.Is(err, cloud.ErrNotFound):
		return fail(Failed, CheckDelegationReach, "subscription "+r.SubscriptionID+" does not exist ("+err.Error()+")")
	case err != nil:
		return fail(Unavailable, CheckDelegationReach, "the cloud could not be asked about subscription "+r.SubscriptionID+"; retry shortly ("+err.Error()+")")
	}
	pass(CheckDelegationReach, "Steward's managing tenant reaches subscription "+r.SubscriptionID)

	sub, err := v.Cloud.Subscription(ctx, r.SubscriptionID)
	if err != nil {
		return fail(Unavailable, CheckDirectory, "the cloud could not be asked about subscription "+r.SubscriptionID+"; retry shortly ("+err.Error()+")")
	}
	// Without this check a delegated subscription of one customer could be
	// registered under another customer's directory id.
	if !strings.EqualFold(sub.TenantID, r.DirectoryTenantID) {
		return fail(Failed, CheckDirectory, fmt.Sprintf("subscription %s belongs to directory tenant %s, not %s", r.SubscriptionID, sub.TenantID, r.DirectoryTenantID))
	}
	pass(CheckDirectory, fmt.Sprintf("subscription %s (%s) belongs to directory tenant %s", r.SubscriptionID, sub.DisplayName, r.DirectoryTenantID))

	t := &tenancy.Tenant{Name: r.TenantName, Description: r.Description, DirectoryTenantID: r.DirectoryTenantID,
		SubscriptionID: r.SubscriptionID, UseDelegation: true, IsActive: true}
	err = v.Tenants.CreateTenant(ctx, t)
	if errors.Is(err, tenancy.ErrDuplicate) {
		return fail(Duplicate, CheckNotRegistered, "directory tenant "+r.DirectoryTenantID+" is already managed by Steward")
	}
	if err != nil {
		return Result{}, err
	}
	pass(CheckNotRegistered, "tenant recorded as "+t.ID)
	res.Outcome, res.Tenant = Created, t
	return res, nil
}

// ReasonUnverified is the one reason an anonymous caller is given for a
// verification that created nothing: which check failed would tell whether a
// subscription exists, whether it is delegated to Steward, which directory
// owns it, or that a directory is already a customer.
const ReasonUnverified = "the delegation could not be verified, or the directory tenant is already managed by Steward: " +
	"check that the onboarding template is deployed to the subscription, that the subscription belongs to the directory tenant named, and retry; " +
	"your Steward operator sees the reason"

// reasonUnavailable replaces an unavailable cloud's error text.
const reasonUnavailable = "the cloud could not be asked; retry shortly"

// Redacted returns the result as a caller who may not see other tenants is
// shown it: a duplicate is told apart from a failed check no more than the
// checks are from one another, and no detail names a subscription's owner or
// repeats the cloud's error text.
func (r Result) Redacted() Result {
	switch r.Outcome {
	case Created:
		return r
	case Unavailable:
		return Result{Outcome: Unavailable, Checks: []Check{}, Reason: reasonUnavailable}
	default:
		return Result{Outcome: Failed, Checks: []Check{}, Reason: ReasonUnverified}
	}
}
