package arm

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Microsoft.PolicyInsights: policy state query results and summaries at
// subscription scope, from the world's policy states.
//
// The world knows policies, not assignments, so the simulator assigns them
// the way a governed estate usually is: every policy with group names
// through one regulatory compliance initiative (policy set) assigned to
// each subscription, and every other policy through an assignment of its
// own. PolicyAssignmentID names the assignment a world state gets.
//
// Azure keeps a policy's display name and severity on the policy
// definition (properties.displayName, and properties.metadata.securityCenter
// .Severity for the security policies), not on its states. The simulator
// has no policy definitions API, so each state record carries them as two
// extra properties: policyDefinitionDisplayName, and
// policyDefinitionMetadata with the definition's metadata
// ({"category": …, "securityCenter": {"Severity": "High"}}).
//
// Query results page at most 1000 records (Azure's page) or $top, with an
// offset $skiptoken in @odata.nextLink. $filter takes comparisons joined by
// "and": <field> eq|ne '<value>' on complianceState, subscriptionId,
// resourceId, resourceType, resourceGroup, resourceLocation,
// policyAssignmentId, policyDefinitionId, policyDefinitionName,
// policyDefinitionCategory or policySetDefinitionId (values compare
// case-insensitively), isCompliant eq|ne true|false, and '<group>' in
// policyDefinitionGroupNames, the form summaries link with. $from and $to
// bound the timestamps when given; unlike Azure there is no default
// one-day window, as world files hold states of any age. $apply and
// $orderby are refused; $select is ignored and full records returned.

const (
	// policyPageSize is the most records Policy Insights returns per page.
	policyPageSize = 1000

	policyAssignmentsPath = "/providers/Microsoft.Authorization/policyAssignments/"
	// regulatoryAssignment names the initiative assignment of grouped
	// policies in every subscription.
	regulatoryAssignment = "regulatory-compliance"
	regulatoryCategory   = "Regulatory Compliance"
)

// regulatorySetID is the regulatory compliance initiative, built in as
// Azure's are.
var regulatorySetID = "/providers/Microsoft.Authorization/policySetDefinitions/" +
	uuid.NewSHA1(uuid.NameSpaceURL, []byte("steward-sim:regulatory-compliance")).String()

func (srv *server) registerPolicyInsights() {
	base := "/subscriptions/{subscriptionId}/providers/Microsoft.PolicyInsights/policyStates/"
	srv.handle("POST "+base+"{policyStatesResource}/queryResults", srv.policyQueryResults)
	// Policy Insights refuses GET on queryResults, including on the
	// @odata.nextLink it returns, which must be POSTed.
	srv.handle("GET "+base+"{policyStatesResource}/queryResults", func(w http.ResponseWriter, _ *http.Request, _ idp.Claims) {
		cloudsim.WriteError(w, http.StatusMethodNotAllowed, "HttpMethodNotSupported", "The http method 'GET' is not supported for 'queryResults'.")
	})
	srv.handle("POST "+base+"{policyStatesSummaryResource}/summarize", srv.policySummarize)
}

// PolicyAssignmentID is the policy assignment the simulator gives a world
// policy state in its subscription: the regulatory compliance initiative's
// for a policy with group names, else the policy's own.
func PolicyAssignmentID(subscriptionID string, s world.PolicyState) string {
	return "/subscriptions/" + subscriptionID + policyAssignmentsPath + policyAssignmentName(s)
}

func policyAssignmentName(s world.PolicyState) string {
	if len(s.GroupNames) > 0 {
		return regulatoryAssignment
	}
	// Azure names assignments made in the portal with 24 hex digits.
	sum := sha256.Sum256([]byte(strings.ToLower(s.PolicyDefinitionID)))
	return hex.EncodeToString(sum[:12])
}

// lastSegment is the name at the end of an ARM id.
func lastSegment(id string) string { return id[strings.LastIndex(id, "/")+1:] }

// resourceTypeOf reads an ARM id's resource type, e.g. Microsoft.Sql/servers
// /databases, in the id's own casing.
func resourceTypeOf(id string) string {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	p := -1
	for i, s := range segs {
		if strings.EqualFold(s, "providers") {
			p = i
		}
	}
	if p < 0 || p+2 >= len(segs) {
		if len(segs) >= 4 && strings.EqualFold(segs[2], "resourceGroups") {
			return "Microsoft.Resources/subscriptions/resourceGroups"
		}
		return "Microsoft.Resources/subscriptions"
	}
	typ := segs[p+1]
	for i := p + 2; i < len(segs); i += 2 {
		typ += "/" + segs[i]
	}
	return typ
}

// resourceGroupOf reads an ARM id's resource group, or "".
func resourceGroupOf(id string) string {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	for i := 0; i+1 < len(segs); i++ {
		if strings.EqualFold(segs[i], "resourceGroups") {
			return segs[i+1]
		}
	}
	return ""
}

// policyStateJSON is a policy state record as Policy Insights returns it,
// plus the two definition properties described above.
type policyStateJSON struct {
	ODataID                       *string        `json:"@odata.id"`
	ODataContext                  string         `json:"@odata.context"`
	Timestamp                     string         `json:"timestamp"`
	ResourceID                    string         `json:"resourceId"`
	PolicyAssignmentID            string         `json:"policyAssignmentId"`
	PolicyDefinitionID            string         `json:"policyDefinitionId"`
	EffectiveParameters           string         `json:"effectiveParameters"`
	IsCompliant                   bool           `json:"isCompliant"`
	SubscriptionID                string         `json:"subscriptionId"`
	ResourceType                  string         `json:"resourceType"`
	ResourceLocation              string         `json:"resourceLocation"`
	ResourceGroup                 string         `json:"resourceGroup"`
	ResourceTags                  string         `json:"resourceTags"`
	PolicyAssignmentName          string         `json:"policyAssignmentName"`
	PolicyAssignmentOwner         string         `json:"policyAssignmentOwner"`
	PolicyAssignmentParameters    string         `json:"policyAssignmentParameters"`
	PolicyAssignmentScope         string         `json:"policyAssignmentScope"`
	PolicyDefinitionName          string         `json:"policyDefinitionName"`
	PolicyDefinitionAction        string         `json:"policyDefinitionAction"`
	PolicyDefinitionCategory      string         `json:"policyDefinitionCategory"`
	PolicySetDefinitionID         *string        `json:"policySetDefinitionId"`
	PolicySetDefinitionName       *string        `json:"policySetDefinitionName"`
	PolicySetDefinitionOwner      *string        `json:"policySetDefinitionOwner"`
	PolicySetDefinitionCategory   *string        `json:"policySetDefinitionCategory"`
	PolicySetDefinitionParameters *string        `json:"policySetDefinitionParameters"`
	ManagementGroupIDs            string         `json:"managementGroupIds"`
	PolicyDefinitionReferenceID   *string        `json:"policyDefinitionReferenceId"`
	ComplianceState               string         `json:"complianceState"`
	PolicyDefinitionGroupNames    []string       `json:"policyDefinitionGroupNames"`
	PolicyDefinitionDisplayName   string         `json:"policyDefinitionDisplayName"`
	PolicyDefinitionMetadata      map[string]any `json:"policyDefinitionMetadata"`
}

// policyRecord is a world state as a record; locations maps lower-case
// resource ids to the world's resource locations.
func (srv *server) policyRecord(s world.PolicyState, locations map[string]string) policyStateJSON {
	scope := "/subscriptions/" + s.SubscriptionID
	meta := map[string]any{"category": s.Category}
	if s.Severity != "" {
		meta["securityCenter"] = map[string]any{"Severity": s.Severity}
	}
	rec := policyStateJSON{
		ODataContext:                srv.sim.URLs[cloudsim.ARM] + scope + "/providers/Microsoft.PolicyInsights/policyStates/$metadata#latest/$entity",
		Timestamp:                   s.Timestamp,
		ResourceID:                  s.ResourceID,
		PolicyAssignmentID:          PolicyAssignmentID(s.SubscriptionID, s),
		PolicyDefinitionID:          s.PolicyDefinitionID,
		EffectiveParameters:         "{}",
		IsCompliant:                 strings.EqualFold(s.ComplianceState, "Compliant"),
		SubscriptionID:              s.SubscriptionID,
		ResourceType:                resourceTypeOf(s.ResourceID),
		ResourceLocation:            locations[strings.ToLower(s.ResourceID)],
		ResourceGroup:               resourceGroupOf(s.ResourceID),
		ResourceTags:                "tbd", // Azure's placeholder, here and in the owner
		PolicyAssignmentName:        policyAssignmentName(s),
		PolicyAssignmentOwner:       "tbd",
		PolicyAssignmentParameters:  "{}",
		PolicyAssignmentScope:       scope,
		PolicyDefinitionName:        lastSegment(s.PolicyDefinitionID),
		PolicyDefinitionAction:      "audit",
		PolicyDefinitionCategory:    s.Category,
		ComplianceState:             s.ComplianceState,
		PolicyDefinitionGroupNames:  s.GroupNames,
		PolicyDefinitionMetadata:    meta,
		PolicyDefinitionDisplayName: s.PolicyName,
	}
	if t, err := time.Parse(time.RFC3339, s.Timestamp); err == nil {
		rec.Timestamp = t.UTC().Format(time.RFC3339)
	}
	if len(s.GroupNames) > 0 {
		setName, category, ref := lastSegment(regulatorySetID), regulatoryCategory, rec.PolicyDefinitionName
		rec.PolicySetDefinitionID, rec.PolicySetDefinitionName = &regulatorySetID, &setName
		rec.PolicySetDefinitionCategory, rec.PolicyDefinitionReferenceID = &category, &ref
	}
	if rec.PolicyDefinitionGroupNames == nil {
		rec.PolicyDefinitionGroupNames = []string{}
	}
	return rec
}

// policyFields are the record fields $filter compares, by lower-case name.
var policyFields = map[string]func(*policyStateJSON) string{
	"compliancestate":          func(p *policyStateJSON) string { return p.ComplianceState },
	"subscriptionid":           func(p *policyStateJSON) string { return p.SubscriptionID },
	"resourceid":               func(p *policyStateJSON) string { return p.ResourceID },
	"resourcetype":             func(p *policyStateJSON) string { return p.ResourceType },
	"resourcegroup":            func(p *policyStateJSON) string { return p.ResourceGroup },
	"resourcelocation":         func(p *policyStateJSON) string { return p.ResourceLocation },
	"policyassignmentid":       func(p *policyStateJSON) string { return p.PolicyAssignmentID },
	"policydefinitionid":       func(p *policyStateJSON) string { return p.PolicyDefinitionID },
	"policydefinitionname":     func(p *policyStateJSON) string { return p.PolicyDefinitionName },
	"policydefinitioncategory": func(p *policyStateJSON) string { return p.PolicyDefinitionCategory },
	"policysetdefinitionid":    func(p *policyStateJSON) string { return deref(p.PolicySetDefinitionID) },
	"iscompliant":              func(p *policyStateJSON) string { return fmt.Sprint(p.IsCompliant) },
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// comparison is one clause of a $filter, as a test of a record.
type comparison func(*policyStateJSON) bool

var (
	// fieldClause is "<field> eq|ne <value>".
	fieldClause = regexp.MustCompile(`(?i)^(\w+)\s+(eq|ne)\s+(.+)$`)
	// groupClause is "'<group>' in PolicyDefinitionGroupNames", the form
	// Azure's summaries use in their query links.
	groupClause = regexp.MustCompile(`(?i)^'((?:[^']|'')*)'\s+in\s+policyDefinitionGroupNames$`)
)

// parseODataFilter reads the $filter subset described above.
func parseODataFilter(filter string) ([]comparison, error) {
	var out []comparison
	for _, clause := range splitAnd(filter) {
		if m := groupClause.FindStringSubmatch(clause); m != nil {
			group := strings.ReplaceAll(m[1], "''", "'")
			out = append(out, func(p *policyStateJSON) bool {
				return slices.ContainsFunc(p.PolicyDefinitionGroupNames, func(g string) bool { return strings.EqualFold(g, group) })
			})
			continue
		}
		m := fieldClause.FindStringSubmatch(clause)
		if m == nil {
			return nil, fmt.Errorf("$filter clause %q is not <field> eq|ne <value>", clause)
		}
		field, ok := policyFields[strings.ToLower(m[1])]
		if !ok {
			return nil, fmt.Errorf("$filter: the simulator cannot filter on %q", m[1])
		}
		raw := m[3]
		var value string
		switch {
		case len(raw) >= 2 && raw[0] == '\'' && raw[len(raw)-1] == '\'':
			value = strings.ReplaceAll(raw[1:len(raw)-1], "''", "'")
		case strings.EqualFold(m[1], "isCompliant") && (strings.EqualFold(raw, "true") || strings.EqualFold(raw, "false")):
			value = strings.ToLower(raw)
		default:
			return nil, fmt.Errorf("$filter: %s is not a quoted string", raw)
		}
		equal := strings.EqualFold(m[2], "eq")
		out = append(out, func(p *policyStateJSON) bool { return strings.EqualFold(field(p), value) == equal })
	}
	return out, nil
}

// splitAnd splits a filter at the "and"s outside quoted strings.
func splitAnd(filter string) []string {
	var parts []string
	inQuote, start := false, 0
	for i := 0; i < len(filter); i++ {
		switch {
		case filter[i] == '\'':
			inQuote = !inQuote
		case !inQuote && i+5 <= len(filter) && strings.EqualFold(filter[i:i+5], " and "):
			parts = append(parts, strings.TrimSpace(filter[start:i]))
			start = i + 5
			i += 4
		}
	}
	if rest := strings.TrimSpace(filter[start:]); rest != "" || len(parts) > 0 {
		parts = append(parts, rest)
	}
	return parts
}

func matches(p *policyStateJSON, filter []comparison) bool {
	for _, c := range filter {
		if !c(p) {
			return false
		}
	}
	return true
}

// selectStates is the subscription's world states within the request's
// $from and $to, and its $filter parsed, refusing what the simulator does
// not support.
func (srv *server) selectStates(r *http.Request, subID string) ([]world.PolicyState, []comparison, error) {
	q := r.URL.Query()
	for _, p := range []string{"$apply", "$orderby"} {
		if q.Get(p) != "" {
			return nil, nil, fmt.Errorf("the simulator does not support %s", p)
		}
	}
	filter, err := parseODataFilter(q.Get("$filter"))
	if err != nil {
		return nil, nil, err
	}
	var from, to time.Time
	for name, t := range map[string]*time.Time{"$from": &from, "$to": &to} {
		if v := q.Get(name); v != "" {
			if *t, err = time.Parse(time.RFC3339, v); err != nil {
				return nil, nil, fmt.Errorf("%s %q is not an ISO 8601 timestamp", name, v)
			}
		}
	}
	var out []world.PolicyState
	for _, s := range srv.sim.World().PolicyStates {
		if !strings.EqualFold(s.SubscriptionID, subID) {
			continue
		}
		if ts, err := time.Parse(time.RFC3339, s.Timestamp); err == nil &&
			(!from.IsZero() && ts.Before(from) || !to.IsZero() && ts.After(to)) {
			continue
		}
		out = append(out, s)
	}
	return out, filter, nil
}

// records are the states as records, those passing filter only.
func (srv *server) records(states []world.PolicyState, filter []comparison) []policyStateJSON {
	ids := make(map[string]string, len(states))
	for _, s := range states {
		ids[strings.ToLower(s.ResourceID)] = ""
	}
	for _, res := range srv.sim.World().Resources {
		if id := strings.ToLower(res.ID); ids[id] == "" {
			if _, ok := ids[id]; ok {
				ids[id] = res.Location
			}
		}
	}
	out := []policyStateJSON{} // an empty page's value is [], not null
	for _, s := range states {
		rec := srv.policyRecord(s, ids)
		if matches(&rec, filter) {
			out = append(out, rec)
		}
	}
	return out
}

// policyStates is the subscription's states the request selects, as
// records.
func (srv *server) policyStates(r *http.Request, subID string) ([]policyStateJSON, error) {
	states, filter, err := srv.selectStates(r, subID)
	if err != nil {
		return nil, err
	}
	return srv.records(states, filter), nil
}

// policyScope checks the states resource and the subscription of a
// Policy Insights request, answering when they are wrong.
func (srv *server) policyScope(w http.ResponseWriter, r *http.Request, resource string, allowed ...string) (string, bool) {
	if !slices.Contains(allowed, resource) {
		badRequest(w, "The policy states resource '%s' is not one of %s.", resource, strings.Join(allowed, ", "))
		return "", false
	}
	subID := r.PathValue("subscriptionId")
	if _, _, ok := srv.subscription(subID); !ok {
		subscriptionNotFound(w, subID)
		return "", false
	}
	return subID, true
}

func (srv *server) policyQueryResults(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	subID, ok := srv.policyScope(w, r, r.PathValue("policyStatesResource"), "latest", "default")
	if !ok {
		return
	}
	states, filter, err := srv.selectStates(r, subID)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	// Without a filter a page is cut from the world's states and only its
	// records are built; a filter is applied to the records first.
	var p cloudsim.Page
	var page []policyStateJSON
	if len(filter) == 0 {
		p = cloudsim.PageOf(r, srv.sim.URLs[cloudsim.ARM], len(states), policyPageSize)
		page = srv.records(states[p.Start:p.End], nil)
	} else {
		recs := srv.records(states, filter)
		p = cloudsim.PageOf(r, srv.sim.URLs[cloudsim.ARM], len(recs), policyPageSize)
		page = recs[p.Start:p.End]
	}
	body := map[string]any{
		"@odata.context": srv.sim.URLs[cloudsim.ARM] + "/subscriptions/" + subID + "/providers/Microsoft.PolicyInsights/policyStates/$metadata#latest",
		"@odata.count":   p.End - p.Start,
		"value":          page,
	}
	if p.NextLink != "" {
		body["@odata.nextLink"] = p.NextLink
	}
	cloudsim.WriteJSON(w, body)
}

// complianceDetail counts items in one compliance state; summaries name
// the states in lower case.
type complianceDetail struct {
	ComplianceState string `json:"complianceState"`
	Count           int    `json:"count"`
}

type summaryResultsJSON struct {
	QueryResultsURI       string             `json:"queryResultsUri"`
	NonCompliantResources int                `json:"nonCompliantResources"`
	NonCompliantPolicies  *int               `json:"nonCompliantPolicies,omitempty"`
	ResourceDetails       []complianceDetail `json:"resourceDetails"`
	PolicyDetails         []complianceDetail `json:"policyDetails"`
	PolicyGroupDetails    []complianceDetail `json:"policyGroupDetails"`
}

type policyDefinitionSummaryJSON struct {
	PolicyDefinitionID          string             `json:"policyDefinitionId"`
	PolicyDefinitionReferenceID string             `json:"policyDefinitionReferenceId"`
	PolicyDefinitionGroupNames  []string           `json:"policyDefinitionGroupNames,omitempty"`
	Effect                      string             `json:"effect"`
	Results                     summaryResultsJSON `json:"results"`
}

type policyGroupSummaryJSON struct {
	PolicyGroupName string             `json:"policyGroupName"`
	Results         summaryResultsJSON `json:"results"`
}

type policyAssignmentSummaryJSON struct {
	PolicyAssignmentID    string                        `json:"policyAssignmentId"`
	PolicySetDefinitionID string                        `json:"policySetDefinitionId"`
	Results               summaryResultsJSON            `json:"results"`
	PolicyDefinitions     []policyDefinitionSummaryJSON `json:"policyDefinitions"`
	PolicyGroups          []policyGroupSummaryJSON      `json:"policyGroups"`
}

// worst is the state a resource, policy or group is in given its records':
// non-compliant if any is, else any other state before compliant.
func worst(a, b string) string {
	rank := func(s string) int {
		switch strings.ToLower(s) {
		case "noncompliant":
			return 2
		case "compliant":
			return 0
		}
		return 1
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// tally reduces records to a summary's results. withPolicies adds the
// non-compliant policy count, which Azure gives at the subscription and
// assignment levels only.
func tally(recs []*policyStateJSON, uri string, withPolicies bool) summaryResultsJSON {
	resources, policies, groups := map[string]string{}, map[string]string{}, map[string]string{}
	for _, p := range recs {
		res := strings.ToLower(p.ResourceID)
		resources[res] = worst(cmp.Or(resources[res], "Compliant"), p.ComplianceState)
		pol := strings.ToLower(p.PolicyAssignmentID + "|" + p.PolicyDefinitionID)
		policies[pol] = worst(cmp.Or(policies[pol], "Compliant"), p.ComplianceState)
		for _, g := range p.PolicyDefinitionGroupNames {
			groups[g] = worst(cmp.Or(groups[g], "Compliant"), p.ComplianceState)
		}
	}
	details := func(m map[string]string) []complianceDetail {
		counts := map[string]int{}
		for _, s := range m {
			counts[strings.ToLower(s)]++
		}
		out := []complianceDetail{}
		for s, n := range counts {
			out = append(out, complianceDetail{ComplianceState: s, Count: n})
		}
		slices.SortFunc(out, func(a, b complianceDetail) int { return strings.Compare(a.ComplianceState, b.ComplianceState) })
		return out
	}
	res := summaryResultsJSON{QueryResultsURI: uri, ResourceDetails: details(resources), PolicyDetails: details(policies), PolicyGroupDetails: details(groups)}
	for _, d := range res.ResourceDetails {
		if d.ComplianceState == "noncompliant" {
			res.NonCompliantResources = d.Count
		}
	}
	if withPolicies {
		n := 0
		for _, d := range res.PolicyDetails {
			if d.ComplianceState == "noncompliant" {
				n = d.Count
			}
		}
		res.NonCompliantPolicies = &n
	}
	return res
}

// queryResultsURI is the query that lists a summary's non-compliant
// records.
func (srv *server) queryResultsURI(subID string, clauses ...string) string {
	q := url.Values{"api-version": {"2024-10-01"}, "$filter": {strings.Join(append([]string{"IsCompliant eq false"}, clauses...), " and ")}}
	return srv.sim.URLs[cloudsim.ARM] + "/subscriptions/" + subID + "/providers/Microsoft.PolicyInsights/policyStates/latest/queryResults?" + q.Encode()
}

func (srv *server) policySummarize(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	subID, ok := srv.policyScope(w, r, r.PathValue("policyStatesSummaryResource"), "latest")
	if !ok {
		return
	}
	states, err := srv.policyStates(r, subID)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	all := make([]*policyStateJSON, len(states))
	byAssignment := map[string][]*policyStateJSON{}
	var order []string
	for i := range states {
		p := &states[i]
		all[i] = p
		if _, seen := byAssignment[p.PolicyAssignmentID]; !seen {
			order = append(order, p.PolicyAssignmentID)
		}
		byAssignment[p.PolicyAssignmentID] = append(byAssignment[p.PolicyAssignmentID], p)
	}
	assignments := make([]policyAssignmentSummaryJSON, 0, len(order))
	for _, id := range order {
		assignments = append(assignments, srv.assignmentSummary(subID, id, byAssignment[id]))
	}
	// The most non-compliant first, as the portal lists them; $top keeps
	// that many.
	slices.SortStableFunc(assignments, func(a, b policyAssignmentSummaryJSON) int {
		return cmp.Or(b.Results.NonCompliantResources-a.Results.NonCompliantResources, strings.Compare(a.PolicyAssignmentID, b.PolicyAssignmentID))
	})
	if top := r.URL.Query().Get("$top"); top != "" {
		n, err := strconv.Atoi(top)
		if err != nil || n < 0 {
			badRequest(w, "$top %q is not a count", top)
			return
		}
		assignments = assignments[:min(n, len(assignments))]
	}
	ctx := srv.sim.URLs[cloudsim.ARM] + "/subscriptions/" + subID + "/providers/Microsoft.PolicyInsights/policyStates/$metadata#summary"
	cloudsim.WriteJSON(w, map[string]any{
		"@odata.context": ctx,
		"@odata.count":   1,
		"value": []any{map[string]any{
			"@odata.id":         nil,
			"@odata.context":    ctx + "/$entity",
			"results":           tally(all, srv.queryResultsURI(subID), true),
			"policyAssignments": assignments,
		}},
	})
}

func (srv *server) assignmentSummary(subID, assignmentID string, recs []*policyStateJSON) policyAssignmentSummaryJSON {
	byAssignment := fmt.Sprintf("PolicyAssignmentId eq '%s'", assignmentID)
	out := policyAssignmentSummaryJSON{
		PolicyAssignmentID: assignmentID,
		Results:            tally(recs, srv.queryResultsURI(subID, byAssignment), true),
		PolicyDefinitions:  []policyDefinitionSummaryJSON{},
		PolicyGroups:       []policyGroupSummaryJSON{},
	}
	byDefinition, byGroup := map[string][]*policyStateJSON{}, map[string][]*policyStateJSON{}
	var definitions, groups []string
	for _, p := range recs {
		out.PolicySetDefinitionID = deref(p.PolicySetDefinitionID)
		if _, seen := byDefinition[p.PolicyDefinitionID]; !seen {
			definitions = append(definitions, p.PolicyDefinitionID)
		}
		byDefinition[p.PolicyDefinitionID] = append(byDefinition[p.PolicyDefinitionID], p)
		for _, g := range p.PolicyDefinitionGroupNames {
			if _, seen := byGroup[g]; !seen {
				groups = append(groups, g)
			}
			byGroup[g] = append(byGroup[g], p)
		}
	}
	for _, id := range definitions {
		first := byDefinition[id][0]
		out.PolicyDefinitions = append(out.PolicyDefinitions, policyDefinitionSummaryJSON{
			PolicyDefinitionID:          id,
			PolicyDefinitionReferenceID: deref(first.PolicyDefinitionReferenceID),
			PolicyDefinitionGroupNames:  first.PolicyDefinitionGroupNames,
			Effect:                      first.PolicyDefinitionAction,
			Results:                     tally(byDefinition[id], srv.queryResultsURI(subID, byAssignment, fmt.Sprintf("PolicyDefinitionId eq '%s'", id)), false),
		})
	}
	slices.SortStableFunc(out.PolicyDefinitions, func(a, b policyDefinitionSummaryJSON) int {
		return b.Results.NonCompliantResources - a.Results.NonCompliantResources
	})
	slices.Sort(groups)
	for _, g := range groups {
		out.PolicyGroups = append(out.PolicyGroups, policyGroupSummaryJSON{
			PolicyGroupName: g,
			Results:         tally(byGroup[g], srv.queryResultsURI(subID, byAssignment, fmt.Sprintf("'%s' IN PolicyDefinitionGroupNames", g)), false),
		})
	}
	return out
}
