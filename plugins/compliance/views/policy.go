package views

import (
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// PolicyPath is the page of one policy's non-compliant resources, which
// each non-compliant policy of the compliance page links.
const PolicyPath = "/compliance/policy"

// resourcePagePath is the resources plugin's page of one resource, named
// by its ARM id in resource_id: where each resource of the policy page
// leads.
const resourcePagePath = "/resources/item"

// policyRows is how many resources a page of the policy page lists.
const policyRows = 50

type policyIn struct {
	Tenant   sdk.TenantID `query:"tenant_id"`
	PolicyID string       `query:"policy_id" maxLength:"1024" pattern:"^/[^/]" doc:"The policy definition id; without it the page says where to find one"`
	Offset   int          `query:"offset" minimum:"0" maximum:"1000000" default:"0"`
}

// policyLink is the policy page of a policy from offset on, on the
// picked tenant when there is one.
func policyLink(policyID, tenant string, offset int) string {
	q := url.Values{"policy_id": {policyID}}
	if tenant != "" {
		q.Set("tenant_id", tenant)
	}
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	return PolicyPath + "?" + q.Encode()
}

// policyPage is the policy's non-compliant resources in the tenants the
// request covers, a page of policyRows, each linking its resource page;
// a policy with none there is a 404, as its API route answers.
func (h *Handlers) policyPage(w http.ResponseWriter, r *http.Request, in *policyIn) {
	ctx := r.Context()
	if in.PolicyID == "" {
		sdkui.WriteFragment(w, http.StatusOK, sdkui.Empty("This page lists one policy's non-compliant resources: open it from a policy of the compliance page's non-compliant list."))
		return
	}
	res, err := states.NamedPolicyResources(ctx, h.States, h.Host, states.PolicyResourcesQuery{TenantIDs: sdkui.Tenants(r),
		PolicyID: in.PolicyID, Limit: policyRows, Offset: in.Offset})
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	rows := make([][]any, len(res.Items))
	for i, it := range res.Items {
		rows[i] = []any{it.TenantName, resourceAnchor(it.ResourceID), it.ResourceType, sdkui.Badge(it.ComplianceState, sdkui.Critical), sdkui.Time(it.LastEvaluatedAt)}
	}
	nav := struct{ Prev, Next string }{}
	if in.Offset > 0 {
		nav.Prev = policyLink(in.PolicyID, string(in.Tenant), max(in.Offset-policyRows, 0))
	}
	if in.Offset+policyRows < res.Total {
		nav.Next = policyLink(in.PolicyID, string(in.Tenant), in.Offset+policyRows)
	}
	api := url.Values{"policy_id": {in.PolicyID}, "limit": {strconv.Itoa(apiPage)}}
	if in.Tenant != "" {
		api.Set("tenant_ids", string(in.Tenant))
	}
	sdkui.WriteFragment(w, http.StatusOK, sdkui.Card(res.PolicyName, stack(
		render("policy", struct {
			Severity   template.HTML
			Category   string
			Total, API string
			PageSize   int
		}{sdkui.Badge(res.Severity, severityHealth[res.Severity]), res.Category, count(int64(res.Total)),
			"/api/v1/compliance/non-compliant/resources?" + api.Encode(), apiPage}),
		sdkui.Table([]string{"Tenant", "Resource", "Type", "State", "Last evaluated"}, rows, pageCaption(in.Offset, len(rows), res.Total)),
		render("pages", nav),
	)))
}

// resourceAnchor is a resource's name, the last segment of its ARM id,
// linking its resource page.
func resourceAnchor(resourceID string) template.HTML {
	name := resourceID[strings.LastIndex(resourceID, "/")+1:]
	return render("anchor", struct{ Href, Text string }{resourcePagePath + "?resource_id=" + url.QueryEscape(resourceID), name})
}

// pageCaption says which of the policy's resources a page of shown rows
// from offset lists.
func pageCaption(offset, shown, total int) string {
	which := count(int64(shown))
	if offset > 0 && shown > 0 {
		which = count(int64(offset+1)) + " to " + count(int64(offset+shown))
	}
	return which + " of " + count(int64(total)) + " non-compliant resources, by tenant and resource id"
}
