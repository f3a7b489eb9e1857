package domains

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/sdk"
)

// DatasetName is the name other plugins read the domains' posture by.
const DatasetName = "dmarc_posture"

// PostureRecord is one record of the dmarc_posture dataset: a domain's
// latest check.
type PostureRecord struct {
	TenantID    string     `json:"tenant_id"`
	Domain      string     `json:"domain"`
	Source      string     `json:"source"`
	CheckedAt   *time.Time `json:"checked_at"`
	Score       *int       `json:"score"`
	Grade       *string    `json:"grade"`
	DMARCPolicy *string    `json:"dmarc_policy"`
	SPFLookups  *int       `json:"spf_lookups"`
	DKIMPresent *int       `json:"dkim_present"`
	DNSError    string     `json:"dns_error"`
}

const datasetSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "A mail domain's latest DMARC, SPF and DKIM check",
  "type": "object",
  "properties": {
    "tenant_id": {"type": "string", "description": "Internal tenant id"},
    "domain": {"type": "string", "description": "Lower case, A-labels"},
    "source": {"type": "string", "enum": ["graph", "admin"], "description": "A verified domain of the directory, or one an admin added"},
    "checked_at": {"type": ["string", "null"], "format": "date-time", "description": "null before the first check"},
    "score": {"type": ["integer", "null"], "minimum": 0, "maximum": 100, "description": "A lower bound when dns_error is set"},
    "grade": {"type": ["string", "null"], "enum": ["A", "B", "C", "D", "F", null]},
    "dmarc_policy": {"type": ["string", "null"], "description": "none, quarantine, reject, or empty without DMARC, as last known; null while DNS never answered"},
    "spf_lookups": {"type": ["integer", "null"]},
    "dkim_present": {"type": ["integer", "null"], "description": "Selectors with a usable DKIM key"},
    "dns_error": {"type": "string", "description": "The latest check's lookups DNS failed to answer; empty when it answered all"}
  },
  "required": ["tenant_id", "domain", "source", "checked_at", "score", "grade", "dns_error"],
  "additionalProperties": false
}`

// Dataset publishes the latest check of every domain of the request's
// tenants, ordered by tenant and domain.
func (h *Handlers) Dataset() sdk.Dataset {
	return sdk.Dataset{
		Name:        DatasetName,
		Description: "Each mail domain's latest DMARC, SPF and DKIM check: score, grade, policy, SPF lookups, DKIM keys and DNS failures.",
		Schema:      json.RawMessage(datasetSchema),
		Read: func(ctx context.Context, req sdk.DatasetRequest, emit func(any) error) error {
			if len(req.TenantIDs) == 0 {
				return nil
			}
			rows, err := h.Store.DB.NewSelect().Model((*Domain)(nil)).
				Column("d.tenant_id", "d.domain", "d.source", "d.checked_at", "d.score", "d.grade", "d.dmarc_policy", "d.spf_lookups", "d.dkim_present", "d.dns_error").
				Where("d.tenant_id IN (?)", bun.List(req.TenantIDs)).Order("d.tenant_id", "d.domain").Rows(ctx)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var d Domain
				if err := h.Store.DB.ScanRow(ctx, rows, &d); err != nil {
					return err
				}
				if err := emit(PostureRecord{TenantID: d.TenantID, Domain: d.Domain, Source: d.Source, CheckedAt: timePtr(d.CheckedAt), Score: d.Score,
					Grade: d.Grade, DMARCPolicy: d.DMARCPolicy, SPFLookups: d.SPFLookups, DKIMPresent: d.DKIMPresent, DNSError: d.DNSError}); err != nil {
					return err
				}
			}
			return rows.Err()
		},
	}
}
