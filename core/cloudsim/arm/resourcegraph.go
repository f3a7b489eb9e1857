package arm

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Microsoft.ResourceGraph: queries over the world's resources.
//
// The simulator understands the Kusto queries Steward sends, not Kusto:
//
//	Resources
//	Resources | where type =~ '<type>'
//	Resources | where subscriptionId in ('<id>', …)
//
// in any combination and order of those where clauses, and any
// "| project …" is accepted and ignored (every column is returned). ==
// compares a type exactly, =~ and in~ ignore case. Anything else is
// refused with 400 InvalidQuery naming the operator it cannot run.
//
// Results come in the objectArray format only, pages of $top rows (100 by
// default, at most 1000) with an opaque $skipToken for the next one. The
// query covers the subscriptions of the request that the caller reaches,
// or every subscription it reaches when the request names none; as in
// Azure, subscriptions it cannot see add nothing rather than failing.
// Management group scopes and facets are refused.

// The page sizes of Resource Graph.
const (
	graphDefaultTop = 100
	graphMaxTop     = 1000
)

func (srv *server) registerResourceGraph() {
	srv.handle("POST /providers/Microsoft.ResourceGraph/resources", srv.graphResources)
}

type graphRequest struct {
	Subscriptions    []string          `json:"subscriptions"`
	ManagementGroups []string          `json:"managementGroups"`
	Query            string            `json:"query"`
	Facets           []json.RawMessage `json:"facets"`
	Options          struct {
		Top          *int   `json:"$top"`
		Skip         *int   `json:"$skip"`
		SkipToken    string `json:"$skipToken"`
		ResultFormat string `json:"resultFormat"`
	} `json:"options"`
}

// graphResourceJSON is a row of the Resources table.
type graphResourceJSON struct {
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	Type             string            `json:"type"`
	TenantID         string            `json:"tenantId"`
	Kind             string            `json:"kind"`
	Location         string            `json:"location"`
	ResourceGroup    string            `json:"resourceGroup"`
	SubscriptionID   string            `json:"subscriptionId"`
	ManagedBy        string            `json:"managedBy"`
	SKU              any               `json:"sku"`
	Plan             any               `json:"plan"`
	Properties       map[string]any    `json:"properties"`
	Tags             map[string]string `json:"tags"`
	Identity         any               `json:"identity"`
	Zones            any               `json:"zones"`
	ExtendedLocation any               `json:"extendedLocation"`
}

// graphQuery is a parsed query: the row filters it applies.
type graphQuery []func(*world.Resource) bool

var (
	typeClause = regexp.MustCompile(`(?i)^where\s+type\s*(=~|==)\s*'([^']*)'$`)
	subsClause = regexp.MustCompile(`(?i)^where\s+subscriptionId\s+(in~?)\s*\(([^)]*)\)$`)
	quoted     = regexp.MustCompile(`^'([^']*)'$`)
)

// parseGraphQuery reads the supported subset of Kusto.
func parseGraphQuery(query string) (graphQuery, error) {
	ops := strings.Split(query, "|")
	if table := strings.TrimSpace(ops[0]); !strings.EqualFold(table, "Resources") {
		return nil, fmt.Errorf("the table %q is not supported; the simulator queries Resources only", table)
	}
	var q graphQuery
	for _, op := range ops[1:] {
		op = strings.Join(strings.Fields(op), " ")
		if m := typeClause.FindStringSubmatch(op); m != nil {
			want, exact := m[2], m[1] == "=="
			q = append(q, func(r *world.Resource) bool {
				return r.Type == want || !exact && strings.EqualFold(r.Type, want)
			})
			continue
		}
		if m := subsClause.FindStringSubmatch(op); m != nil {
			var ids []string
			for _, item := range strings.Split(m[2], ",") {
				v := quoted.FindStringSubmatch(strings.TrimSpace(item))
				if v == nil {
					return nil, fmt.Errorf("%q is not a quoted subscription id", strings.TrimSpace(item))
				}
				ids = append(ids, v[1])
			}
			// Subscription ids are GUIDs, which Resource Graph stores in
			// lower case, so in and in~ agree on them.
			q = append(q, func(r *world.Resource) bool {
				return slices.ContainsFunc(ids, func(id string) bool { return strings.EqualFold(id, r.SubscriptionID) })
			})
			continue
		}
		if strings.HasPrefix(strings.ToLower(op), "project ") {
			continue
		}
		return nil, fmt.Errorf("the operator %q is not supported; the simulator runs Resources | where type =~ '<type>' | where subscriptionId in (…) | project …", op)
	}
	return q, nil
}

// graphToken is what a $skipToken carries: where the next page starts.
type graphToken struct {
	Offset int `json:"o"`
}

func invalidQuery(w http.ResponseWriter, format string, args ...any) {
	cloudsim.WriteError(w, http.StatusBadRequest, "InvalidQuery", "Query is invalid: "+fmt.Sprintf(format, args...))
}

func (srv *server) graphResources(w http.ResponseWriter, r *http.Request, c idp.Claims) {
	var req graphRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		badRequest(w, "The request body is not a Resource Graph query: %v", err)
		return
	}
	switch {
	case strings.TrimSpace(req.Query) == "":
		invalidQuery(w, "the query is empty")
		return
	case len(req.ManagementGroups) > 0:
		badRequest(w, "The simulator does not support management group scopes; name subscriptions.")
		return
	case len(req.Facets) > 0:
		badRequest(w, "The simulator does not compute facets.")
		return
	case req.Options.ResultFormat != "" && !strings.EqualFold(req.Options.ResultFormat, "objectArray"):
		badRequest(w, "The simulator answers resultFormat objectArray only, not %q.", req.Options.ResultFormat)
		return
	}
	q, err := parseGraphQuery(req.Query)
	if err != nil {
		invalidQuery(w, "%v", err)
		return
	}
	top := graphDefaultTop
	if req.Options.Top != nil {
		if *req.Options.Top < 1 || *req.Options.Top > graphMaxTop {
			badRequest(w, "$top must be between 1 and %d, not %d.", graphMaxTop, *req.Options.Top)
			return
		}
		top = *req.Options.Top
	}
	start := 0
	if req.Options.Skip != nil {
		start = max(*req.Options.Skip, 0)
	}
	if req.Options.SkipToken != "" {
		var tok graphToken
		raw, err := base64.RawURLEncoding.DecodeString(req.Options.SkipToken)
		if err != nil || json.Unmarshal(raw, &tok) != nil || tok.Offset < 0 {
			badRequest(w, "The $skipToken is not one this service issued.")
			return
		}
		start = tok.Offset
	}

	tenants := map[string]world.Tenant{}
	for _, t := range srv.sim.World().Tenants {
		if !srv.reaches(c.TenantID, t) {
			continue
		}
		for _, s := range t.Subscriptions {
			if len(req.Subscriptions) == 0 || slices.ContainsFunc(req.Subscriptions, func(id string) bool { return strings.EqualFold(id, s.ID) }) {
				tenants[strings.ToLower(s.ID)] = t
			}
		}
	}
	var rows []graphResourceJSON
	for i := range srv.sim.World().Resources {
		res := &srv.sim.World().Resources[i]
		t, ok := tenants[strings.ToLower(res.SubscriptionID)]
		if !ok || slices.ContainsFunc(q, func(keep func(*world.Resource) bool) bool { return !keep(res) }) {
			continue
		}
		rows = append(rows, graphResourceJSON{
			ID: res.ID, Name: res.Name, Type: res.Type, TenantID: t.DirectoryTenantID, Location: res.Location,
			ResourceGroup: resourceGroupOf(res.ID), SubscriptionID: res.SubscriptionID,
			Properties: res.Properties, Tags: res.Tags, SKU: res.SKU,
		})
	}
	start = min(start, len(rows))
	end := min(start+top, len(rows))
	body := map[string]any{
		"totalRecords":    len(rows),
		"count":           end - start,
		"data":            append([]graphResourceJSON{}, rows[start:end]...), // [] when empty, never null
		"facets":          []any{},
		"resultTruncated": "false",
	}
	if end < len(rows) && !truncated(r) {
		tok, _ := json.Marshal(graphToken{Offset: end})
		body["$skipToken"] = base64.RawURLEncoding.EncodeToString(tok)
	}
	cloudsim.WriteJSON(w, body)
}
