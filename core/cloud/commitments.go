package cloud

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/consumption/armconsumption"
)

// ReservationDetail is a reservation's use on one day as its usage
// details tell it, with the instance size flexibility of its SKU.
type ReservationDetail struct {
	ReservationOrderID string
	ReservationID      string
	SKUName            string
	// UsageDate is the day at midnight UTC.
	UsageDate     time.Time
	ReservedHours float64
	UsedHours     float64
	// InstanceFlexibilityRatio is the SKU's normalised size within
	// InstanceFlexibilityGroup (how many of the group's smallest size it
	// counts as); 0 when the provider gave none.
	InstanceFlexibilityGroup string
	InstanceFlexibilityRatio float64
}

// ReservationDetails calls fn for each reservation detail under a billing
// account from the calendar day of from through that of to. A principal
// without billing access gets an error matching ErrBillingAccessRequired.
// An error from fn stops the listing and is returned as is.
func (c *ResourceManager) ReservationDetails(ctx context.Context, billingAccountID string, from, to time.Time, fn func(ReservationDetail) error) error {
	op := "list reservation details of billing account " + billingAccountID
	filter := fmt.Sprintf("properties/UsageDate ge %s AND properties/UsageDate le %s",
		calendarDay(from).Format(time.DateOnly), calendarDay(to).Format(time.DateOnly))
	pager := c.details.NewListPager("providers/Microsoft.Billing/billingAccounts/"+billingAccountID,
		&armconsumption.ReservationsDetailsClientListOptions{Filter: &filter})
	return walk(ctx, pager,
		func(p armconsumption.ReservationsDetailsClientListResponse) []*armconsumption.ReservationDetail {
			return p.Value
		},
		func(d *armconsumption.ReservationDetail) error {
			p := d.Properties
			if p == nil {
				return nil
			}
			var ratio float64
			if s := strings.TrimSpace(deref(p.InstanceFlexibilityRatio)); s != "" {
				var err error
				if ratio, err = strconv.ParseFloat(s, 64); err != nil {
					return fmt.Errorf("cloud: %s: reservation %s: instance flexibility ratio %q is not a number", op, deref(p.ReservationID), s)
				}
			}
			return fn(ReservationDetail{
				ReservationOrderID:       deref(p.ReservationOrderID),
				ReservationID:            deref(p.ReservationID),
				SKUName:                  deref(p.SKUName),
				UsageDate:                calendarDay(deref(p.UsageDate).UTC()),
				ReservedHours:            deref(p.ReservedHours),
				UsedHours:                deref(p.UsedHours),
				InstanceFlexibilityGroup: deref(p.InstanceFlexibilityGroup),
				InstanceFlexibilityRatio: ratio,
			})
		},
		billingFailure(op))
}

// ReservationPurchase is the purchase of a reservation order.
type ReservationPurchase struct {
	ReservationOrderID   string
	ReservationOrderName string
	SKUName              string
	Region               string
	// Term is the provider's ISO 8601 duration: P1Y, P3Y or P5Y.
	Term string
	// PurchaseDate is the day of the purchase at midnight UTC.
	PurchaseDate     time.Time
	Quantity         float64
	Amount           float64
	Currency         string
	BillingFrequency string
}

// ReservationPurchases calls fn for each reservation purchase under a
// billing account from the calendar day of from through that of to; the
// account's other transactions (refunds, exchanges) are skipped. A
// principal without billing access gets an error matching
// ErrBillingAccessRequired. An error from fn stops the listing and is
// returned as is.
func (c *ResourceManager) ReservationPurchases(ctx context.Context, billingAccountID string, from, to time.Time, fn func(ReservationPurchase) error) error {
	op := "list reservation transactions of billing account " + billingAccountID
	filter := fmt.Sprintf("properties/EventDate ge %s AND properties/EventDate le %s",
		calendarDay(from).Format(time.DateOnly), calendarDay(to).Format(time.DateOnly))
	pager := c.transactions.NewListPager(billingAccountID, &armconsumption.ReservationTransactionsClientListOptions{Filter: &filter})
	return walk(ctx, pager,
		func(p armconsumption.ReservationTransactionsClientListResponse) []*armconsumption.ReservationTransaction {
			return p.Value
		},
		func(t *armconsumption.ReservationTransaction) error {
			p := t.Properties
			if p == nil || !strings.EqualFold(deref(p.EventType), "Purchase") {
				return nil
			}
			return fn(ReservationPurchase{
				ReservationOrderID:   deref(p.ReservationOrderID),
				ReservationOrderName: deref(p.ReservationOrderName),
				SKUName:              deref(p.ArmSKUName),
				Region:               deref(p.Region),
				Term:                 deref(p.Term),
				PurchaseDate:         calendarDay(deref(p.EventDate).UTC()),
				Quantity:             deref(p.Quantity),
				Amount:               deref(p.Amount),
				Currency:             deref(p.Currency),
				BillingFrequency:     deref(p.BillingFrequency),
			})
		},
		billingFailure(op))
}

// ReservationRecommendation is the provider's advice to buy reservations
// of one SKU in one location, from the usage of a past period.
type ReservationRecommendation struct {
	SKUName  string
	Location string
	Term     string
	Scope    string
	// LookBackDays is the length of the period the advice is drawn from.
	LookBackDays             int
	RecommendedQuantity      float64
	NormalizedSize           string
	InstanceFlexibilityGroup string
	InstanceFlexibilityRatio float64
	// The costs of the period without and with the recommended
	// reservations and the difference, in Currency.
	CostWithoutReservations float64
	CostWithReservations    float64
	NetSavings              float64
	Currency                string
	FirstUsageDate          time.Time
}

// ReservationRecommendations calls fn for each recommendation to buy
// reservations of virtual machines shared across a billing account,
// drawn from the last lookBackDays days (7, 30 or 60). A principal
// without billing access gets an error matching ErrBillingAccessRequired.
// An error from fn stops the listing and is returned as is.
func (c *ResourceManager) ReservationRecommendations(ctx context.Context, billingAccountID string, lookBackDays int, fn func(ReservationRecommendation) error) error {
	op := "list reservation recommendations of billing account " + billingAccountID
	filter := fmt.Sprintf("properties/scope eq 'Shared' AND properties/lookBackPeriod eq 'Last%dDays' AND properties/resourceType eq 'VirtualMachines'", lookBackDays)
	pager := c.recommendations.NewListPager("providers/Microsoft.Billing/billingAccounts/"+billingAccountID,
		&armconsumption.ReservationRecommendationsClientListOptions{Filter: &filter})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return billingFailure(op)(err)
		}
		for _, v := range page.Value {
			rec, ok := recommendationOf(v, lookBackDays)
			if !ok {
				continue
			}
			if err := fn(rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// recommendationOf reads a recommendation of the modern form, a Microsoft
// Customer Agreement's, whose amounts carry their currency; the legacy
// form of an Enterprise Agreement, which names no currency, is skipped.
func recommendationOf(v armconsumption.ReservationRecommendationClassification, lookBackDays int) (ReservationRecommendation, bool) {
	r, ok := v.(*armconsumption.ModernReservationRecommendation)
	if !ok || r.Properties == nil {
		return ReservationRecommendation{}, false
	}
	p := r.Properties
	out := ReservationRecommendation{SKUName: cmp.Or(deref(p.SKUName), deref(r.SKU)), Location: cmp.Or(deref(p.Location), deref(r.Location)),
		Term: deref(p.Term), Scope: deref(p.Scope), LookBackDays: lookBackDays, RecommendedQuantity: deref(p.RecommendedQuantity),
		NormalizedSize: deref(p.NormalizedSize), InstanceFlexibilityGroup: deref(p.InstanceFlexibilityGroup),
		InstanceFlexibilityRatio: float64(deref(p.InstanceFlexibilityRatio)), FirstUsageDate: calendarDay(deref(p.FirstUsageDate).UTC())}
	if p.LookBackPeriod != nil {
		out.LookBackDays = int(*p.LookBackPeriod)
	}
	for _, a := range []struct {
		from *armconsumption.Amount
		to   *float64
	}{{p.CostWithNoReservedInstances, &out.CostWithoutReservations}, {p.TotalCostWithReservedInstances, &out.CostWithReservations}, {p.NetSavings, &out.NetSavings}} {
		if a.from != nil {
			*a.to = deref(a.from.Value)
			out.Currency = cmp.Or(out.Currency, deref(a.from.Currency))
		}
	}
	return out, true
}
