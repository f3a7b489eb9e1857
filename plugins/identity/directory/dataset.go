package directory

import (
	"context"
	"time"

	"github.com/stewardhq/steward/sdk"
)

// DatasetName is the name other plugins read the MFA figures by.
const DatasetName = "identity_mfa"

// MFARecord is one record of the identity_mfa dataset: a tenant's MFA and
// device figures, its Conditional Access posture, its Global
// Administrator count, its risky users, its applications' ended or
// expiring credentials and its access reviews' findings and overdue
// reviews at its latest identity sync.
type MFARecord struct {
	TenantID         string   `json:"tenant_id" doc:"Internal tenant id"`
	Date             string   `json:"date" format:"date" doc:"Day (UTC) of the latest sync"`
	TotalUsers       int64    `json:"total_users" doc:"Every account: members and guests, enabled or not"`
	GuestUsers       int64    `json:"guest_users"`
	AdminUsers       int64    `json:"admin_users" doc:"Holders of a directory role"`
	MFAUsers         int64    `json:"mfa_registered_users"`
	AdminMFAUsers    int64    `json:"admin_mfa_users"`
	MemberUsers      int64    `json:"enabled_members" doc:"Enabled accounts that are not guests"`
	MemberMFAUsers   int64    `json:"enabled_members_with_mfa"`
	MFACoverage      *float64 `json:"mfa_coverage_percentage" nullable:"true" doc:"enabled_members_with_mfa of enabled_members, percent to two decimals; null without enabled members. Guests and disabled accounts are counted apart (guest_users), not in it"`
	AdminMFA         *float64 `json:"admin_mfa_percentage" nullable:"true" doc:"admin_mfa_users of admin_users, percent to two decimals; null without admins"`
	Devices          int64    `json:"devices" doc:"Managed devices"`
	CompliantDevices int64    `json:"compliant_devices"`
	DeviceCompliance *float64 `json:"device_compliance_percentage" nullable:"true" doc:"compliant_devices of devices, percent to two decimals; null without devices"`
	// The Conditional Access posture (see AccessPosture) is null at a
	// sync that did not read it.
	SecurityDefaults     *bool     `json:"security_defaults_enabled" nullable:"true" doc:"The tenant enforces security defaults"`
	CAMFAAllUsers        *string   `json:"ca_mfa_all_users" nullable:"true" doc:"Strongest state of a Conditional Access policy requiring MFA of every user: enabled, enabledForReportingButNotEnforced, disabled or none"`
	CAMFAAdmins          *string   `json:"ca_mfa_admins" nullable:"true" doc:"The same for MFA of the Global Administrators"`
	CALegacyAuthBlocked  *string   `json:"ca_legacy_auth_blocked" nullable:"true" doc:"The same for blocking legacy authentication"`
	MFAEnforcedAll       *bool     `json:"mfa_enforced_all_users" nullable:"true" doc:"MFA of every user is enforced: by an enabled policy or by security defaults"`
	MFAEnforcedAdmins    *bool     `json:"mfa_enforced_admins" nullable:"true" doc:"MFA of the Global Administrators is enforced: by an enabled policy or by security defaults"`
	LegacyAuthBlocked    *bool     `json:"legacy_auth_blocked" nullable:"true" doc:"Legacy authentication is blocked: by an enabled policy or by security defaults"`
	GlobalAdmins         *int64    `json:"global_admins" nullable:"true" doc:"Global Administrators, active or eligible, each once; null at a sync that did not count them"`
	GlobalAdminsStatus   *string   `json:"global_admins_status" nullable:"true" doc:"too_few below 2, too_many above 4, else ok; null with global_admins"`
	RiskyUsers           *int64    `json:"risky_users" nullable:"true" doc:"Users Identity Protection has at risk now (atRisk or confirmedCompromised); null at a sync that did not count them"`
	HighRiskUsers        *int64    `json:"high_risk_users" nullable:"true" doc:"Those of risky_users at high risk"`
	ExpiredCredentials   *int64    `json:"expired_credentials" nullable:"true" doc:"Applications' and service principals' client secrets and certificates ended at the sync; null at a sync that did not count them"`
	ExpiringCredentials  *int64    `json:"expiring_credentials" nullable:"true" doc:"Those ending within 30 days of the sync"`
	AccessReviewFindings *int64    `json:"access_review_findings" nullable:"true" doc:"Access review decisions that approved a directory role holder without MFA (GET /api/v1/identity/access-review-findings); null at a sync that did not count them"`
	OverdueAccessReviews *int64    `json:"overdue_access_reviews" nullable:"true" doc:"Access reviews past their end and not done at the sync (overdue on GET /api/v1/identity/access-reviews)"`
	SyncedAt             time.Time `json:"synced_at"`
}

// Dataset publishes each tenant's figures at its latest sync, one record
// per tenant of the request with a synced directory, ordered by tenant.
func (h *Handlers) Dataset() sdk.Dataset {
	return sdk.DatasetOf(DatasetName, "Each tenant's MFA coverage, admin MFA, device compliance, Conditional Access posture, Global Administrator count, risky users, ended or expiring application credentials, access review findings and overdue access reviews at its latest identity sync.",
		func(ctx context.Context, req sdk.DatasetRequest, emit func(MFARecord) error) error {
			snaps, err := h.Store.Latest(ctx, req.TenantIDs)
			if err != nil {
				return err
			}
			for _, s := range snaps {
				r := MFARecord{TenantID: s.TenantID, Date: s.Day, TotalUsers: s.TotalUsers, GuestUsers: s.GuestUsers,
					AdminUsers: s.AdminUsers, MFAUsers: s.MFAUsers, AdminMFAUsers: s.AdminMFAUsers,
					MemberUsers: deref(s.MemberUsers), MemberMFAUsers: deref(s.MemberMFAUsers),
					MFACoverage: percent(deref(s.MemberMFAUsers), deref(s.MemberUsers)), AdminMFA: percent(s.AdminMFAUsers, s.AdminUsers),
					Devices: s.Devices, CompliantDevices: s.CompliantDevices, DeviceCompliance: percent(s.CompliantDevices, s.Devices),
					SyncedAt: s.SyncedAt.UTC()}
				if p, ok := s.Posture(); ok {
					sd := p.SecurityDefaults
					r.SecurityDefaults, r.CAMFAAllUsers, r.CAMFAAdmins, r.CALegacyAuthBlocked = &sd, &p.MFAAllUsers, &p.MFAAdmins, &p.LegacyAuthBlocked
					all, admins, legacy := Enforced(p.MFAAllUsers, sd), Enforced(p.MFAAdmins, sd), Enforced(p.LegacyAuthBlocked, sd)
					r.MFAEnforcedAll, r.MFAEnforcedAdmins, r.LegacyAuthBlocked = &all, &admins, &legacy
				}
				if n := s.GlobalAdmins; n != nil {
					status := adminsStatus(*n)
					r.GlobalAdmins, r.GlobalAdminsStatus = n, &status
				}
				r.RiskyUsers, r.HighRiskUsers = s.RiskyUsers, s.HighRiskUsers
				r.ExpiredCredentials, r.ExpiringCredentials = s.ExpiredCredentials, s.ExpiringCredentials
				r.AccessReviewFindings, r.OverdueAccessReviews = s.AccessReviewFindings, s.OverdueAccessReviews
				if err := emit(r); err != nil {
					return err
				}
			}
			return nil
		})
}
