package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"
)

// ErrInvalidQuery is a Resource Graph query the service refused (400
// InvalidQuery).
var ErrInvalidQuery = errors.New("invalid query")

// Resource is an Azure resource as Resource Graph lists it.
type Resource struct {
	ID   string
	Name string
	// Type is lower case, e.g. microsoft.compute/virtualmachines, as
	// Resource Graph reports types.
	Type           string
	Location       string
	ResourceGroup  string
	SubscriptionID string
	TenantID       string
	Kind           string
	Tags           map[string]string
	Properties     map[string]any
	// SKU is the top-level sku ({"name", "tier", …}), nil for types
	// without one.
	SKU map[string]any
}

// graphPageSize is the most rows Resource Graph returns per page.
const graphPageSize = 1000

// Resources calls fn for each resource of a type (e.g.
// microsoft.storage/storageaccounts; case does not matter; empty for every
// type) in the subscriptions, or in every subscription the credential
// reaches when none are named. Pages are streamed, following $skipToken;
// an error from fn stops the listing and is returned as is.
func (c *ResourceManager) Resources(ctx context.Context, subscriptionIDs []string, resourceType string, fn func(Resource) error) error {
	query := "Resources"
	if resourceType != "" {
		// Types are provider/type paths; a quote or backslash could end
		// or escape the string literal and change the query.
		if strings.ContainsAny(resourceType, `'"\`) {
			return fmt.Errorf("cloud: query resources: %q is not a resource type", resourceType)
		}
		query += " | where type =~ '" + resourceType + "'"
	}
	return c.QueryResources(ctx, subscriptionIDs, query, fn)
}

// QueryResources runs a Resource Graph query over the subscriptions (every
// subscription the credential reaches when none are named) and calls fn
// for each row, read as a Resource: the query must list the Resources
// table, keeping its columns. Pages are streamed, following $skipToken;
// an error from fn stops the listing and is returned as is. A query the
// service refuses is ErrInvalidQuery.
func (c *ResourceManager) QueryResources(ctx context.Context, subscriptionIDs []string, query string, fn func(Resource) error) error {
	op := "query resources (" + query + ")"
	req := armresourcegraph.QueryRequest{
		Query: &query,
		Options: &armresourcegraph.QueryRequestOptions{
			Top:          to.Ptr[int32](graphPageSize),
			ResultFormat: to.Ptr(armresourcegraph.ResultFormatObjectArray),
		},
	}
	for _, id := range subscriptionIDs {
		req.Subscriptions = append(req.Subscriptions, to.Ptr(id))
	}
	for {
		resp, err := c.resourceGraph.Resources(ctx, req, nil)
		if err != nil {
			err = wrap(op, err)
			if e, ok := err.(*Error); ok && e.StatusCode == http.StatusBadRequest && e.Code == "InvalidQuery" {
				e.kinds = append(e.kinds, ErrInvalidQuery)
			}
			return err
		}
		// The SDK leaves the rows as decoded JSON; reading them through
		// the row type keeps one page in memory, as the other listings.
		raw, err := json.Marshal(resp.Data)
		if err != nil {
			return fmt.Errorf("cloud: %s: %w", op, err)
		}
		var rows []graphRow
		if err := json.Unmarshal(raw, &rows); err != nil {
			return fmt.Errorf("cloud: %s: the rows are not resources: %w", op, err)
		}
		for _, r := range rows {
			if err := fn(Resource(r)); err != nil {
				return err
			}
		}
		if deref(resp.SkipToken) == "" {
			return nil
		}
		req.Options.SkipToken = resp.SkipToken
	}
}

// graphRow is a row of the Resources table in the objectArray format.
type graphRow struct {
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	Type           string            `json:"type"`
	Location       string            `json:"location"`
	ResourceGroup  string            `json:"resourceGroup"`
	SubscriptionID string            `json:"subscriptionId"`
	TenantID       string            `json:"tenantId"`
	Kind           string            `json:"kind"`
	Tags           map[string]string `json:"tags"`
	Properties     map[string]any    `json:"properties"`
	SKU            map[string]any    `json:"sku"`
}
