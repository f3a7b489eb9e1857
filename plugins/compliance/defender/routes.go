package defender

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/sdk"
)

// Handlers serves the defender reads.
type Handlers struct {
	Store *Store
	// Host names tenants.
	Host *sdk.Host
}

var tags = []string{"compliance"}

// Routes declares the defender read routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	return []sdk.Route{
		sdk.Get("/api/v1/compliance/defender/assessments", sdk.Op{ID: "compliance-defender-assessments", Tags: tags,
			Summary: "Defender for Cloud assessments",
			Description: "The tenants' Defender for Cloud assessments at their subscriptions' last defender sync, one record per resource and recommendation, " +
				"by severity (High first), then Unhealthy before Healthy before NotApplicable, then by recommendation and resource. " +
				"A JSON array, one page of it; X-Total-Count says how many match."}, h.assessments),
		sdk.Get("/api/v1/compliance/secure-score", sdk.Op{ID: "compliance-secure-score", Tags: tags, Summary: "Defender for Cloud secure score",
			Description: "Each tenant's secure score from its subscriptions' last defender sync: per subscription its score, maximum and percentage and its " +
				"security controls with their healthy and unhealthy resources; per tenant and over all the tenants the sum of the scores over the sum of the maxima, " +
				"so each subscription weighs by its maximum. Percentages are in percent to two decimals, null for a maximum of zero."}, h.secureScore),
	}
}

type assessmentsIn struct {
	Tenants      sdk.TenantIDs `query:"tenant_ids"`
	Status       string        `query:"status" enum:"Healthy,Unhealthy,NotApplicable"`
	Severity     string        `query:"severity" enum:"High,Medium,Low"`
	ResourceType string        `query:"resource_type" maxLength:"200" doc:"An ARM resource type such as Microsoft.Storage/storageAccounts, in any case"`
	Limit        int           `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset       int           `query:"offset" minimum:"0" default:"0"`
}

// AssessmentItem is one assessment of the list.
type AssessmentItem struct {
	TenantID           string    `json:"tenant_id"`
	SubscriptionID     string    `json:"subscription_id"`
	AssessmentID       string    `json:"assessment_id" doc:"The assessment's ARM id"`
	AssessmentName     string    `json:"assessment_name" doc:"The assessment key (a GUID) naming the recommendation"`
	ResourceID         string    `json:"resource_id"`
	ResourceType       string    `json:"resource_type" doc:"In lower case"`
	DisplayName        string    `json:"display_name"`
	Status             string    `json:"status" enum:"Healthy,Unhealthy,NotApplicable"`
	Severity           string    `json:"severity" doc:"High, Medium or Low; empty when Defender names none"`
	PolicyDefinitionID string    `json:"policy_definition_id" doc:"The policy definition the recommendation is built on; empty for none"`
	Remediation        string    `json:"remediation"`
	Category           string    `json:"category"`
	SyncedAt           time.Time `json:"synced_at"`
}

// AssessmentPage is a page of the assessments list.
type AssessmentPage struct {
	Total int `header:"X-Total-Count" doc:"How many match in all, beyond this page"`
	Body  []AssessmentItem
}

func (h *Handlers) assessments(ctx context.Context, in *assessmentsIn) (*AssessmentPage, error) {
	rows, total, err := h.Store.Assessments(ctx, AssessmentQuery{TenantIDs: in.Tenants, Status: in.Status, Severity: in.Severity,
		ResourceType: strings.ToLower(strings.TrimSpace(in.ResourceType)), Limit: in.Limit, Offset: in.Offset})
	if err != nil {
		return nil, err
	}
	out := &AssessmentPage{Total: total, Body: make([]AssessmentItem, len(rows))}
	for i, r := range rows {
		out.Body[i] = AssessmentItem{TenantID: r.TenantID, SubscriptionID: r.SubscriptionID, AssessmentID: r.AssessmentID,
			AssessmentName: r.AssessmentName, ResourceID: r.ResourceID, ResourceType: r.ResourceType, DisplayName: r.DisplayName,
			Status: r.Status, Severity: r.Severity, PolicyDefinitionID: r.PolicyDefinitionID, Remediation: r.Remediation,
			Category: r.Category, SyncedAt: r.SyncedAt.UTC()}
	}
	return out, nil
}

type secureScoreIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
}

// SecureScoreReport is the secure score of the tenants.
type SecureScoreReport struct {
	Current    float64       `json:"current" doc:"The sum of the tenants' scores"`
	Max        int64         `json:"max" doc:"The sum of their maxima"`
	Percentage *float64      `json:"percentage" doc:"current of max in percent; null for a max of zero"`
	Tenants    []TenantScore `json:"tenants" doc:"By tenant name; a tenant never synced has no subscriptions and a zero score"`
}

// TenantScore is one tenant's secure score.
type TenantScore struct {
	TenantID      string              `json:"tenant_id"`
	TenantName    string              `json:"tenant_name"`
	Current       float64             `json:"current"`
	Max           int64               `json:"max"`
	Percentage    *float64            `json:"percentage"`
	Subscriptions []SubscriptionScore `json:"subscriptions" doc:"By subscription id"`
}

// SubscriptionScore is one subscription's secure score.
type SubscriptionScore struct {
	SubscriptionID string         `json:"subscription_id"`
	Current        float64        `json:"current"`
	Max            int64          `json:"max"`
	Percentage     *float64       `json:"percentage"`
	SyncedAt       time.Time      `json:"synced_at"`
	Controls       []ControlScore `json:"controls" doc:"By display name"`
}

// ControlScore is one security control's part of a subscription's score.
type ControlScore struct {
	Name                   string   `json:"name" doc:"The control's key, a GUID"`
	DisplayName            string   `json:"display_name"`
	Current                float64  `json:"current"`
	Max                    int64    `json:"max"`
	Percentage             *float64 `json:"percentage"`
	HealthyResources       int64    `json:"healthy_resources"`
	UnhealthyResources     int64    `json:"unhealthy_resources"`
	NotApplicableResources int64    `json:"not_applicable_resources"`
}

// round2 rounds a score to two decimals, which sums of floats may leave.
func round2(v float64) float64 { return math.Round(v*100) / 100 }

func (h *Handlers) secureScore(ctx context.Context, in *secureScoreIn) (*SecureScoreReport, error) {
	scores, controls, err := h.Store.Scores(ctx, in.Tenants)
	if err != nil {
		return nil, err
	}
	names, err := pluginenv.TenantNames(ctx, h.Host, in.Tenants)
	if err != nil {
		return nil, err
	}
	bySub := map[string][]ControlScore{}
	for _, c := range controls {
		bySub[c.SubscriptionID] = append(bySub[c.SubscriptionID], ControlScore{Name: c.Name, DisplayName: c.DisplayName, Current: c.Current,
			Max: c.Max, Percentage: percent(c.Current, c.Max), HealthyResources: c.HealthyResources, UnhealthyResources: c.UnhealthyResources,
			NotApplicableResources: c.NotApplicableResources})
	}
	byTenant := map[string]*TenantScore{}
	out := &SecureScoreReport{Tenants: make([]TenantScore, 0, len(in.Tenants))}
	for _, id := range in.Tenants {
		out.Tenants = append(out.Tenants, TenantScore{TenantID: id, TenantName: names[id], Subscriptions: []SubscriptionScore{}})
	}
	for i := range out.Tenants {
		byTenant[out.Tenants[i].TenantID] = &out.Tenants[i]
	}
	for _, s := range scores {
		t := byTenant[s.TenantID]
		if t == nil {
			continue
		}
		list := bySub[s.SubscriptionID]
		slices.SortFunc(list, func(a, b ControlScore) int {
			return cmp.Or(cmp.Compare(a.DisplayName, b.DisplayName), cmp.Compare(a.Name, b.Name))
		})
		if list == nil {
			list = []ControlScore{}
		}
		t.Subscriptions = append(t.Subscriptions, SubscriptionScore{SubscriptionID: s.SubscriptionID, Current: s.Current, Max: s.Max,
			Percentage: percent(s.Current, s.Max), SyncedAt: s.SyncedAt.UTC(), Controls: list})
		t.Current += s.Current
		t.Max += s.Max
	}
	for i := range out.Tenants {
		t := &out.Tenants[i]
		t.Current = round2(t.Current)
		t.Percentage = percent(t.Current, t.Max)
		out.Current += t.Current
		out.Max += t.Max
	}
	out.Current = round2(out.Current)
	out.Percentage = percent(out.Current, out.Max)
	slices.SortFunc(out.Tenants, func(a, b TenantScore) int {
		return cmp.Or(cmp.Compare(a.TenantName, b.TenantName), cmp.Compare(a.TenantID, b.TenantID))
	})
	return out, nil
}
