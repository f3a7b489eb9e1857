package directory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/sdk"
)

// Domain is the freshness domain and job type the sync marks.
const Domain = "identity"

// Graph is what the sync reads of one tenant's directory;
// *cloud.GraphClient provides it.
type Graph interface {
	Users(ctx context.Context, fn func(cloud.GraphUser) error) error
	RegistrationDetails(ctx context.Context, fn func(cloud.RegistrationDetail) error) error
	DirectoryRoles(ctx context.Context, fn func(cloud.DirectoryRole) error) error
	RoleMembers(ctx context.Context, roleID string, fn func(cloud.RoleMember) error) error
	ManagedDevices(ctx context.Context, fn func(cloud.ManagedDevice) error) error
	AccessReviews(ctx context.Context, fn func(cloud.AccessReview) error) error
	ConditionalAccessPolicies(ctx context.Context, fn func(cloud.ConditionalAccessPolicy) error) error
	SecurityDefaults(ctx context.Context) (bool, error)
	ActiveRoleAssignments(ctx context.Context, roleTemplateID string, fn func(cloud.RoleScheduleInstance) error) error
	EligibleRoleAssignments(ctx context.Context, roleTemplateID string, fn func(cloud.RoleScheduleInstance) error) error
	GroupMembers(ctx context.Context, groupID string, fn func(cloud.RoleMember) error) error
	RiskyUsers(ctx context.Context, fn func(cloud.RiskyUser) error) error
	Applications(ctx context.Context, fn func(cloud.AppRegistration) error) error
	ServicePrincipals(ctx context.Context, fn func(cloud.AppRegistration) error) error
}

// Syncer copies each active tenant's directory from Graph into the store.
type Syncer struct {
	// Graph returns the client of a directory tenant id.
	Graph func(directoryTenantID string) Graph
	Store *Store
	Host  *sdk.Host
	Now   func() time.Time
}

// Run syncs every active tenant the run covers. A tenant that fails keeps
// its previous directory and is not marked fresh; the others are stored,
// and the run then fails naming each failed tenant.
func (s *Syncer) Run(ctx context.Context, run *sdk.JobRun) (int64, error) {
	tenants, err := s.Host.Tenants(ctx, run.TenantIDs...)
	if err != nil {
		return 0, fmt.Errorf("tenant directory: %w", err)
	}
	var active []sdk.Tenant
	for _, t := range tenants {
		if t.IsActive && t.DirectoryTenantID != "" {
			active = append(active, t)
		}
	}
	var records int64
	var failures []error
	for i, t := range active {
		start := time.Now()
		n, err := s.syncTenant(ctx, t)
		if err != nil {
			err = fmt.Errorf("tenant %s (%s): %w", t.Name, t.ID, err)
			failures = append(failures, err)
			// The host shows an admin why the tenant's directory is not
			// current, as the cloud syncs do (pluginenv.SyncTenants).
			if markErr := s.Host.MarkFailed(ctx, t.ID, Domain, start, err.Error()); markErr != nil {
				failures = append(failures, fmt.Errorf("record the failed sync of tenant %s: %w", t.Name, markErr))
			}
		} else {
			records += n
		}
		run.Progress(int64(i+1), int64(len(active)), fmt.Sprintf("tenant %s: %d records", t.Name, n))
	}
	return records, errors.Join(failures...)
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Syncer) syncTenant(ctx context.Context, t sdk.Tenant) (int64, error) {
	at := s.now().UTC()
	d, err := read(ctx, s.Graph(t.DirectoryTenantID), t.ID, at)
	if err != nil {
		return 0, err
	}
	if err := s.Store.Replace(ctx, t.ID, d, at); err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	if err := s.Host.MarkFresh(ctx, t.ID, Domain, at); err != nil {
		return d.Rows(), fmt.Errorf("mark fresh: %w", err)
	}
	return d.Rows(), nil
}

// read reads a tenant's directory from Graph. A user is an admin when it
// holds a directory role or the registration report says so.
func read(ctx context.Context, g Graph, tenantID string, at time.Time) (*Directory, error) {
	d := &Directory{}
	err := g.Users(ctx, func(u cloud.GraphUser) error {
		d.Users = append(d.Users, User{TenantID: tenantID, UserID: u.ID, DisplayName: u.DisplayName,
			UserPrincipalName: u.UserPrincipalName, Mail: u.Mail, UserType: u.UserType, AccountEnabled: u.AccountEnabled,
			Created: u.Created.UTC(), LastSignIn: u.LastSignIn.UTC(), SyncedAt: at})
		return nil
	})
	if err != nil {
		return nil, err
	}
	registrations := map[string]cloud.RegistrationDetail{}
	if err := g.RegistrationDetails(ctx, func(r cloud.RegistrationDetail) error {
		registrations[r.ID] = r
		return nil
	}); err != nil {
		return nil, err
	}
	var roles []cloud.DirectoryRole
	if err := g.DirectoryRoles(ctx, func(r cloud.DirectoryRole) error {
		roles = append(roles, r)
		return nil
	}); err != nil {
		return nil, err
	}
	holders := map[string]bool{}
	for _, r := range roles {
		err := g.RoleMembers(ctx, r.ID, func(m cloud.RoleMember) error {
			holders[m.ID] = true
			d.Roles = append(d.Roles, RoleMember{TenantID: tenantID, RoleID: r.ID, RoleName: r.DisplayName, RoleTemplateID: r.TemplateID,
				MemberID: m.ID, MemberType: m.Type, MemberName: m.DisplayName, MemberUPN: m.UserPrincipalName})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for i := range d.Users {
		u := &d.Users[i]
		r := registrations[u.UserID]
		u.IsAdmin = holders[u.UserID] || r.IsAdmin
		u.MFARegistered, u.MFACapable = r.IsMFARegistered, r.IsMFACapable
		u.MFAMethods, u.DefaultMethod = strings.Join(r.MethodsRegistered, ","), r.DefaultMFAMethod
	}
	if err := g.ManagedDevices(ctx, func(dev cloud.ManagedDevice) error {
		d.Devices = append(d.Devices, Device{TenantID: tenantID, DeviceID: dev.ID, Name: dev.Name, UserID: dev.UserID,
			UserPrincipalName: dev.UserPrincipalName, OperatingSystem: dev.OperatingSystem, OSVersion: dev.OSVersion,
			ComplianceState: dev.ComplianceState, IsEncrypted: dev.IsEncrypted, LastSync: dev.LastSync.UTC()})
		return nil
	}); err != nil {
		return nil, err
	}
	err = g.AccessReviews(ctx, func(r cloud.AccessReview) error {
		review := AccessReview{TenantID: tenantID, ReviewID: r.ID, Name: r.DisplayName, Status: r.Status, Created: r.Created.UTC()}
		for _, in := range r.Instances {
			if in.End.After(review.Ends) {
				review.Ends = in.End.UTC()
			}
		}
		d.Reviews = append(d.Reviews, review)
		for _, in := range r.Instances {
			for _, dec := range in.Decisions {
				d.Decisions = append(d.Decisions, Decision{TenantID: tenantID, ReviewID: r.ID, InstanceID: in.ID, DecisionID: dec.ID,
					Decision: dec.Decision, Recommendation: dec.Recommendation, PrincipalID: dec.PrincipalID,
					PrincipalName: dec.PrincipalDisplayName, PrincipalUPN: dec.PrincipalUserPrincipalName,
					ReviewedBy: dec.ReviewedBy, Reviewed: dec.Reviewed.UTC()})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := g.ConditionalAccessPolicies(ctx, func(p cloud.ConditionalAccessPolicy) error {
		d.Policies = append(d.Policies, classify(tenantID, p))
		return nil
	}); err != nil {
		return nil, err
	}
	if d.SecurityDefaults, err = g.SecurityDefaults(ctx); err != nil {
		return nil, err
	}
	if d.GlobalAdmins, err = globalAdmins(ctx, g, tenantID); err != nil {
		return nil, err
	}
	if err := g.RiskyUsers(ctx, func(r cloud.RiskyUser) error {
		d.RiskyUsers = append(d.RiskyUsers, riskyUser(tenantID, r))
		return nil
	}); err != nil {
		return nil, err
	}
	for _, list := range []func(context.Context, func(cloud.AppRegistration) error) error{g.Applications, g.ServicePrincipals} {
		if err := list(ctx, func(a cloud.AppRegistration) error {
			d.Credentials = append(d.Credentials, appCredentials(tenantID, a)...)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return d, nil
}
