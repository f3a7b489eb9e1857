package arm

import (
	"net/http"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Microsoft.Resources: the subscriptions API.

func (srv *server) registerSubscriptions() {
	srv.handle("GET /subscriptions", srv.listSubscriptions)
	srv.handle("GET /subscriptions/{subscriptionId}", srv.getSubscription)
}

// subscriptionJSON is a subscription as ARM returns it.
type subscriptionJSON struct {
	ID                   string         `json:"id"`
	AuthorizationSource  string         `json:"authorizationSource"`
	ManagedByTenants     []any          `json:"managedByTenants"`
	SubscriptionID       string         `json:"subscriptionId"`
	TenantID             string         `json:"tenantId"`
	DisplayName          string         `json:"displayName"`
	State                string         `json:"state"`
	SubscriptionPolicies map[string]any `json:"subscriptionPolicies"`
}

func subscriptionOf(t world.Tenant, s world.Subscription) subscriptionJSON {
	return subscriptionJSON{
		ID:                  "/subscriptions/" + s.ID,
		AuthorizationSource: "RoleBased",
		ManagedByTenants:    []any{},
		SubscriptionID:      s.ID,
		TenantID:            t.DirectoryTenantID,
		DisplayName:         s.Name,
		State:               "Enabled",
		SubscriptionPolicies: map[string]any{
			"locationPlacementId": "Public_2014-09-01",
			"quotaId":             "PayAsYouGo_2014-09-01",
			"spendingLimit":       "Off",
		},
	}
}

// listSubscriptions lists the subscriptions the caller reaches.
func (srv *server) listSubscriptions(w http.ResponseWriter, r *http.Request, c idp.Claims) {
	var tenants []world.Tenant
	total := 0
	for _, t := range srv.sim.World().Tenants {
		if srv.reaches(c.TenantID, t) {
			tenants = append(tenants, t)
			total += len(t.Subscriptions)
		}
	}
	p := cloudsim.PageOf(r, srv.sim.URLs[cloudsim.ARM], total, cloudsim.DefaultPageSize)
	value := make([]subscriptionJSON, 0, p.End-p.Start)
	i := 0
	for _, t := range tenants {
		for _, s := range t.Subscriptions {
			if i >= p.Start && i < p.End {
				value = append(value, subscriptionOf(t, s))
			}
			i++
		}
	}
	body := map[string]any{"value": value}
	if p.NextLink != "" {
		body["nextLink"] = p.NextLink
	}
	cloudsim.WriteJSON(w, body)
}

func (srv *server) getSubscription(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	id := r.PathValue("subscriptionId")
	t, s, ok := srv.subscription(id)
	if !ok {
		subscriptionNotFound(w, id)
		return
	}
	cloudsim.WriteJSON(w, subscriptionOf(t, s))
}
