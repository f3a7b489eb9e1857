package cloud

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/policyinsights/armpolicyinsights"
)

// PolicyState is a policy's latest compliance state for one resource.
type PolicyState struct {
	SubscriptionID string
	ResourceID     string
	// ResourceType is e.g. Microsoft.Storage/storageAccounts.
	ResourceType     string
	ResourceGroup    string
	ResourceLocation string
	// ComplianceState is Compliant, NonCompliant, Exempt, Conflict or
	// Unknown.
	ComplianceState    string
	PolicyAssignmentID string
	PolicyDefinitionID string
	// PolicyDefinitionName is the definition's resource name, the last
	// segment of its id (a GUID for built-in policies).
	PolicyDefinitionName string
	// DefinitionCategory is the definition's category, e.g. Storage.
	DefinitionCategory string
	// PolicySetDefinitionID and SetCategory are the initiative's, when the
	// policy is assigned through one.
	PolicySetDefinitionID string
	SetCategory           string
	// GroupNames are the initiative's groups the policy belongs to, such
	// as regulatory controls (e.g. SOC_2_CC6.1).
	GroupNames []string
	// DisplayName and Severity (Low, Medium, High) belong to the policy
	// definition, which Azure does not repeat in states. They are filled
	// when the service sends the definition's display name and metadata
	// with the state, as the simulated cloud does, and empty otherwise.
	DisplayName string
	Severity    string
	// Timestamp is when the state was evaluated.
	Timestamp time.Time
}

// PolicyFilterNonCompliant is the PolicyStates filter that keeps the
// non-compliant states only.
const PolicyFilterNonCompliant = "complianceState eq 'NonCompliant'"

// The properties a state carries beyond the API's model, with the policy
// definition's display name and metadata; see PolicyState.
const (
	propDisplayName = "policyDefinitionDisplayName"
	propMetadata    = "policyDefinitionMetadata"
)

// PolicyStates calls fn for each latest policy state in a subscription
// that passes filter, an OData $filter such as PolicyFilterNonCompliant
// (empty for all). Pages are streamed; an error from fn stops the listing
// and is returned as is.
//
// Policy Insights takes the page after the first by POSTing the query
// again with the $skiptoken of @odata.nextLink, and refuses the GET the
// SDK's pager sends to that link. So each page is the first page of a
// fresh pager, given the previous page's $skiptoken.
func (c *ResourceManager) PolicyStates(ctx context.Context, subscriptionID, filter string, fn func(PolicyState) error) error {
	op := "query policy states of subscription " + subscriptionID
	opts := &armpolicyinsights.PolicyStatesClientListQueryResultsForSubscriptionOptions{}
	if filter != "" {
		opts.Filter = &filter
	}
	for {
		page, err := c.policyStates.NewListQueryResultsForSubscriptionPager(armpolicyinsights.PolicyStatesResourceLatest, subscriptionID, opts).NextPage(ctx)
		if err != nil {
			return wrap(op, err)
		}
		for _, s := range page.Value {
			if s == nil {
				continue
			}
			if err := fn(policyStateOf(s)); err != nil {
				return err
			}
		}
		next := deref(page.ODataNextLink)
		if next == "" {
			return nil
		}
		u, err := url.Parse(next)
		token := ""
		if err == nil {
			token = u.Query().Get("$skiptoken")
		}
		if token == "" {
			return fmt.Errorf("cloud: %s: the next page's link %q has no $skiptoken", op, next)
		}
		opts.SkipToken = &token
	}
}

func policyStateOf(s *armpolicyinsights.PolicyState) PolicyState {
	out := PolicyState{
		SubscriptionID:        deref(s.SubscriptionID),
		ResourceID:            deref(s.ResourceID),
		ResourceType:          deref(s.ResourceType),
		ResourceGroup:         deref(s.ResourceGroup),
		ResourceLocation:      deref(s.ResourceLocation),
		ComplianceState:       deref(s.ComplianceState),
		PolicyAssignmentID:    deref(s.PolicyAssignmentID),
		PolicyDefinitionID:    deref(s.PolicyDefinitionID),
		PolicyDefinitionName:  deref(s.PolicyDefinitionName),
		DefinitionCategory:    deref(s.PolicyDefinitionCategory),
		PolicySetDefinitionID: deref(s.PolicySetDefinitionID),
		SetCategory:           deref(s.PolicySetDefinitionCategory),
		Timestamp:             deref(s.Timestamp).UTC(),
	}
	out.GroupNames = derefAll(s.PolicyDefinitionGroupNames)
	out.DisplayName, _ = s.AdditionalProperties[propDisplayName].(string)
	meta, _ := s.AdditionalProperties[propMetadata].(map[string]any)
	security, _ := meta["securityCenter"].(map[string]any)
	out.Severity, _ = security["Severity"].(string)
	return out
}

// PolicySummary is a subscription's policy compliance at a glance.
type PolicySummary struct {
	NonCompliantResources int
	NonCompliantPolicies  int
	// Resources counts the resources in each compliance state, named in
	// lower case as summaries name them (compliant, noncompliant…).
	Resources   map[string]int
	Assignments []PolicyAssignmentSummary
}

// PolicyAssignmentSummary is one policy assignment's compliance.
type PolicyAssignmentSummary struct {
	PolicyAssignmentID string
	// PolicySetDefinitionID is the initiative assigned, or empty for a
	// single policy.
	PolicySetDefinitionID string
	NonCompliantResources int
	NonCompliantPolicies  int
	Definitions           []PolicyDefinitionSummary
	Groups                []PolicyGroupSummary
}

// PolicyDefinitionSummary is one policy's compliance within an assignment.
type PolicyDefinitionSummary struct {
	PolicyDefinitionID    string
	ReferenceID           string
	GroupNames            []string
	Effect                string
	NonCompliantResources int
}

// PolicyGroupSummary is one policy definition group's compliance within
// an initiative's assignment.
type PolicyGroupSummary struct {
	Name                  string
	NonCompliantResources int
}

// PolicySummary summarises the latest policy states of a subscription.
func (c *ResourceManager) PolicySummary(ctx context.Context, subscriptionID string) (PolicySummary, error) {
	resp, err := c.policyStates.SummarizeForSubscription(ctx, armpolicyinsights.PolicyStatesSummaryResourceTypeLatest, subscriptionID, nil)
	if err != nil {
		return PolicySummary{}, wrap("summarize policy states of subscription "+subscriptionID, err)
	}
	out := PolicySummary{Resources: map[string]int{}}
	// The summary of a scope is always one item.
	if len(resp.Value) == 0 || resp.Value[0] == nil {
		return out, nil
	}
	sum := resp.Value[0]
	if r := sum.Results; r != nil {
		out.NonCompliantResources, out.NonCompliantPolicies = int(deref(r.NonCompliantResources)), int(deref(r.NonCompliantPolicies))
		for _, d := range r.ResourceDetails {
			if d != nil {
				out.Resources[deref(d.ComplianceState)] = int(deref(d.Count))
			}
		}
	}
	for _, a := range sum.PolicyAssignments {
		if a == nil {
			continue
		}
		as := PolicyAssignmentSummary{PolicyAssignmentID: deref(a.PolicyAssignmentID), PolicySetDefinitionID: deref(a.PolicySetDefinitionID)}
		if a.Results != nil {
			as.NonCompliantResources, as.NonCompliantPolicies = int(deref(a.Results.NonCompliantResources)), int(deref(a.Results.NonCompliantPolicies))
		}
		for _, d := range a.PolicyDefinitions {
			if d == nil {
				continue
			}
			ds := PolicyDefinitionSummary{PolicyDefinitionID: deref(d.PolicyDefinitionID), ReferenceID: deref(d.PolicyDefinitionReferenceID),
				GroupNames: derefAll(d.PolicyDefinitionGroupNames), Effect: deref(d.Effect)}
			if d.Results != nil {
				ds.NonCompliantResources = int(deref(d.Results.NonCompliantResources))
			}
			as.Definitions = append(as.Definitions, ds)
		}
		for _, g := range a.PolicyGroups {
			if g == nil {
				continue
			}
			gs := PolicyGroupSummary{Name: deref(g.PolicyGroupName)}
			if g.Results != nil {
				gs.NonCompliantResources = int(deref(g.Results.NonCompliantResources))
			}
			as.Groups = append(as.Groups, gs)
		}
		out.Assignments = append(out.Assignments, as)
	}
	return out, nil
}
