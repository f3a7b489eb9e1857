package cloud

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/consumption/armconsumption"
)

// ReservationSummary is a reservation's utilisation over a day or a month.
type ReservationSummary struct {
	ReservationOrderID string
	ReservationID      string
	SKUName            string
	// UsageDate is the day, or the month's first day for the monthly
	// grain, at midnight UTC.
	UsageDate     time.Time
	ReservedHours float64
	UsedHours     float64
	// Utilisation percentages over the period (0–100).
	MinUtilization float64
	AvgUtilization float64
	MaxUtilization float64
}

// The grains of ReservationSummaries.
const (
	GrainDaily   = "daily"
	GrainMonthly = "monthly"
)

// ReservationSummaries calls fn for each reservation's utilisation per day
// or month (grain) under a billing account, from the calendar day of from
// through that of to; for the monthly grain pass whole months, as a month
// cut by the range sums only its days in it. A principal without billing
// access gets an error
// matching ErrBillingAccessRequired. An error from fn stops the listing and
// is returned as is.
func (c *ResourceManager) ReservationSummaries(ctx context.Context, billingAccountID, grain string, from, to time.Time, fn func(ReservationSummary) error) error {
	var g armconsumption.Datagrain
	switch grain {
	case GrainDaily:
		g = armconsumption.DatagrainDailyGrain
	case GrainMonthly:
		g = armconsumption.DatagrainMonthlyGrain
	default:
		return fmt.Errorf("cloud: reservation summaries: grain must be %q or %q, not %q", GrainDaily, GrainMonthly, grain)
	}
	op := "list reservation summaries of billing account " + billingAccountID
	filter := fmt.Sprintf("properties/usageDate ge %s AND properties/usageDate le %s",
		calendarDay(from).Format(time.DateOnly), calendarDay(to).Format(time.DateOnly))
	pager := c.reservations.NewListPager("providers/Microsoft.Billing/billingAccounts/"+billingAccountID, g,
		&armconsumption.ReservationsSummariesClientListOptions{Filter: &filter})
	return walk(ctx, pager,
		func(p armconsumption.ReservationsSummariesClientListResponse) []*armconsumption.ReservationSummary {
			return p.Value
		},
		func(s *armconsumption.ReservationSummary) error {
			p := s.Properties
			if p == nil {
				return nil
			}
			return fn(ReservationSummary{
				ReservationOrderID: deref(p.ReservationOrderID),
				ReservationID:      deref(p.ReservationID),
				SKUName:            deref(p.SKUName),
				UsageDate:          calendarDay(deref(p.UsageDate).UTC()),
				ReservedHours:      deref(p.ReservedHours),
				UsedHours:          deref(p.UsedHours),
				MinUtilization:     deref(p.MinUtilizationPercentage),
				AvgUtilization:     deref(p.AvgUtilizationPercentage),
				MaxUtilization:     deref(p.MaxUtilizationPercentage),
			})
		},
		billingFailure(op))
}

// billingFailure wraps the error of op, a call at a billing scope.
func billingFailure(op string) func(error) error {
	return func(err error) error {
		err = wrap(op, err)
		// Reading a billing scope takes a billing role, which Resource
		// Manager roles do not grant: say so.
		if e, ok := err.(*Error); ok && e.StatusCode == http.StatusForbidden {
			e.kinds = append(e.kinds, ErrBillingAccessRequired)
		}
		return err
	}
}
