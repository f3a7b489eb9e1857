package arm

import (
	"math"
	"net/http"
	"strings"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Microsoft.Compute and Microsoft.Network: the regional usages APIs, which
// report each quota's use and limit. Both answer the same shape; the
// network one adds an id.

func (srv *server) registerUsages() {
	srv.handle("GET /subscriptions/{subscriptionId}/providers/Microsoft.Compute/locations/{location}/usages", srv.usages("compute"))
	srv.handle("GET /subscriptions/{subscriptionId}/providers/Microsoft.Network/locations/{location}/usages", srv.usages("network"))
}

// localizedNames are the display names Azure gives common quotas; others
// show their name.
var localizedNames = map[string]string{
	"availabilitySets":             "Availability Sets",
	"cores":                        "Total Regional vCPUs",
	"virtualMachines":              "Virtual Machines",
	"virtualMachineScaleSets":      "Virtual Machine Scale Sets",
	"lowPriorityCores":             "Total Regional Low-priority vCPUs",
	"standardDSv3Family":           "Standard DSv3 Family vCPUs",
	"standardDSv5Family":           "Standard DSv5 Family vCPUs",
	"standardBSFamily":             "Standard BS Family vCPUs",
	"VirtualNetworks":              "Virtual Networks",
	"StaticPublicIPAddresses":      "Static Public IP Addresses",
	"PublicIPAddresses":            "Public IP Addresses",
	"NetworkSecurityGroups":        "Network Security Groups",
	"NetworkInterfaces":            "Network Interfaces",
	"LoadBalancers":                "Load Balancers",
	"ApplicationGateways":          "Application Gateways",
	"RouteTables":                  "Route Tables",
	"StandardSkuPublicIpAddresses": "Public IP Addresses - Standard",
}

type usageName struct {
	Value          string `json:"value"`
	LocalizedValue string `json:"localizedValue"`
}

// usageJSON is a usage as the APIs return it. Counts are integers there
// (the SDKs decode them as such), so the world's values are rounded.
type usageJSON struct {
	ID           string    `json:"id,omitempty"`
	CurrentValue int64     `json:"currentValue"`
	Limit        int64     `json:"limit"`
	Name         usageName `json:"name"`
	Unit         string    `json:"unit"`
}

// sameLocation compares region names, which come as "westeurope" or
// "West Europe".
func sameLocation(a, b string) bool {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "")) }
	return norm(a) == norm(b)
}

func (srv *server) usages(provider string) handler {
	return func(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
		subID, location := r.PathValue("subscriptionId"), r.PathValue("location")
		if _, _, ok := srv.subscription(subID); !ok {
			subscriptionNotFound(w, subID)
			return
		}
		var match []*world.Quota
		for i := range srv.sim.World().Quotas {
			q := &srv.sim.World().Quotas[i]
			if q.Provider == provider && strings.EqualFold(q.SubscriptionID, subID) && sameLocation(q.Location, location) {
				match = append(match, q)
			}
		}
		p := cloudsim.PageOf(r, srv.sim.URLs[cloudsim.ARM], len(match), cloudsim.DefaultPageSize)
		value := make([]usageJSON, 0, p.End-p.Start)
		for _, q := range match[p.Start:p.End] {
			u := usageJSON{
				CurrentValue: int64(math.Round(q.CurrentValue)),
				Limit:        int64(math.Round(q.Limit)),
				Name:         usageName{Value: q.Name, LocalizedValue: q.Name},
				Unit:         "Count",
			}
			if l, ok := localizedNames[q.Name]; ok {
				u.Name.LocalizedValue = l
			}
			if provider == "network" {
				u.ID = "/subscriptions/" + subID + "/providers/Microsoft.Network/locations/" + location + "/usages/" + q.Name
			}
			value = append(value, u)
		}
		body := map[string]any{"value": value}
		if p.NextLink != "" {
			body["nextLink"] = p.NextLink
		}
		cloudsim.WriteJSON(w, body)
	}
}
