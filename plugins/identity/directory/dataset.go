package directory

import (
	"context"
	"encoding/json"
	"time"

	"github.com/stewardhq/steward/sdk"
)

// DatasetName is the name other plugins read the MFA figures by.
const DatasetName = "identity_mfa"

// MFARecord is one record of the identity_mfa dataset: a tenant's figures
// at its latest sync.
type MFARecord struct {
	TenantID         string    `json:"tenant_id"`
	Date             string    `json:"date"`
	TotalUsers       int64     `json:"total_users"`
	GuestUsers       int64     `json:"guest_users"`
	AdminUsers       int64     `json:"admin_users"`
	MFAUsers         int64     `json:"mfa_registered_users"`
	AdminMFAUsers    int64     `json:"admin_mfa_users"`
	MFACoverage      *float64  `json:"mfa_coverage_percentage"`
	AdminMFA         *float64  `json:"admin_mfa_percentage"`
	Devices          int64     `json:"devices"`
	CompliantDevices int64     `json:"compliant_devices"`
	DeviceCompliance *float64  `json:"device_compliance_percentage"`
	SyncedAt         time.Time `json:"synced_at"`
}

const datasetSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "A tenant's MFA and device figures at its latest identity sync",
  "type": "object",
  "properties": {
    "tenant_id": {"type": "string", "description": "Internal tenant id"},
    "date": {"type": "string", "format": "date", "description": "Day (UTC) of the latest sync"},
    "total_users": {"type": "integer", "description": "Every account: members and guests, enabled or not"},
    "guest_users": {"type": "integer"},
    "admin_users": {"type": "integer", "description": "Holders of a directory role"},
    "mfa_registered_users": {"type": "integer"},
    "admin_mfa_users": {"type": "integer"},
    "mfa_coverage_percentage": {"type": ["number", "null"], "description": "mfa_registered_users of total_users, percent to two decimals; null without users"},
    "admin_mfa_percentage": {"type": ["number", "null"], "description": "admin_mfa_users of admin_users, percent to two decimals; null without admins"},
    "devices": {"type": "integer", "description": "Managed devices"},
    "compliant_devices": {"type": "integer"},
    "device_compliance_percentage": {"type": ["number", "null"], "description": "compliant_devices of devices, percent to two decimals; null without devices"},
    "synced_at": {"type": "string", "format": "date-time"}
  },
  "required": ["tenant_id", "date", "total_users", "admin_users", "mfa_coverage_percentage", "admin_mfa_percentage", "device_compliance_percentage"],
  "additionalProperties": false
}`

// Dataset publishes each tenant's figures at its latest sync, one record
// per tenant of the request with a synced directory, ordered by tenant.
func (h *Handlers) Dataset() sdk.Dataset {
	return sdk.Dataset{
		Name:        DatasetName,
		Description: "Each tenant's MFA coverage, admin MFA and device compliance at its latest identity sync.",
		Schema:      json.RawMessage(datasetSchema),
		Read: func(ctx context.Context, req sdk.DatasetRequest, emit func(any) error) error {
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
		},
	}
}
