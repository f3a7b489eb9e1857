package arm

import (
	"math"
	"net/http"
	"strings"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Microsoft.Security: Defender for Cloud's assessments and secure score at
// subscription scope, from the world's security assessments and secure
// scores.
//
// Assessments are listed at api-version 2021-06-01 or later; $expand=
// metadata adds each assessment's metadata (display name, severity, policy
// definition id, remediation, categories, assessment type), which Azure
// otherwise leaves out. Every subscription has the one secure score Azure
// keeps, ascScore, the sum of its controls' scores; a subscription the
// world gives no controls scores 0 of 0. Percentages are fractions, as
// Azure sends them. $expand=definition on the controls adds each control's
// definition. Lists come in one page.

const (
	securityPath = "/providers/Microsoft.Security"
	// ascScore is the name of the one secure score of a subscription.
	ascScore = "ascScore"
)

func (srv *server) registerSecurity() {
	base := "/subscriptions/{subscriptionId}" + securityPath
	srv.handle("GET "+base+"/assessments", srv.securityAssessments)
	srv.handle("GET "+base+"/secureScores", srv.secureScores)
	srv.handle("GET "+base+"/secureScores/{secureScoreName}", srv.secureScoreItem)
	srv.handle("GET "+base+"/secureScoreControls", srv.secureScoreControls)
}

// securityScope is the request's subscription, once it is known; else it
// answers 404.
func (srv *server) securityScope(w http.ResponseWriter, r *http.Request) (string, bool) {
	subID := r.PathValue("subscriptionId")
	if _, _, ok := srv.subscription(subID); !ok {
		subscriptionNotFound(w, subID)
		return "", false
	}
	return subID, true
}

// securityExpand checks $expand, which names at most one of allowed.
func securityExpand(w http.ResponseWriter, r *http.Request, allowed string) (bool, bool) {
	switch e := r.URL.Query().Get("$expand"); {
	case e == "":
		return false, true
	case strings.EqualFold(e, allowed):
		return true, true
	default:
		badRequest(w, "The $expand value '%s' is not supported; use '%s'.", e, allowed)
		return false, false
	}
}

type assessmentJSON struct {
	ID         string                   `json:"id"`
	Name       string                   `json:"name"`
	Type       string                   `json:"type"`
	Properties assessmentPropertiesJSON `json:"properties"`
}

type assessmentPropertiesJSON struct {
	ResourceDetails map[string]string       `json:"resourceDetails"`
	DisplayName     string                  `json:"displayName"`
	Status          map[string]string       `json:"status"`
	AdditionalData  map[string]string       `json:"additionalData"`
	Links           map[string]string       `json:"links"`
	Metadata        *assessmentMetadataJSON `json:"metadata,omitempty"`
}

type assessmentMetadataJSON struct {
	DisplayName            string   `json:"displayName"`
	PolicyDefinitionID     string   `json:"policyDefinitionId,omitempty"`
	Description            string   `json:"description"`
	RemediationDescription string   `json:"remediationDescription"`
	Categories             []string `json:"categories"`
	Severity               string   `json:"severity"`
	AssessmentType         string   `json:"assessmentType"`
}

func (srv *server) securityAssessments(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	subID, ok := srv.securityScope(w, r)
	if !ok {
		return
	}
	if v := r.URL.Query().Get("api-version"); v < "2021-06-01" {
		badRequest(w, "The api-version '%s' is not supported for assessments; use 2021-06-01 or later.", v)
		return
	}
	expand, ok := securityExpand(w, r, "metadata")
	if !ok {
		return
	}
	out := []assessmentJSON{}
	for _, a := range srv.sim.World().SecurityAssessments {
		if !strings.EqualFold(a.SubscriptionID, subID) {
			continue
		}
		rec := assessmentJSON{
			ID:   a.ResourceID + securityPath + "/assessments/" + a.Name,
			Name: a.Name,
			Type: "Microsoft.Security/assessments",
			Properties: assessmentPropertiesJSON{
				ResourceDetails: map[string]string{"source": "Azure", "id": a.ResourceID},
				DisplayName:     a.DisplayName,
				Status:          map[string]string{"code": a.Status},
				AdditionalData:  map[string]string{},
				Links:           map[string]string{"azurePortalUri": "https://portal.azure.com/#blade/Microsoft_Azure_Security/RecommendationsBlade/assessmentKey/" + a.Name},
			},
		}
		if expand {
			var categories []string
			if a.Category != "" {
				categories = []string{a.Category}
			}
			rec.Properties.Metadata = &assessmentMetadataJSON{DisplayName: a.DisplayName, PolicyDefinitionID: a.PolicyDefinitionID,
				Description: a.DisplayName, RemediationDescription: a.RemediationDescription, Categories: categories,
				Severity: a.Severity, AssessmentType: "BuiltIn"}
		}
		out = append(out, rec)
	}
	cloudsim.WriteJSON(w, map[string]any{"value": out})
}

// scoreJSON is a score's details; percentage is a fraction to four
// decimals.
type scoreJSON struct {
	Max        int     `json:"max"`
	Current    float64 `json:"current"`
	Percentage float64 `json:"percentage"`
}

func scoreOf(current float64, maxScore int) scoreJSON {
	s := scoreJSON{Max: maxScore, Current: math.Round(current*100) / 100}
	if maxScore > 0 {
		s.Percentage = math.Round(current/float64(maxScore)*10000) / 10000
	}
	return s
}

// secureScore is the world's secure score of a subscription, or one with
// no controls.
func (srv *server) secureScore(subID string) world.SecureScore {
	for _, s := range srv.sim.World().SecureScores {
		if strings.EqualFold(s.SubscriptionID, subID) {
			return s
		}
	}
	return world.SecureScore{SubscriptionID: subID}
}

func (srv *server) secureScores(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	subID, ok := srv.securityScope(w, r)
	if !ok {
		return
	}
	cloudsim.WriteJSON(w, map[string]any{"value": []map[string]any{srv.ascScore(subID)}})
}

// secureScoreItem answers the one secure score by name; any other name
// is not found.
func (srv *server) secureScoreItem(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	subID, ok := srv.securityScope(w, r)
	if !ok {
		return
	}
	if name := r.PathValue("secureScoreName"); !strings.EqualFold(name, ascScore) {
		cloudsim.WriteError(w, http.StatusNotFound, "NotFound", "The secure score '"+name+"' was not found.")
		return
	}
	cloudsim.WriteJSON(w, srv.ascScore(subID))
}

// ascScore is a subscription's secure score record.
func (srv *server) ascScore(subID string) map[string]any {
	var current float64
	var maxScore int
	for _, c := range srv.secureScore(subID).Controls {
		current += c.Current
		maxScore += c.Max
	}
	return map[string]any{
		"id":   "/subscriptions/" + subID + securityPath + "/secureScores/" + ascScore,
		"name": ascScore,
		"type": "Microsoft.Security/secureScores",
		"properties": map[string]any{
			"displayName": "ASC score",
			"score":       scoreOf(current, maxScore),
			"weight":      maxScore,
		},
	}
}

func (srv *server) secureScoreControls(w http.ResponseWriter, r *http.Request, _ idp.Claims) {
	subID, ok := srv.securityScope(w, r)
	if !ok {
		return
	}
	expand, ok := securityExpand(w, r, "definition")
	if !ok {
		return
	}
	controls := srv.secureScore(subID).Controls
	out := make([]map[string]any, 0, len(controls))
	for _, c := range controls {
		props := map[string]any{
			"displayName":                c.DisplayName,
			"healthyResourceCount":       c.HealthyResources,
			"unhealthyResourceCount":     c.UnhealthyResources,
			"notApplicableResourceCount": c.NotApplicableResources,
			"weight":                     c.HealthyResources + c.UnhealthyResources,
			"score":                      scoreOf(c.Current, c.Max),
		}
		if expand {
			props["definition"] = map[string]any{
				"id":   securityPath + "/secureScoreControlDefinitions/" + c.Name,
				"name": c.Name,
				"type": "Microsoft.Security/secureScoreControlDefinitions",
				"properties": map[string]any{
					"displayName": c.DisplayName,
					"maxScore":    c.Max,
					"source":      map[string]any{"sourceType": "BuiltIn"},
				},
			}
		}
		out = append(out, map[string]any{
			"id":         "/subscriptions/" + subID + securityPath + "/secureScores/" + ascScore + "/securescoreControls/" + c.Name,
			"name":       c.Name,
			"type":       "Microsoft.Security/secureScores/secureScoreControls",
			"properties": props,
		})
	}
	cloudsim.WriteJSON(w, map[string]any{"value": out})
}
