package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// ErrNoAccess is Steward lacking access to a tenant: its directory refused
// the application a token (no admin consent there), it lists none of the
// tenant's subscriptions, or Resource Manager refused one (403). An error
// matching it names the tenant and how to grant the access.
var ErrNoAccess = errors.New("no access to the tenant")

// Tenant is a customer tenant as Steward registered it: what Access needs
// to read it and what its errors name it by.
type Tenant struct {
	// ID is Steward's id of the tenant and Name its name, both named in
	// errors.
	ID   string
	Name string
	// DirectoryTenantID is the tenant's Entra ID directory.
	DirectoryTenantID string
	// SubscriptionID is the subscription registered with the tenant,
	// read when the directory lists none.
	SubscriptionID string
	// Delegated is a tenant that delegates its subscriptions to Steward's
	// managing tenant through Azure Lighthouse. Any other is read with
	// Steward's application's own credential in the tenant's directory,
	// which needs the application's admin consent there.
	Delegated bool
}

// TenantAccess is what reads one tenant: the Resource Manager clients of
// the credential that reaches it and the subscriptions to read, or why it
// cannot be read.
type TenantAccess struct {
	Tenant Tenant
	// ResourceManager is nil when Err is set.
	*ResourceManager
	// Subscriptions are the ids of the tenant's subscriptions to read, in
	// the order Resource Manager lists them.
	Subscriptions []string
	// SubscriptionNames are the display names of Subscriptions by id, as
	// the listing gave them, so that what a sync stores can be shown by
	// name without asking Resource Manager again.
	SubscriptionNames map[string]string
	// Err is why the tenant cannot be read, naming it (see Failed); its
	// clients and subscriptions are then empty.
	Err error
}

// Access resolves how each tenant is read, in the tenants' order. A
// delegated tenant is read with the managing credential, and its
// subscriptions are those that credential lists in the tenant's directory
// (one listing serves every delegated tenant). Any other tenant is read
// with the application's credential in its own directory (the managing
// credential for the managing directory), and its subscriptions are those
// that credential lists there. Disabled and deleted subscriptions are left
// out. Either way, when the directory lists none, the tenant's registered
// subscription is read, once Resource Manager confirms Steward reaches it.
//
// A tenant that cannot be read gets an Err that names it and, when access
// is missing (ErrNoAccess), the fix; it keeps no other tenant from being
// resolved.
func (c *Clients) Access(ctx context.Context, tenants []Tenant) []TenantAccess {
	out := make([]TenantAccess, len(tenants))
	// Tenants read with the same credential share its listing.
	lists := map[*ResourceManager]*listing{}
	for i, t := range tenants {
		out[i].Tenant = t
		rm := c.ResourceManager
		if !t.Delegated {
			var err error
			if rm, err = c.directory(t.DirectoryTenantID); err != nil {
				out[i].Err = t.Failed(err)
				continue
			}
		}
		list, ok := lists[rm]
		if !ok {
			list = listSubscriptions(ctx, rm)
			lists[rm] = list
		}
		subs, err := list.of(ctx, rm, t)
		if err != nil {
			out[i].Err = t.Failed(err)
			continue
		}
		out[i].ResourceManager = rm
		out[i].SubscriptionNames = make(map[string]string, len(subs))
		for _, s := range subs {
			out[i].Subscriptions = append(out[i].Subscriptions, s.ID)
			out[i].SubscriptionNames[s.ID] = s.DisplayName
		}
	}
	return out
}

// listing is the subscriptions one credential lists, or why it could not.
type listing struct {
	subs []Subscription
	err  error
}

func listSubscriptions(ctx context.Context, rm *ResourceManager) *listing {
	l := &listing{}
	l.err = rm.Subscriptions(ctx, func(s Subscription) error {
		l.subs = append(l.subs, s)
		return nil
	})
	return l
}

// of is the subscriptions of t's directory the listing holds, enabled
// ones only, or t's registered subscription when there are none and rm
// reaches it.
func (l *listing) of(ctx context.Context, rm *ResourceManager, t Tenant) ([]Subscription, error) {
	if l.err != nil {
		return nil, l.err
	}
	var subs []Subscription
	for _, s := range l.subs {
		if strings.EqualFold(s.TenantID, t.DirectoryTenantID) && s.State != "Disabled" && s.State != "Deleted" {
			subs = append(subs, s)
		}
	}
	if len(subs) > 0 {
		return subs, nil
	}
	if t.SubscriptionID == "" {
		return nil, &noSubscriptions{t}
	}
	s, err := rm.Subscription(ctx, t.SubscriptionID)
	if err != nil {
		return nil, err
	}
	return []Subscription{s}, nil
}

// noSubscriptions is a directory that lists none of its subscriptions to
// Steward, for a tenant registered without one.
type noSubscriptions struct{ t Tenant }

func (e *noSubscriptions) Error() string {
	return fmt.Sprintf("no subscription of directory %s is visible to Steward", e.t.DirectoryTenantID)
}

// TenantError is a failure to read one tenant. It names the tenant and,
// when Steward lacks access to it, says how to grant the access.
type TenantError struct {
	Tenant Tenant
	Err    error
	// noAccess is set when the failure shows missing access.
	noAccess bool
}

func (e *TenantError) Error() string {
	name := "tenant " + e.Tenant.Name
	if e.Tenant.ID != "" {
		name += " (" + e.Tenant.ID + ")"
	}
	if !e.noAccess {
		return fmt.Sprintf("%s: %v", name, e.Err)
	}
	return fmt.Sprintf("%s: %v: %s", name, e.Err, e.Tenant.fix())
}

// Unwrap returns the failure.
func (e *TenantError) Unwrap() error { return e.Err }

// Is matches ErrNoAccess when the failure shows missing access.
func (e *TenantError) Is(target error) bool { return target == ErrNoAccess && e.noAccess }

// Failed names the tenant in err, a failure to read it, as a *TenantError.
// A failure that shows Steward lacks access to the tenant — its directory
// refused a token, lists none of its subscriptions, or Resource Manager
// answered 403 — matches ErrNoAccess and says how to grant the access; a
// refused token is told by the identity provider's own words (its AADSTS
// code and message). An error that already names a tenant is returned as
// is.
func (t Tenant) Failed(err error) error {
	var te *TenantError
	if err == nil || errors.As(err, &te) {
		return err
	}
	var (
		authErr *azidentity.AuthenticationFailedError
		none    *noSubscriptions
	)
	switch {
	case errors.As(err, &authErr):
		return &TenantError{Tenant: t, Err: &tokenRefused{delegated: t.Delegated, directory: t.DirectoryTenantID, err: authErr}, noAccess: true}
	case errors.As(err, &none), errors.Is(err, ErrForbidden):
		return &TenantError{Tenant: t, Err: err, noAccess: true}
	}
	return &TenantError{Tenant: t, Err: err}
}

// tokenRefused is a token request the tenant's directory refused, told by
// the identity provider's description of why rather than the whole
// exchange the credential's error prints.
type tokenRefused struct {
	// delegated is a tenant read with the managing credential, whose
	// token the managing directory refused.
	delegated bool
	directory string
	err       *azidentity.AuthenticationFailedError
}

func (e *tokenRefused) Error() string {
	if e.delegated {
		return "Steward's managing directory refused its application a token: " + refusal(e.err)
	}
	return fmt.Sprintf("directory %s refused Steward's application a token: %s", e.directory, refusal(e.err))
}

func (e *tokenRefused) Unwrap() error { return e.err }

// refusal is the first line of the error description of the identity
// provider's answer ("AADSTS700016: Application with identifier … was not
// found in the directory …"), or its status without one.
func refusal(err *azidentity.AuthenticationFailedError) string {
	resp := err.RawResponse
	if resp == nil {
		return "no answer"
	}
	var body struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if raw, rerr := runtime.Payload(resp); rerr == nil && json.Unmarshal(raw, &body) == nil && body.Description != "" {
		line, _, _ := strings.Cut(body.Description, "\n")
		return strings.TrimSpace(line)
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
}

// fix says how to give Steward access to the tenant, in the way it is
// registered and in the other.
func (t Tenant) fix() string {
	if t.Delegated {
		return "delegate its subscriptions to Steward's managing tenant through Azure Lighthouse (onboarding), " +
			"or grant Steward's application admin consent and a reader role in directory " + t.DirectoryTenantID +
			" and register the tenant without delegation"
	}
	return "grant Steward's application admin consent and a reader role in directory " + t.DirectoryTenantID +
		", or delegate its subscriptions through Azure Lighthouse (onboarding) and register the tenant with delegation"
}
