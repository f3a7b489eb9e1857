package arm

import (
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Microsoft.Consumption at billing account scope, what commitments are
// read from: reservation details (a reservation's use per day with its
// SKU's instance size flexibility), reservation transactions (purchases
// with SKU, term and price, in the Enterprise Agreement form the SDK's
// billing account method reads) and reservation recommendations (in the
// modern form, whose amounts carry their currency).

type reservationDetailJSON struct {
	ID         string                     `json:"id"`
	Name       string                     `json:"name"`
	Type       string                     `json:"type"`
	Properties reservationDetailPropsJSON `json:"properties"`
}

type reservationDetailPropsJSON struct {
	ReservationOrderID       string  `json:"reservationOrderId"`
	ReservationID            string  `json:"reservationId"`
	SKUName                  string  `json:"skuName"`
	ReservedHours            float64 `json:"reservedHours"`
	UsageDate                string  `json:"usageDate"`
	UsedHours                float64 `json:"usedHours"`
	InstanceID               string  `json:"instanceId"`
	TotalReservedQuantity    float64 `json:"totalReservedQuantity"`
	Kind                     string  `json:"kind"`
	InstanceFlexibilityGroup string  `json:"instanceFlexibilityGroup"`
	// InstanceFlexibilityRatio is a string in the provider's format.
	InstanceFlexibilityRatio string `json:"instanceFlexibilityRatio"`
}

// purchaseOf is the purchase of each reservation of an account.
func (srv *server) purchaseOf(account string) map[string]*world.ReservationPurchase {
	out := map[string]*world.ReservationPurchase{}
	for i := range srv.sim.World().ReservationPurchases {
		p := &srv.sim.World().ReservationPurchases[i]
		if strings.EqualFold(p.BillingAccountID, account) {
			out[strings.ToLower(p.ReservationID)] = p
		}
	}
	return out
}

// reservationDetails serves one record per reservation and day: the
// world's daily use, with the instance size flexibility of the
// reservation's purchase (group empty and ratio 1 without one).
func (srv *server) reservationDetails(w http.ResponseWriter, r *http.Request, c idp.Claims) {
	account, scope, ok := srv.billingScope(w, r, c, "reservationDetails")
	if !ok {
		return
	}
	from, to, err := usageDateRange(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	if from == "" || to == "" {
		badRequest(w, "Reservation details need a properties/UsageDate range in $filter.")
		return
	}
	purchases := srv.purchaseOf(account)
	var details []reservationDetailPropsJSON
	for _, d := range srv.sim.World().Reservations {
		if !strings.EqualFold(d.BillingAccountID, account) || d.Date < from || d.Date > to {
			continue
		}
		group, ratio := "", 1.0
		if p := purchases[strings.ToLower(d.ReservationID)]; p != nil {
			group, ratio = p.InstanceFlexibilityGroup, p.InstanceFlexibilityRatio
		}
		details = append(details, reservationDetailPropsJSON{
			ReservationOrderID: ReservationOrderID(d.ReservationID), ReservationID: d.ReservationID, SKUName: d.SKU,
			ReservedHours: d.ReservedHours, UsageDate: d.Date + "T00:00:00Z", UsedHours: d.UsedHours,
			InstanceID:            "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/reserved/providers/Microsoft.Compute/virtualMachines/" + strings.ToLower(d.SKU),
			TotalReservedQuantity: d.ReservedHours / 24, Kind: "Reservation",
			InstanceFlexibilityGroup: group, InstanceFlexibilityRatio: strconv.FormatFloat(ratio, 'f', -1, 64),
		})
	}
	slices.SortStableFunc(details, func(a, b reservationDetailPropsJSON) int {
		return cmp.Or(strings.Compare(a.UsageDate, b.UsageDate), strings.Compare(a.ReservationID, b.ReservationID))
	})
	p := cloudsim.PageOf(r, srv.sim.URLs[cloudsim.ARM], len(details), cloudsim.DefaultPageSize)
	value := make([]reservationDetailJSON, 0, p.End-p.Start)
	for _, d := range details[p.Start:p.End] {
		name := d.ReservationID + "_" + strings.ReplaceAll(d.UsageDate[:10], "-", "")
		value = append(value, reservationDetailJSON{ID: scope + "/providers/Microsoft.Consumption/reservationDetails/" + name, Name: name,
			Type: "Microsoft.Consumption/reservationDetails", Properties: d})
	}
	writePage(w, value, p)
}

func writePage[T any](w http.ResponseWriter, value []T, p cloudsim.Page) {
	body := map[string]any{"value": value}
	if p.NextLink != "" {
		body["nextLink"] = p.NextLink
	}
	cloudsim.WriteJSON(w, body)
}

type reservationTransactionJSON struct {
	ID         string                          `json:"id"`
	Name       string                          `json:"name"`
	Type       string                          `json:"type"`
	Tags       []string                        `json:"tags"`
	Properties reservationTransactionPropsJSON `json:"properties"`
}

type reservationTransactionPropsJSON struct {
	EventDate            string  `json:"eventDate"`
	ReservationOrderID   string  `json:"reservationOrderId"`
	Description          string  `json:"description"`
	EventType            string  `json:"eventType"`
	Quantity             float64 `json:"quantity"`
	Amount               float64 `json:"amount"`
	Currency             string  `json:"currency"`
	ReservationOrderName string  `json:"reservationOrderName"`
	ArmSKUName           string  `json:"armSkuName"`
	Term                 string  `json:"term"`
	Region               string  `json:"region"`
	BillingFrequency     string  `json:"billingFrequency"`
}

// reservationTransactions serves the purchase of each reservation whose
// purchase date is in the $filter's properties/EventDate range, paid up
// front.
func (srv *server) reservationTransactions(w http.ResponseWriter, r *http.Request, c idp.Claims) {
	account, scope, ok := srv.billingScope(w, r, c, "reservationTransactions")
	if !ok {
		return
	}
	from, to, err := dateRange(r, eventDateClause, "eventDate")
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	var txs []reservationTransactionPropsJSON
	for _, p := range srv.sim.World().ReservationPurchases {
		if !strings.EqualFold(p.BillingAccountID, account) || (from != "" && p.PurchaseDate < from) || (to != "" && p.PurchaseDate > to) {
			continue
		}
		txs = append(txs, reservationTransactionPropsJSON{
			EventDate: p.PurchaseDate + "T00:00:00Z", ReservationOrderID: ReservationOrderID(p.ReservationID),
			Description: "Reservation purchase", EventType: "Purchase", Quantity: p.Quantity, Amount: p.Amount, Currency: p.Currency,
			ReservationOrderName: p.Name, ArmSKUName: p.SKU, Term: p.Term, Region: p.Region, BillingFrequency: "upfront",
		})
	}
	slices.SortStableFunc(txs, func(a, b reservationTransactionPropsJSON) int {
		return cmp.Or(strings.Compare(a.EventDate, b.EventDate), strings.Compare(a.ReservationOrderID, b.ReservationOrderID))
	})
	p := cloudsim.PageOf(r, srv.sim.URLs[cloudsim.ARM], len(txs), cloudsim.DefaultPageSize)
	value := make([]reservationTransactionJSON, 0, p.End-p.Start)
	for _, t := range txs[p.Start:p.End] {
		name := t.ReservationOrderID + "_purchase"
		value = append(value, reservationTransactionJSON{ID: scope + "/providers/Microsoft.Consumption/reservationTransactions/" + name, Name: name,
			Type: "Microsoft.Consumption/reservationTransactions", Tags: []string{}, Properties: t})
	}
	writePage(w, value, p)
}

type amountJSON struct {
	Currency string  `json:"currency"`
	Value    float64 `json:"value"`
}

type reservationRecommendationJSON struct {
	ID         string                             `json:"id"`
	Name       string                             `json:"name"`
	Type       string                             `json:"type"`
	Kind       string                             `json:"kind"`
	Location   string                             `json:"location"`
	SKU        string                             `json:"sku"`
	Properties reservationRecommendationPropsJSON `json:"properties"`
}

type reservationRecommendationPropsJSON struct {
	LookBackPeriod                 int        `json:"lookBackPeriod"`
	InstanceFlexibilityRatio       float64    `json:"instanceFlexibilityRatio"`
	InstanceFlexibilityGroup       string     `json:"instanceFlexibilityGroup"`
	NormalizedSize                 string     `json:"normalizedSize"`
	RecommendedQuantityNormalized  float64    `json:"recommendedQuantityNormalized"`
	MeterID                        string     `json:"meterId"`
	Term                           string     `json:"term"`
	CostWithNoReservedInstances    amountJSON `json:"costWithNoReservedInstances"`
	RecommendedQuantity            float64    `json:"recommendedQuantity"`
	TotalCostWithReservedInstances amountJSON `json:"totalCostWithReservedInstances"`
	NetSavings                     amountJSON `json:"netSavings"`
	FirstUsageDate                 string     `json:"firstUsageDate"`
	Scope                          string     `json:"scope"`
	Location                       string     `json:"location"`
	SKUName                        string     `json:"skuName"`
}

// recommendationClause is one comparison of a recommendations $filter:
// properties/scope, properties/lookBackPeriod or properties/resourceType
// eq a quoted value.
var recommendationClause = regexp.MustCompile(`(?i)^properties/(scope|lookBackPeriod|resourceType)\s+eq\s+'([^']*)'$`)

// recommendationFilter reads a recommendations $filter, with the
// provider's defaults: scope Single, the last 7 days, virtual machines.
func recommendationFilter(r *http.Request) (scope string, lookBack int, resourceType string, err error) {
	scope, lookBack, resourceType = "Single", 7, "VirtualMachines"
	filter := strings.TrimSpace(r.URL.Query().Get("$filter"))
	if filter == "" {
		return scope, lookBack, resourceType, nil
	}
	for _, clause := range and.Split(filter, -1) {
		m := recommendationClause.FindStringSubmatch(strings.TrimSpace(clause))
		if m == nil {
			return "", 0, "", fmt.Errorf("$filter clause %q is not supported; use properties/scope, properties/lookBackPeriod or properties/resourceType eq '…' joined by and", clause)
		}
		switch strings.ToLower(m[1]) {
		case "scope":
			scope = m[2]
		case "resourcetype":
			resourceType = m[2]
		default:
			days := map[string]int{"last7days": 7, "last30days": 30, "last60days": 60}[strings.ToLower(m[2])]
			if days == 0 {
				return "", 0, "", fmt.Errorf("properties/lookBackPeriod must be Last7Days, Last30Days or Last60Days, not %q", m[2])
			}
			lookBack = days
		}
	}
	return scope, lookBack, resourceType, nil
}

// reservationRecommendations serves the world's recommendations of the
// account that match the $filter's scope, look-back period and resource
// type.
func (srv *server) reservationRecommendations(w http.ResponseWriter, r *http.Request, c idp.Claims) {
	account, scope, ok := srv.billingScope(w, r, c, "reservationRecommendations")
	if !ok {
		return
	}
	recScope, lookBack, resourceType, err := recommendationFilter(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	value := []reservationRecommendationJSON{}
	for i, rec := range srv.sim.World().ReservationRecommendations {
		if !strings.EqualFold(rec.BillingAccountID, account) || !strings.EqualFold(rec.Scope, recScope) ||
			rec.LookBackDays != lookBack || !strings.EqualFold(rec.ResourceType, resourceType) {
			continue
		}
		name := fmt.Sprintf("recommendation-%d", i)
		value = append(value, reservationRecommendationJSON{
			ID: scope + "/providers/Microsoft.Consumption/reservationRecommendations/" + name, Name: name,
			Type: "Microsoft.Consumption/reservationRecommendations", Kind: "modern", Location: rec.Location, SKU: rec.SKU,
			Properties: reservationRecommendationPropsJSON{
				LookBackPeriod: rec.LookBackDays, InstanceFlexibilityRatio: rec.InstanceFlexibilityRatio,
				InstanceFlexibilityGroup: rec.InstanceFlexibilityGroup, NormalizedSize: rec.NormalizedSize,
				RecommendedQuantityNormalized: rec.RecommendedQuantity * rec.InstanceFlexibilityRatio,
				MeterID:                       ReservationOrderID(rec.SKU + "/" + rec.Location), Term: rec.Term,
				CostWithNoReservedInstances:    amountJSON{rec.Currency, rec.CostWithoutReservations},
				RecommendedQuantity:            rec.RecommendedQuantity,
				TotalCostWithReservedInstances: amountJSON{rec.Currency, rec.CostWithReservations},
				NetSavings:                     amountJSON{rec.Currency, rec.NetSavings},
				FirstUsageDate:                 rec.FirstUsageDate + "T00:00:00Z", Scope: rec.Scope, Location: rec.Location, SKUName: rec.SKU,
			},
		})
	}
	p := cloudsim.PageOf(r, srv.sim.URLs[cloudsim.ARM], len(value), cloudsim.DefaultPageSize)
	writePage(w, value[p.Start:p.End], p)
}
