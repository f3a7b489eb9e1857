package cloud

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/costmanagement/armcostmanagement/v2"
)

// savingsPlansAPIVersion is the Microsoft.BillingBenefits API version the
// savings plan list is read with.
const savingsPlansAPIVersion = "2022-11-01"

// SavingsPlan is a savings plan: an hourly commitment for a term.
type SavingsPlan struct {
	SavingsPlanOrderID string
	SavingsPlanID      string
	Name               string
	// SKUName is the provider's, such as Compute_Savings_Plan.
	SKUName string
	// BillingScopeID is the billing scope the plan is billed to.
	BillingScopeID string
	// Term is the provider's ISO 8601 duration: P1Y or P3Y.
	Term string
	// PurchaseDate and ExpiryDate are the days the plan starts and ends
	// at midnight UTC.
	PurchaseDate time.Time
	ExpiryDate   time.Time
	// HourlyCommitment is the amount committed for each hour, in
	// Currency.
	HourlyCommitment float64
	Currency         string
	// State is the provider's display provisioning state, such as
	// Succeeded or Expired.
	State string
}

// savingsPlanList is a page of Microsoft.BillingBenefits' savings plan
// list, the fields Steward reads of the provider's SavingsPlanModel.
type savingsPlanList struct {
	Value []*struct {
		ID   *string `json:"id"`
		Name *string `json:"name"`
		SKU  *struct {
			Name *string `json:"name"`
		} `json:"sku"`
		Properties *struct {
			DisplayName              *string `json:"displayName"`
			DisplayProvisioningState *string `json:"displayProvisioningState"`
			BillingScopeID           *string `json:"billingScopeId"`
			Term                     *string `json:"term"`
			PurchaseDateTime         *string `json:"purchaseDateTime"`
			ExpiryDateTime           *string `json:"expiryDateTime"`
			Commitment               *struct {
				Grain        *string  `json:"grain"`
				CurrencyCode *string  `json:"currencyCode"`
				Amount       *float64 `json:"amount"`
			} `json:"commitment"`
		} `json:"properties"`
	} `json:"value"`
	NextLink *string `json:"nextLink"`
}

// SavingsPlans calls fn for each savings plan billed to a billing account
// (its billing scope is the account or one of its billing profiles),
// expired ones included. The SDK's Microsoft.BillingBenefits module is
// not among Steward's dependencies, so the list is read as that module
// reads it: a GET of the provider's list through the Resource Manager
// pipeline, following nextLink. A principal without billing access gets
// an error matching ErrBillingAccessRequired. An error from fn stops the
// listing and is returned as is.
func (c *ResourceManager) SavingsPlans(ctx context.Context, billingAccountID string, fn func(SavingsPlan) error) error {
	op := "list savings plans of billing account " + billingAccountID
	scope := strings.ToLower("/providers/Microsoft.Billing/billingAccounts/" + billingAccountID)
	next := runtime.JoinPaths(c.raw.Endpoint(), "/providers/Microsoft.BillingBenefits/savingsPlans")
	first := true
	for next != "" {
		page, err := c.savingsPlanPage(ctx, next, first)
		if err != nil {
			return billingFailure(op)(err)
		}
		first = false
		for _, v := range page.Value {
			if v == nil || v.Properties == nil {
				continue
			}
			p := v.Properties
			billing := strings.ToLower(deref(p.BillingScopeID))
			if billing != scope && !strings.HasPrefix(billing, scope+"/") {
				continue
			}
			plan, err := savingsPlanOf(deref(v.ID), p.DisplayName, p.DisplayProvisioningState, p.BillingScopeID, p.Term, p.PurchaseDateTime, p.ExpiryDateTime)
			if err != nil {
				return fmt.Errorf("cloud: %s: %w", op, err)
			}
			if v.SKU != nil {
				plan.SKUName = deref(v.SKU.Name)
			}
			if cm := p.Commitment; cm != nil {
				if g := deref(cm.Grain); g != "" && !strings.EqualFold(g, "Hourly") {
					return fmt.Errorf("cloud: %s: savings plan %s: commitment grain %q is not Hourly", op, plan.SavingsPlanID, g)
				}
				plan.HourlyCommitment, plan.Currency = deref(cm.Amount), deref(cm.CurrencyCode)
			}
			if err := fn(plan); err != nil {
				return err
			}
		}
		next = deref(page.NextLink)
	}
	return nil
}

// savingsPlanPage reads one page of the savings plan list at url; the
// first page's request names the API version, a nextLink carries it.
func (c *ResourceManager) savingsPlanPage(ctx context.Context, url string, first bool) (*savingsPlanList, error) {
	req, err := runtime.NewRequest(ctx, http.MethodGet, url)
	if err != nil {
		return nil, err
	}
	if first {
		q := req.Raw().URL.Query()
		q.Set("api-version", savingsPlansAPIVersion)
		req.Raw().URL.RawQuery = q.Encode()
	}
	req.Raw().Header["Accept"] = []string{"application/json"}
	resp, err := c.raw.Pipeline().Do(req)
	if err != nil {
		return nil, err
	}
	if !runtime.HasStatusCode(resp, http.StatusOK) {
		return nil, runtime.NewResponseError(resp)
	}
	var page savingsPlanList
	if err := runtime.UnmarshalAsJSON(resp, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// savingsPlanOf reads a listed savings plan's id
// (/providers/Microsoft.BillingBenefits/savingsPlanOrders/{order}/savingsPlans/{plan})
// and dates.
func savingsPlanOf(id string, name, state, billingScope, term, purchased, expires *string) (SavingsPlan, error) {
	order, plan := resourceSegment(id, "savingsPlanOrders"), resourceSegment(id, "savingsPlans")
	if order == "" || plan == "" {
		return SavingsPlan{}, fmt.Errorf("savings plan id %q names no savings plan order and plan", id)
	}
	out := SavingsPlan{SavingsPlanOrderID: order, SavingsPlanID: plan, Name: deref(name), State: deref(state),
		BillingScopeID: deref(billingScope), Term: deref(term)}
	for _, d := range []struct {
		field string
		from  *string
		to    *time.Time
	}{{"purchaseDateTime", purchased, &out.PurchaseDate}, {"expiryDateTime", expires, &out.ExpiryDate}} {
		t, err := time.Parse(time.RFC3339, deref(d.from))
		if err != nil {
			return SavingsPlan{}, fmt.Errorf("savings plan %s: %s %q is not an RFC 3339 date-time", plan, d.field, deref(d.from))
		}
		*d.to = calendarDay(t.UTC())
	}
	return out, nil
}

// resourceSegment is the name after the segment of type typ in a
// resource id (case does not matter), or "".
func resourceSegment(id, typ string) string {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	for i := 0; i+1 < len(segs); i++ {
		if strings.EqualFold(segs[i], typ) {
			return segs[i+1]
		}
	}
	return ""
}

// SavingsPlanDay is a savings plan's utilisation on one day, in percent of
// its hourly commitment: the lowest, mean and highest of the day's hours.
type SavingsPlanDay struct {
	SavingsPlanOrderID string
	SavingsPlanID      string
	// UsageDate is the day at midnight UTC.
	UsageDate      time.Time
	MinUtilization float64
	AvgUtilization float64
	MaxUtilization float64
}

// SavingsPlanUtilization calls fn for each day's utilisation of the plans
// of a savings plan order from the calendar day of from through that of
// to, as Cost Management's benefit utilisation summaries give it; summaries
// of other kinds are skipped. A principal without billing access gets an
// error matching ErrBillingAccessRequired. An error from fn stops the
// listing and is returned as is.
func (c *ResourceManager) SavingsPlanUtilization(ctx context.Context, orderID string, from, to time.Time, fn func(SavingsPlanDay) error) error {
	op := "list benefit utilization summaries of savings plan order " + orderID
	filter := fmt.Sprintf("properties/usageDate ge %s and properties/usageDate le %s",
		calendarDay(from).Format(time.DateOnly), calendarDay(to).Format(time.DateOnly))
	grain := armcostmanagement.GrainParameterDaily
	pager := c.benefitUsage.NewListBySavingsPlanOrderPager(orderID, &armcostmanagement.BenefitUtilizationSummariesClientListBySavingsPlanOrderOptions{
		Filter: &filter, GrainParameter: &grain})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return billingFailure(op)(err)
		}
		for _, v := range page.Value {
			s, ok := v.(*armcostmanagement.SavingsPlanUtilizationSummary)
			if !ok || s.Properties == nil {
				continue
			}
			p := s.Properties
			day := SavingsPlanDay{SavingsPlanOrderID: cmp.Or(resourceSegment(deref(p.BenefitOrderID), "savingsPlanOrders"), orderID),
				SavingsPlanID: resourceSegment(deref(p.BenefitID), "savingsPlans"), UsageDate: calendarDay(deref(p.UsageDate).UTC()),
				MinUtilization: deref(p.MinUtilizationPercentage), AvgUtilization: deref(p.AvgUtilizationPercentage),
				MaxUtilization: deref(p.MaxUtilizationPercentage)}
			if day.SavingsPlanID == "" {
				return fmt.Errorf("cloud: %s: benefit id %q names no savings plan", op, deref(p.BenefitID))
			}
			if err := fn(day); err != nil {
				return err
			}
		}
	}
	return nil
}

// BenefitRecommendation is the provider's advice to buy a savings plan
// shared across a billing account, from the usage of a past period.
type BenefitRecommendation struct {
	// SKUName is the provider's, such as Compute_Savings_Plan.
	SKUName string
	Term    string
	Scope   string
	// LookBackDays is the length of the period the advice is drawn from.
	LookBackDays int
	// CommitmentAmount is the commitment to buy for each
	// CommitmentGranularity (Hourly), in Currency.
	CommitmentGranularity string
	CommitmentAmount      float64
	Currency              string
	// The period's cost without the plan and with it, and the
	// difference, in Currency.
	CostWithoutBenefit float64
	TotalCost          float64
	SavingsAmount      float64
	// AverageUtilization and Coverage are percentages: of the commitment
	// the usage would have used, and of the usage it would have covered.
	AverageUtilization float64
	Coverage           float64
	FirstUsageDate     time.Time
}

// BenefitRecommendations calls fn for each recommendation to buy a savings
// plan shared across a billing account, drawn from the last lookBackDays
// days (7, 30 or 60), for the one-year term and then the three-year one
// (the provider answers one term per request). A principal without
// billing access gets an error matching ErrBillingAccessRequired. An
// error from fn stops the listing and is returned as is.
func (c *ResourceManager) BenefitRecommendations(ctx context.Context, billingAccountID string, lookBackDays int, fn func(BenefitRecommendation) error) error {
	op := "list benefit recommendations of billing account " + billingAccountID
	for _, term := range []armcostmanagement.Term{armcostmanagement.TermP1Y, armcostmanagement.TermP3Y} {
		filter := fmt.Sprintf("properties/scope eq 'Shared' and properties/lookBackPeriod eq 'Last%dDays' and properties/term eq '%s'", lookBackDays, term)
		pager := c.benefitRecommendations.NewListPager("providers/Microsoft.Billing/billingAccounts/"+billingAccountID,
			&armcostmanagement.BenefitRecommendationsClientListOptions{Filter: &filter})
		err := walk(ctx, pager,
			func(p armcostmanagement.BenefitRecommendationsClientListResponse) []*armcostmanagement.BenefitRecommendationModel {
				return p.Value
			},
			func(m *armcostmanagement.BenefitRecommendationModel) error {
				if m.Properties == nil || (m.Kind != nil && *m.Kind != armcostmanagement.BenefitKindSavingsPlan) {
					return nil
				}
				return fn(benefitRecommendationOf(m.Properties.GetBenefitRecommendationProperties(), lookBackDays))
			},
			billingFailure(op))
		if err != nil {
			return err
		}
	}
	return nil
}

// benefitRecommendationOf reads a savings plan recommendation's
// properties; a look-back period the provider names overrides the one
// asked for.
func benefitRecommendationOf(p *armcostmanagement.BenefitRecommendationProperties, lookBackDays int) BenefitRecommendation {
	out := BenefitRecommendation{SKUName: deref(p.ArmSKUName), Term: string(deref(p.Term)), Scope: string(deref(p.Scope)), LookBackDays: lookBackDays,
		CommitmentGranularity: string(deref(p.CommitmentGranularity)), Currency: deref(p.CurrencyCode),
		CostWithoutBenefit: deref(p.CostWithoutBenefit), FirstUsageDate: calendarDay(deref(p.FirstConsumptionDate).UTC())}
	if n, ok := map[armcostmanagement.LookBackPeriod]int{armcostmanagement.LookBackPeriodLast7Days: 7,
		armcostmanagement.LookBackPeriodLast30Days: 30, armcostmanagement.LookBackPeriodLast60Days: 60}[deref(p.LookBackPeriod)]; ok {
		out.LookBackDays = n
	}
	if d := p.RecommendationDetails; d != nil {
		out.CommitmentAmount, out.TotalCost, out.SavingsAmount = deref(d.CommitmentAmount), deref(d.TotalCost), deref(d.SavingsAmount)
		out.AverageUtilization, out.Coverage = deref(d.AverageUtilizationPercentage), deref(d.CoveragePercentage)
	}
	return out
}
