package arm

import (
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Savings plans: Microsoft.BillingBenefits lists them (api-version
// 2022-11-01), Cost Management reports their utilisation per day and
// recommends what hourly commitment to buy, in the forms the SDK's
// armbillingbenefits and armcostmanagement (v2) models read.

func (srv *server) registerBenefits() {
	srv.handle("GET /providers/Microsoft.BillingBenefits/savingsPlans", srv.savingsPlans)
	srv.handle("GET /providers/Microsoft.BillingBenefits/savingsPlanOrders/{savingsPlanOrderId}/providers/Microsoft.CostManagement/benefitUtilizationSummaries",
		srv.benefitUtilizationSummaries)
	srv.handle("GET /providers/Microsoft.Billing/billingAccounts/{billingAccountId}/providers/Microsoft.CostManagement/benefitRecommendations",
		srv.benefitRecommendations)
}

type savingsPlanJSON struct {
	ID         string               `json:"id"`
	Name       string               `json:"name"`
	Type       string               `json:"type"`
	SKU        map[string]string    `json:"sku"`
	Properties savingsPlanPropsJSON `json:"properties"`
}

type savingsPlanPropsJSON struct {
	DisplayName              string              `json:"displayName"`
	ProvisioningState        string              `json:"provisioningState"`
	DisplayProvisioningState string              `json:"displayProvisioningState"`
	BillingScopeID           string              `json:"billingScopeId"`
	BillingAccountID         string              `json:"billingAccountId"`
	AppliedScopeType         string              `json:"appliedScopeType"`
	Term                     string              `json:"term"`
	BillingPlan              string              `json:"billingPlan"`
	PurchaseDateTime         string              `json:"purchaseDateTime"`
	BenefitStartTime         string              `json:"benefitStartTime"`
	EffectiveDateTime        string              `json:"effectiveDateTime"`
	ExpiryDateTime           string              `json:"expiryDateTime"`
	Renew                    bool                `json:"renew"`
	Commitment               commitmentJSON      `json:"commitment"`
	Utilization              planUtilizationJSON `json:"utilization"`
}

type commitmentJSON struct {
	Grain        string  `json:"grain"`
	CurrencyCode string  `json:"currencyCode"`
	Amount       float64 `json:"amount"`
}

type planUtilizationJSON struct {
	Trend      string                 `json:"trend"`
	Aggregates []utilizationAggregate `json:"aggregates"`
}

type utilizationAggregate struct {
	Grain     float64 `json:"grain"`
	GrainUnit string  `json:"grainUnit"`
	Value     float64 `json:"value"`
	ValueUnit string  `json:"valueUnit"`
}

// savingsPlanID is the resource id of a world savings plan.
func savingsPlanID(p *world.SavingsPlan) string {
	return "/providers/Microsoft.BillingBenefits/savingsPlanOrders/" + p.SavingsPlanOrderID + "/savingsPlans/" + p.SavingsPlanID
}

// savingsPlans serves every savings plan of the billing accounts the
// caller may read, in purchase order, with its mean utilisation over the
// last 1, 7 and 30 days reported; a plan past its expiry is listed as
// Expired.
func (srv *server) savingsPlans(w http.ResponseWriter, r *http.Request, c idp.Claims) {
	today := srv.sim.Now().UTC().Format(world.DateLayout)
	var plans []*world.SavingsPlan
	for i := range srv.sim.World().SavingsPlans {
		p := &srv.sim.World().SavingsPlans[i]
		if srv.reachesBillingAccount(c.TenantID, p.BillingAccountID) {
			plans = append(plans, p)
		}
	}
	slices.SortStableFunc(plans, func(a, b *world.SavingsPlan) int {
		return cmp.Or(strings.Compare(a.PurchaseDate, b.PurchaseDate), strings.Compare(a.SavingsPlanOrderID, b.SavingsPlanOrderID))
	})
	p := cloudsim.PageOf(r, srv.sim.URLs[cloudsim.ARM], len(plans), cloudsim.DefaultPageSize)
	value := make([]savingsPlanJSON, 0, p.End-p.Start)
	for _, sp := range plans[p.Start:p.End] {
		state := "Succeeded"
		if sp.ExpiryDate() <= today {
			state = "Expired"
		}
		scope := "/providers/Microsoft.Billing/billingAccounts/" + sp.BillingAccountID
		value = append(value, savingsPlanJSON{ID: savingsPlanID(sp), Name: sp.SavingsPlanID, Type: "Microsoft.BillingBenefits/savingsPlanOrders/savingsPlans",
			SKU: map[string]string{"name": "Compute_Savings_Plan"},
			Properties: savingsPlanPropsJSON{DisplayName: sp.Name, ProvisioningState: "Succeeded", DisplayProvisioningState: state,
				BillingScopeID: scope, BillingAccountID: scope, AppliedScopeType: "Shared", Term: sp.Term, BillingPlan: "P1M",
				PurchaseDateTime: sp.PurchaseDate + "T00:00:00Z", BenefitStartTime: sp.PurchaseDate + "T00:00:00Z",
				EffectiveDateTime: sp.PurchaseDate + "T00:00:00Z", ExpiryDateTime: sp.ExpiryDate() + "T00:00:00Z",
				Commitment:  commitmentJSON{Grain: "Hourly", CurrencyCode: sp.Currency, Amount: sp.HourlyCommitment},
				Utilization: planUtilization(sp, today)}})
	}
	writePage(w, value, p)
}

// planUtilization is a plan's mean daily utilisation over the last 1, 7
// and 30 days before today reported, and its trend: the last day against
// the last 7.
func planUtilization(p *world.SavingsPlan, today string) planUtilizationJSON {
	days := slices.Clone(p.Utilization)
	days = slices.DeleteFunc(days, func(d world.SavingsPlanDay) bool { return d.Date >= today })
	slices.SortFunc(days, func(a, b world.SavingsPlanDay) int { return strings.Compare(b.Date, a.Date) })
	out := planUtilizationJSON{Trend: "SAME", Aggregates: []utilizationAggregate{}}
	means := map[int]float64{}
	for _, n := range []int{1, 7, 30} {
		if len(days) == 0 {
			break
		}
		var sum float64
		last := days[:min(n, len(days))]
		for _, d := range last {
			sum += d.AvgUtilization
		}
		means[n] = sum / float64(len(last))
		out.Aggregates = append(out.Aggregates, utilizationAggregate{Grain: float64(n), GrainUnit: "days", Value: means[n], ValueUnit: "percentage"})
	}
	switch {
	case len(days) == 0:
	case means[1] > means[7]:
		out.Trend = "UP"
	case means[1] < means[7]:
		out.Trend = "DOWN"
	}
	return out
}

type benefitUtilizationJSON struct {
	ID         string                      `json:"id"`
	Name       string                      `json:"name"`
	Type       string                      `json:"type"`
	Kind       string                      `json:"kind"`
	Properties benefitUtilizationPropsJSON `json:"properties"`
}

type benefitUtilizationPropsJSON struct {
	ArmSKUName               string  `json:"armSkuName"`
	BenefitID                string  `json:"benefitId"`
	BenefitOrderID           string  `json:"benefitOrderId"`
	BenefitType              string  `json:"benefitType"`
	UsageDate                string  `json:"usageDate"`
	AvgUtilizationPercentage float64 `json:"avgUtilizationPercentage"`
	MinUtilizationPercentage float64 `json:"minUtilizationPercentage"`
	MaxUtilizationPercentage float64 `json:"maxUtilizationPercentage"`
}

// benefitUtilizationSummaries serves a savings plan order's utilisation,
// one record per plan and day of the $filter's properties/usageDate
// range; only the daily grain is served. An order unknown is a 404, one
// of a billing account the caller may not read a 403.
func (srv *server) benefitUtilizationSummaries(w http.ResponseWriter, r *http.Request, c idp.Claims) {
	order := r.PathValue("savingsPlanOrderId")
	var plan *world.SavingsPlan
	for i := range srv.sim.World().SavingsPlans {
		if p := &srv.sim.World().SavingsPlans[i]; strings.EqualFold(p.SavingsPlanOrderID, order) {
			plan = p
		}
	}
	scope := "/providers/Microsoft.BillingBenefits/savingsPlanOrders/" + order
	if plan == nil {
		cloudsim.WriteError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("The savings plan order '%s' was not found.", order))
		return
	}
	if !srv.reachesBillingAccount(c.TenantID, plan.BillingAccountID) {
		cloudsim.WriteError(w, http.StatusForbidden, "AuthorizationFailed", fmt.Sprintf(
			"The client '%s' with object id '%s' does not have authorization to perform action 'Microsoft.CostManagement/benefitUtilizationSummaries/read' over scope '%s' or the scope is invalid.",
			c.ObjectID, c.ObjectID, scope))
		return
	}
	if g := r.URL.Query().Get("grainParameter"); !strings.EqualFold(g, "Daily") {
		badRequest(w, "The grainParameter parameter must be Daily, not %q.", g)
		return
	}
	from, to, err := usageDateRange(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	var days []world.SavingsPlanDay
	for _, d := range plan.Utilization {
		if (from == "" || d.Date >= from) && (to == "" || d.Date <= to) {
			days = append(days, d)
		}
	}
	slices.SortStableFunc(days, func(a, b world.SavingsPlanDay) int { return strings.Compare(a.Date, b.Date) })
	p := cloudsim.PageOf(r, srv.sim.URLs[cloudsim.ARM], len(days), cloudsim.DefaultPageSize)
	value := make([]benefitUtilizationJSON, 0, p.End-p.Start)
	for _, d := range days[p.Start:p.End] {
		name := plan.SavingsPlanID + "_" + strings.ReplaceAll(d.Date, "-", "")
		value = append(value, benefitUtilizationJSON{ID: scope + "/providers/Microsoft.CostManagement/benefitUtilizationSummaries/" + name, Name: name,
			Type: "Microsoft.CostManagement/benefitUtilizationSummaries", Kind: "SavingsPlan",
			Properties: benefitUtilizationPropsJSON{ArmSKUName: "Compute_Savings_Plan", BenefitID: savingsPlanID(plan),
				BenefitOrderID: "/providers/Microsoft.BillingBenefits/savingsPlanOrders/" + plan.SavingsPlanOrderID, BenefitType: "SavingsPlan",
				UsageDate: d.Date + "T00:00:00Z", AvgUtilizationPercentage: d.AvgUtilization,
				MinUtilizationPercentage: d.MinUtilization, MaxUtilizationPercentage: d.MaxUtilization}})
	}
	writePage(w, value, p)
}

type benefitRecommendationJSON struct {
	ID         string                         `json:"id"`
	Name       string                         `json:"name"`
	Type       string                         `json:"type"`
	Kind       string                         `json:"kind"`
	Properties benefitRecommendationPropsJSON `json:"properties"`
}

type benefitRecommendationPropsJSON struct {
	Scope                 string                       `json:"scope"`
	ArmSKUName            string                       `json:"armSkuName"`
	CommitmentGranularity string                       `json:"commitmentGranularity"`
	LookBackPeriod        string                       `json:"lookBackPeriod"`
	Term                  string                       `json:"term"`
	CurrencyCode          string                       `json:"currencyCode"`
	CostWithoutBenefit    float64                      `json:"costWithoutBenefit"`
	FirstConsumptionDate  string                       `json:"firstConsumptionDate"`
	LastConsumptionDate   string                       `json:"lastConsumptionDate"`
	TotalHours            int                          `json:"totalHours"`
	RecommendationDetails benefitRecommendationDetails `json:"recommendationDetails"`
}

type benefitRecommendationDetails struct {
	AverageUtilizationPercentage float64 `json:"averageUtilizationPercentage"`
	BenefitCost                  float64 `json:"benefitCost"`
	CommitmentAmount             float64 `json:"commitmentAmount"`
	CoveragePercentage           float64 `json:"coveragePercentage"`
	OverageCost                  float64 `json:"overageCost"`
	SavingsAmount                float64 `json:"savingsAmount"`
	SavingsPercentage            float64 `json:"savingsPercentage"`
	TotalCost                    float64 `json:"totalCost"`
	WastageCost                  float64 `json:"wastageCost"`
}

// benefitClause is one comparison of a benefit recommendations $filter:
// properties/scope, properties/lookBackPeriod or properties/term eq a
// quoted value.
var benefitClause = regexp.MustCompile(`(?i)^properties/(scope|lookBackPeriod|term)\s+eq\s+'([^']*)'$`)

// benefitFilter reads a benefit recommendations $filter, with the
// provider's defaults: scope Shared, the last 60 days, term P3Y.
func benefitFilter(r *http.Request) (scope string, lookBack int, term string, err error) {
	scope, lookBack, term = "Shared", 60, "P3Y"
	filter := strings.TrimSpace(r.URL.Query().Get("$filter"))
	if filter == "" {
		return scope, lookBack, term, nil
	}
	for _, clause := range and.Split(filter, -1) {
		m := benefitClause.FindStringSubmatch(strings.TrimSpace(clause))
		if m == nil {
			return "", 0, "", fmt.Errorf("$filter clause %q is not supported; use properties/scope, properties/lookBackPeriod or properties/term eq '…' joined by and", clause)
		}
		switch strings.ToLower(m[1]) {
		case "scope":
			scope = m[2]
		case "term":
			term = m[2]
		default:
			days := map[string]int{"last7days": 7, "last30days": 30, "last60days": 60}[strings.ToLower(m[2])]
			if days == 0 {
				return "", 0, "", fmt.Errorf("properties/lookBackPeriod must be Last7Days, Last30Days or Last60Days, not %q", m[2])
			}
			lookBack = days
		}
	}
	return scope, lookBack, term, nil
}

// benefitRecommendations serves the world's savings plan recommendations
// of the account that match the $filter's look-back period and term; the
// world's are all shared, so a Single scope has none. The costs of the
// look-back period follow from the world's figures: the benefit costs
// the commitment for every hour, the total is the cost without it less
// the savings, and the wastage is the part of the benefit cost left
// unused.
func (srv *server) benefitRecommendations(w http.ResponseWriter, r *http.Request, c idp.Claims) {
	account, scope, ok := srv.billingScope(w, r, c, "benefitRecommendations")
	if !ok {
		return
	}
	recScope, lookBack, term, err := benefitFilter(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	value := []benefitRecommendationJSON{}
	for i, rec := range srv.sim.World().BenefitRecommendations {
		if !strings.EqualFold(rec.BillingAccountID, account) || !strings.EqualFold(recScope, "Shared") ||
			rec.LookBackDays != lookBack || !strings.EqualFold(rec.Term, term) {
			continue
		}
		hours := rec.LookBackDays * 24
		benefit := rec.CommitmentAmount * float64(hours)
		total := rec.CostWithoutBenefit - rec.SavingsAmount
		var savingsPercent float64
		if rec.CostWithoutBenefit > 0 {
			savingsPercent = 100 * rec.SavingsAmount / rec.CostWithoutBenefit
		}
		name := fmt.Sprintf("savingsplan-recommendation-%d", i)
		value = append(value, benefitRecommendationJSON{
			ID: scope + "/providers/Microsoft.CostManagement/benefitRecommendations/" + name, Name: name,
			Type: "Microsoft.CostManagement/benefitRecommendations", Kind: "SavingsPlan",
			Properties: benefitRecommendationPropsJSON{Scope: "Shared", ArmSKUName: "Compute_Savings_Plan", CommitmentGranularity: "Hourly",
				LookBackPeriod: fmt.Sprintf("Last%dDays", rec.LookBackDays), Term: rec.Term, CurrencyCode: rec.Currency,
				CostWithoutBenefit: rec.CostWithoutBenefit, FirstConsumptionDate: rec.FirstConsumptionDate + "T00:00:00Z",
				LastConsumptionDate: rec.LastConsumptionDate + "T00:00:00Z", TotalHours: hours,
				RecommendationDetails: benefitRecommendationDetails{AverageUtilizationPercentage: rec.AverageUtilization, BenefitCost: benefit,
					CommitmentAmount: rec.CommitmentAmount, CoveragePercentage: rec.Coverage, OverageCost: total - benefit,
					SavingsAmount: rec.SavingsAmount, SavingsPercentage: savingsPercent, TotalCost: total,
					WastageCost: benefit * (100 - rec.AverageUtilization) / 100}}})
	}
	p := cloudsim.PageOf(r, srv.sim.URLs[cloudsim.ARM], len(value), cloudsim.DefaultPageSize)
	writePage(w, value[p.Start:p.End], p)
}
