package arm_test

import (
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// benefitWorld is testWorld with a savings plan bought on 2025-10-20 for a
// year, so it ends five days after the clock's day, used 60–100 % on
// 2026-10-13 and 2026-10-14, and a three-year recommendation from the
// last 30 days.
func benefitWorld() *world.World {
	w := testWorld()
	w.SavingsPlans = []world.SavingsPlan{{BillingAccountID: billingAccount, SavingsPlanOrderID: "spo-1", SavingsPlanID: "sp-1", Name: "compute",
		Term: "P1Y", PurchaseDate: "2025-10-20", HourlyCommitment: 2.5, Currency: "USD", Utilization: []world.SavingsPlanDay{
			{Date: "2026-10-13", MinUtilization: 60, AvgUtilization: 70, MaxUtilization: 80},
			{Date: "2026-10-14", MinUtilization: 80, AvgUtilization: 90, MaxUtilization: 100},
		}}}
	w.BenefitRecommendations = []world.BenefitRecommendation{{BillingAccountID: billingAccount, Term: "P3Y", LookBackDays: 30,
		CommitmentAmount: 1.25, Currency: "USD", CostWithoutBenefit: 2000, SavingsAmount: 400, AverageUtilization: 90, Coverage: 75,
		FirstConsumptionDate: "2026-09-15", LastConsumptionDate: "2026-10-14"}}
	return w
}

const (
	savingsPlansPath  = "/providers/Microsoft.BillingBenefits/savingsPlans?api-version=2022-11-01"
	utilizationPath   = "/providers/Microsoft.BillingBenefits/savingsPlanOrders/spo-1/providers/Microsoft.CostManagement/benefitUtilizationSummaries?api-version=2022-10-01&"
	benefitRecsPrefix = "/providers/Microsoft.Billing/billingAccounts/"
)

func TestSavingsPlanList(t *testing.T) {
	e := startWorld(t, benefitWorld())
	resp, body := e.do("GET", savingsPlansPath, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	value := body["value"].([]any)
	if len(value) != 1 {
		t.Fatalf("%d plans, want 1", len(value))
	}
	sp := value[0].(map[string]any)
	p := sp["properties"].(map[string]any)
	c := p["commitment"].(map[string]any)
	u := p["utilization"].(map[string]any)
	aggs := u["aggregates"].([]any)
	if sp["id"] != "/providers/Microsoft.BillingBenefits/savingsPlanOrders/spo-1/savingsPlans/sp-1" || sp["name"] != "sp-1" ||
		sp["type"] != "Microsoft.BillingBenefits/savingsPlanOrders/savingsPlans" || p["displayName"] != "compute" ||
		p["billingScopeId"] != "/providers/Microsoft.Billing/billingAccounts/"+billingAccount || p["term"] != "P1Y" ||
		p["purchaseDateTime"] != "2025-10-20T00:00:00Z" || p["expiryDateTime"] != "2026-10-20T00:00:00Z" || p["displayProvisioningState"] != "Succeeded" ||
		c["grain"] != "Hourly" || c["currencyCode"] != "USD" || c["amount"] != 2.5 ||
		u["trend"] != "UP" || len(aggs) != 3 || aggs[0].(map[string]any)["value"] != 90.0 || aggs[1].(map[string]any)["value"] != 80.0 {
		t.Fatalf("savings plan %v", sp)
	}

	// Five days on, the plan has expired (and the token too).
	e.clock.Advance(5 * 24 * time.Hour)
	e.token = e.getToken(arm.Audience + "/.default")
	_, body = e.do("GET", savingsPlansPath, nil)
	if p := body["value"].([]any)[0].(map[string]any)["properties"].(map[string]any); p["displayProvisioningState"] != "Expired" {
		t.Fatalf("the plan after its expiry: %v", p)
	}
}

func TestBenefitUtilizationSummaries(t *testing.T) {
	e := startWorld(t, benefitWorld())
	resp, body := e.do("GET", utilizationPath+"grainParameter=Daily&"+filter("properties/usageDate ge 2026-10-14 and properties/usageDate le 2026-10-31"), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	value := body["value"].([]any)
	if len(value) != 1 {
		t.Fatalf("%d summaries, want 1", len(value))
	}
	s := value[0].(map[string]any)
	p := s["properties"].(map[string]any)
	if s["kind"] != "SavingsPlan" || p["benefitId"] != "/providers/Microsoft.BillingBenefits/savingsPlanOrders/spo-1/savingsPlans/sp-1" ||
		p["benefitOrderId"] != "/providers/Microsoft.BillingBenefits/savingsPlanOrders/spo-1" || p["usageDate"] != "2026-10-14T00:00:00Z" ||
		p["avgUtilizationPercentage"] != 90.0 || p["minUtilizationPercentage"] != 80.0 || p["maxUtilizationPercentage"] != 100.0 {
		t.Fatalf("summary %v", s)
	}
	for name, c := range map[string]struct {
		path   string
		status int
		code   string
	}{
		"monthly":       {utilizationPath + "grainParameter=Monthly", 400, "BadRequest"},
		"no grain":      {utilizationPath, 400, "BadRequest"},
		"other filter":  {utilizationPath + "grainParameter=Daily&" + filter("properties/benefitId eq 'sp-1'"), 400, "BadRequest"},
		"unknown order": {"/providers/Microsoft.BillingBenefits/savingsPlanOrders/spo-9/providers/Microsoft.CostManagement/benefitUtilizationSummaries?api-version=2022-10-01&grainParameter=Daily", 404, "NotFound"},
	} {
		if resp, body := e.do("GET", c.path, nil); resp.StatusCode != c.status || errorCode(body) != c.code {
			t.Errorf("%s: %d %v", name, resp.StatusCode, body)
		}
	}
}

func TestBenefitRecommendations(t *testing.T) {
	e := startWorld(t, benefitWorld())
	path := func(account, query string) string {
		return benefitRecsPrefix + account + "/providers/Microsoft.CostManagement/benefitRecommendations?api-version=2022-10-01&" + query
	}
	resp, body := e.do("GET", path(billingAccount, filter("properties/lookBackPeriod eq 'Last30Days' and properties/term eq 'P3Y'")), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	value := body["value"].([]any)
	if len(value) != 1 {
		t.Fatalf("%d recommendations, want 1", len(value))
	}
	r := value[0].(map[string]any)
	p := r["properties"].(map[string]any)
	d := p["recommendationDetails"].(map[string]any)
	// 720 hours of 1.25: 900.00 of benefit, 10 % of it wasted; 1600.00 in
	// all, of which 700.00 beyond the commitment.
	if r["kind"] != "SavingsPlan" || p["scope"] != "Shared" || p["commitmentGranularity"] != "Hourly" || p["lookBackPeriod"] != "Last30Days" ||
		p["term"] != "P3Y" || p["currencyCode"] != "USD" || p["costWithoutBenefit"] != 2000.0 || p["totalHours"] != 720.0 ||
		d["commitmentAmount"] != 1.25 || d["benefitCost"] != 900.0 || d["totalCost"] != 1600.0 || d["overageCost"] != 700.0 ||
		d["savingsAmount"] != 400.0 || d["savingsPercentage"] != 20.0 || d["wastageCost"] != 90.0 || d["averageUtilizationPercentage"] != 90.0 {
		t.Fatalf("recommendation %v", r)
	}
	// The provider's defaults (the last 60 days, P3Y), another term, a
	// single scope: none.
	for _, q := range []string{"", filter("properties/lookBackPeriod eq 'Last30Days' and properties/term eq 'P1Y'"),
		filter("properties/lookBackPeriod eq 'Last30Days' and properties/scope eq 'Single'")} {
		if _, body := e.do("GET", path(billingAccount, q), nil); len(body["value"].([]any)) != 0 {
			t.Errorf("%q: %v", q, body)
		}
	}
	if resp, body := e.do("GET", path(billingAccount, filter("properties/lookBackPeriod eq 'Last14Days'")), nil); resp.StatusCode != 400 || errorCode(body) != "BadRequest" {
		t.Errorf("a look-back period not offered: %d %v", resp.StatusCode, body)
	}
	if resp, body := e.do("GET", path("87654321", ""), nil); resp.StatusCode != 403 || errorCode(body) != "AuthorizationFailed" {
		t.Errorf("another billing account: %d %v", resp.StatusCode, body)
	}
}
