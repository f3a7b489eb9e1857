package cloud

import (
	"context"
	"errors"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/managedservices/armmanagedservices"
)

// ErrNotDelegated is a subscription Resource Manager refuses to Steward's
// credential (403): for another tenant's subscription, one not delegated
// to Steward's tenant through Azure Lighthouse, or delegated without a
// role that reads it. It also matches ErrForbidden.
var ErrNotDelegated = errors.New("subscription not delegated")

// DelegatedSubscription is a subscription another tenant delegated to
// Steward's tenant through Azure Lighthouse: one registration assignment
// and the registration definition (the offer) it assigns.
type DelegatedSubscription struct {
	SubscriptionID string
	// TenantID and TenantName are the customer's (managee) tenant.
	TenantID   string
	TenantName string
	// ManagedByTenantID is the tenant granted access: Steward's.
	ManagedByTenantID   string
	ManagedByTenantName string
	AssignmentID        string
	DefinitionID        string
	// OfferName is the registration definition's name.
	OfferName      string
	Authorizations []LighthouseAuthorization
}

// LighthouseAuthorization is a role a delegation grants a principal of
// the managing tenant.
type LighthouseAuthorization struct {
	PrincipalID          string
	PrincipalDisplayName string
	// RoleDefinitionID is the built-in role's id, a GUID, e.g.
	// acdd72a7-3385-48ef-bd42-f606fba81ae7 for Reader.
	RoleDefinitionID string
}

// DelegatedSubscriptions calls fn for each registration assignment of the
// subscriptions the credential reaches, one subscription at a time. The
// credential's own tenant's subscriptions carry none and are skipped. An
// error from fn stops the listing and is returned as is.
func (c *Clients) DelegatedSubscriptions(ctx context.Context, fn func(DelegatedSubscription) error) error {
	return c.Subscriptions(ctx, func(s Subscription) error {
		opts := &armmanagedservices.RegistrationAssignmentsClientListOptions{ExpandRegistrationDefinition: to.Ptr(true)}
		return walk(ctx, c.assignments.NewListPager("subscriptions/"+s.ID, opts),
			func(p armmanagedservices.RegistrationAssignmentsClientListResponse) []*armmanagedservices.RegistrationAssignment {
				return p.Value
			},
			func(a *armmanagedservices.RegistrationAssignment) error { return fn(delegationOf(s.ID, a)) },
			failAs("list registration assignments of subscription "+s.ID))
	})
}

func delegationOf(subscriptionID string, a *armmanagedservices.RegistrationAssignment) DelegatedSubscription {
	out := DelegatedSubscription{SubscriptionID: subscriptionID, AssignmentID: deref(a.ID)}
	if a.Properties == nil {
		return out
	}
	out.DefinitionID = deref(a.Properties.RegistrationDefinitionID)
	if d := a.Properties.RegistrationDefinition; d != nil && d.Properties != nil {
		p := d.Properties
		out.TenantID, out.TenantName = deref(p.ManageeTenantID), deref(p.ManageeTenantName)
		out.ManagedByTenantID, out.ManagedByTenantName = deref(p.ManagedByTenantID), deref(p.ManagedByTenantName)
		out.OfferName = deref(p.RegistrationDefinitionName)
		for _, au := range p.Authorizations {
			if au != nil {
				out.Authorizations = append(out.Authorizations, LighthouseAuthorization{
					PrincipalID: deref(au.PrincipalID), PrincipalDisplayName: deref(au.PrincipalIDDisplayName), RoleDefinitionID: deref(au.RoleDefinitionID),
				})
			}
		}
	}
	return out
}

// CheckDelegation reports whether Steward's credential reaches a
// subscription, as onboarding a tenant through Lighthouse needs: nil when
// it does, an error matching ErrNotDelegated when Resource Manager refuses
// it, and ErrNotFound for a subscription that does not exist.
func (c *Clients) CheckDelegation(ctx context.Context, subscriptionID string) error {
	_, err := c.subscriptions.Get(ctx, subscriptionID, nil)
	if err == nil {
		return nil
	}
	err = wrap("check access to subscription "+subscriptionID, err)
	if e, ok := err.(*Error); ok && e.StatusCode == http.StatusForbidden {
		e.kinds = append(e.kinds, ErrNotDelegated)
	}
	return err
}
