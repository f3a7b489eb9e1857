package directory

import (
	"context"
	"time"

	"github.com/stewardhq/steward/sdk"
)

// DatasetName is the name other plugins read the MFA figures by.
const DatasetName = "identity_mfa"

// MFARecord is one record of the identity_mfa dataset: a tenant's MFA and
// device figures at its latest identity sync.
type MFARecord struct {
	TenantID         string    `json:"tenant_id" doc:"Internal tenant id"`
	Date             string    `json:"date" format:"date" doc:"Day (UTC) of the latest sync"`
	TotalUsers       int64     `json:"total_users" doc:"Every account: members and guests, enabled or not"`
	GuestUsers       int64     `json:"guest_users"`
	AdminUsers       int64     `json:"admin_users" doc:"Holders of a directory role"`
	MFAUsers         int64     `json:"mfa_registered_users"`
	AdminMFAUsers    int64     `json:"admin_mfa_users"`
	MFACoverage      *float64  `json:"mfa_coverage_percentage" nullable:"true" doc:"mfa_registered_users of total_users, percent to two decimals; null without users"`
	AdminMFA         *float64  `json:"admin_mfa_percentage" nullable:"true" doc:"admin_mfa_users of admin_users, percent to two decimals; null without admins"`
	Devices          int64     `json:"devices" doc:"Managed devices"`
	CompliantDevices int64     `json:"compliant_devices"`
	DeviceCompliance *float64  `json:"device_compliance_percentage" nullable:"true" doc:"compliant_devices of devices, percent to two decimals; null without devices"`
	SyncedAt         time.Time `json:"synced_at"`
}

// Dataset publishes each tenant's figures at its latest sync, one record
// per tenant of the request with a synced directory, ordered by tenant.
func (h *Handlers) Dataset() sdk.Dataset {
	return sdk.DatasetOf(DatasetName, "Each tenant's MFA coverage, admin MFA and device compliance at its latest identity sync.",
		func(ctx context.Context, req sdk.DatasetRequest, emit func(MFARecord) error) error {
			snaps, err := h.Store.Latest(ctx, req.TenantIDs)
			if err != nil {
				return err
			}
			for _, s := range snaps {
				err := emit(MFARecord{TenantID: s.TenantID, Date: s.Day, TotalUsers: s.TotalUsers, GuestUsers: s.GuestUsers,
					AdminUsers: s.AdminUsers, MFAUsers: s.MFAUsers, AdminMFAUsers: s.AdminMFAUsers,
					MFACoverage: percent(s.MFAUsers, s.TotalUsers), AdminMFA: percent(s.AdminMFAUsers, s.AdminUsers),
					Devices: s.Devices, CompliantDevices: s.CompliantDevices, DeviceCompliance: percent(s.CompliantDevices, s.Devices),
					SyncedAt: s.SyncedAt.UTC()})
				if err != nil {
					return err
				}
			}
			return nil
		})
}
