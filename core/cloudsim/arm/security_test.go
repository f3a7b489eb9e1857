package arm_test

import (
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/world"
)

const (
	securityBase  = "/subscriptions/" + subA + "/providers/Microsoft.Security/"
	assessmentKey = "4fb67663-9ab9-475d-b026-8c544cced439"
)

// securityEnv serves one unhealthy assessment of the storage account and
// a secure score of one control in subscription A.
func securityEnv(t *testing.T) *env {
	w := testWorld()
	w.SecurityAssessments = []world.SecurityAssessment{{SubscriptionID: subA, ResourceID: storageID, Name: assessmentKey,
		DisplayName: "Storage accounts should have the specified minimum TLS version", Status: "Unhealthy", Severity: "Medium",
		PolicyDefinitionID: tlsPolicy, RemediationDescription: "Set the minimum TLS version to 1.2.", Category: "Data"}}
	w.SecureScores = []world.SecureScore{{SubscriptionID: subA, Controls: []world.SecureScoreControl{
		{Name: "ctl-1", DisplayName: "Encrypt data in transit", Current: 1.25, Max: 4, HealthyResources: 1, UnhealthyResources: 3}}}}
	return startWorld(t, w)
}

// TestSecurityAssessments: an assessment in Azure's shape, its metadata
// only with $expand=metadata; an old api-version and an unknown $expand
// are refused.
func TestSecurityAssessments(t *testing.T) {
	e := securityEnv(t)
	resp, body := e.do("GET", securityBase+"assessments?api-version=2021-06-01", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	recs := records(body)
	if len(recs) != 1 {
		t.Fatalf("assessments %v", body)
	}
	a := recs[0]
	props := a["properties"].(map[string]any)
	details := props["resourceDetails"].(map[string]any)
	if a["id"] != storageID+"/providers/Microsoft.Security/assessments/"+assessmentKey || a["name"] != assessmentKey ||
		a["type"] != "Microsoft.Security/assessments" || details["source"] != "Azure" || details["id"] != storageID ||
		props["status"].(map[string]any)["code"] != "Unhealthy" || props["metadata"] != nil {
		t.Errorf("assessment %v", a)
	}
	_, body = e.do("GET", securityBase+"assessments?api-version=2021-06-01&$expand=metadata", nil)
	meta := records(body)[0]["properties"].(map[string]any)["metadata"].(map[string]any)
	if meta["severity"] != "Medium" || meta["policyDefinitionId"] != tlsPolicy || meta["assessmentType"] != "BuiltIn" ||
		meta["remediationDescription"] != "Set the minimum TLS version to 1.2." || meta["categories"].([]any)[0] != "Data" {
		t.Errorf("metadata %v", meta)
	}
	if resp, body := e.do("GET", securityBase+"assessments?api-version=2020-01-01", nil); resp.StatusCode != 400 {
		t.Errorf("an old api-version: %d %v", resp.StatusCode, body)
	}
	if resp, body := e.do("GET", securityBase+"assessments?api-version=2021-06-01&$expand=links", nil); resp.StatusCode != 400 {
		t.Errorf("an unknown $expand: %d %v", resp.StatusCode, body)
	}
	if resp, _ := e.do("GET", "/subscriptions/00000000-0000-0000-0000-00000000dead/providers/Microsoft.Security/assessments?api-version=2021-06-01", nil); resp.StatusCode != 404 {
		t.Errorf("an unknown subscription: %d", resp.StatusCode)
	}
}

// TestSecureScores: ascScore sums the controls, percentages as fractions;
// a control's definition only with $expand=definition; another score's
// name is not found; a subscription without controls scores 0 of 0.
func TestSecureScores(t *testing.T) {
	e := securityEnv(t)
	_, body := e.do("GET", securityBase+"secureScores?api-version=2020-01-01", nil)
	score := records(body)[0]
	s := score["properties"].(map[string]any)["score"].(map[string]any)
	if score["name"] != "ascScore" || s["current"] != 1.25 || s["max"] != 4.0 || s["percentage"] != 0.3125 {
		t.Errorf("secure score %v", score)
	}
	if resp, body := e.do("GET", securityBase+"secureScores/ascScore?api-version=2020-01-01", nil); resp.StatusCode != 200 || body["name"] != "ascScore" {
		t.Errorf("ascScore by name: %d %v", resp.StatusCode, body)
	}
	if resp, _ := e.do("GET", securityBase+"secureScores/other?api-version=2020-01-01", nil); resp.StatusCode != 404 {
		t.Errorf("another score: %d", resp.StatusCode)
	}
	_, body = e.do("GET", securityBase+"secureScoreControls?api-version=2020-01-01", nil)
	ctl := records(body)[0]
	props := ctl["properties"].(map[string]any)
	if ctl["name"] != "ctl-1" || props["healthyResourceCount"] != 1.0 || props["unhealthyResourceCount"] != 3.0 ||
		props["score"].(map[string]any)["percentage"] != 0.3125 || props["definition"] != nil {
		t.Errorf("control %v", ctl)
	}
	_, body = e.do("GET", securityBase+"secureScoreControls?api-version=2020-01-01&$expand=definition", nil)
	def := records(body)[0]["properties"].(map[string]any)["definition"].(map[string]any)
	if def["name"] != "ctl-1" || def["properties"].(map[string]any)["maxScore"] != 4.0 {
		t.Errorf("definition %v", def)
	}
	_, body = e.do("GET", "/subscriptions/"+subB+"/providers/Microsoft.Security/secureScores?api-version=2020-01-01", nil)
	if s := records(body)[0]["properties"].(map[string]any)["score"].(map[string]any); s["max"] != 0.0 || s["current"] != 0.0 {
		t.Errorf("a subscription without controls: %v", s)
	}
}
