package inventory

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stewardhq/steward/sdk"
)

// DatasetName is the name other plugins (compliance rules, partner
// reports) read the inventory by.
const DatasetName = "resources"

// Record is one record of the resources dataset.
type Record struct {
	TenantID       string          `json:"tenant_id"`
	SubscriptionID string          `json:"subscription_id"`
	ID             string          `json:"id"`
	ResourceID     string          `json:"resource_id"`
	Name           string          `json:"name"`
	Type           string          `json:"type"`
	Location       string          `json:"location"`
	ResourceGroup  string          `json:"resource_group"`
	SKU            string          `json:"sku"`
	Tags           json.RawMessage `json:"tags"`
	Properties     json.RawMessage `json:"properties"`
	FirstSeen      time.Time       `json:"first_seen"`
	LastSeen       time.Time       `json:"last_seen"`
}

const datasetSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "A resource of a tenant as last synced",
  "type": "object",
  "properties": {
    "tenant_id": {"type": "string", "description": "Internal tenant id"},
    "subscription_id": {"type": "string"},
    "id": {"type": "string", "pattern": "^[0-9a-f]{32}$", "description": "Steward's id of the resource: the first 32 hex digits of the SHA-256 of its lower-cased ARM id"},
    "resource_id": {"type": "string", "description": "The ARM id"},
    "name": {"type": "string"},
    "type": {"type": "string", "description": "Lower case, e.g. microsoft.compute/disks"},
    "location": {"type": "string"},
    "resource_group": {"type": "string", "description": "Lower case"},
    "sku": {"type": "string", "description": "The SKU name, or empty"},
    "tags": {"type": "object", "additionalProperties": {"type": "string"}},
    "properties": {"type": "object", "description": "The resource's properties as Resource Graph lists them"},
    "first_seen": {"type": "string", "format": "date-time"},
    "last_seen": {"type": "string", "format": "date-time"}
  },
  "required": ["tenant_id", "subscription_id", "id", "resource_id", "name", "type", "location", "resource_group", "sku", "tags", "properties", "first_seen", "last_seen"],
  "additionalProperties": false
}`

// maxTypeParam bounds the dataset's type parameter.
const maxTypeParam = 200

// Dataset publishes the tenants' resources with their properties, by
// tenant, type and ARM id, streamed from a cursor. The parameter type
// (case ignored) keeps one resource type.
func (s *Store) Dataset() sdk.Dataset {
	return sdk.Dataset{
		Name:        DatasetName,
		Description: "Resources per tenant with tags and properties, by type. Parameter type: one resource type, e.g. microsoft.compute/disks.",
		Schema:      json.RawMessage(datasetSchema),
		Read: func(ctx context.Context, req sdk.DatasetRequest, emit func(any) error) error {
			typ := req.Params["type"]
			if len(typ) > maxTypeParam {
				return fmt.Errorf("type: at most %d characters", maxTypeParam)
			}
			return s.Each(ctx, req.TenantIDs, typ, func(r *Resource) error {
				return emit(Record{TenantID: r.TenantID, SubscriptionID: r.SubscriptionID, ID: r.UID, ResourceID: r.ResourceID, Name: r.Name,
					Type: r.Type, Location: r.Location, ResourceGroup: r.ResourceGroup, SKU: r.SKU,
					Tags: json.RawMessage(r.Tags), Properties: json.RawMessage(r.Properties), FirstSeen: r.FirstSeen, LastSeen: r.LastSeen})
			})
		},
	}
}
