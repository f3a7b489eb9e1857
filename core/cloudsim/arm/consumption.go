package arm

import (
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Microsoft.Consumption: reservation summaries at billing account scope,
// per day or month; reservation details, transactions and
// recommendations (commitments.go).

func (srv *server) registerConsumption() {
	const scope = "GET /providers/Microsoft.Billing/billingAccounts/{billingAccountId}/providers/Microsoft.Consumption/"
	srv.handle(scope+"reservationSummaries", srv.reservationSummaries)
	srv.handle(scope+"reservationDetails", srv.reservationDetails)
	srv.handle(scope+"reservationTransactions", srv.reservationTransactions)
	srv.handle(scope+"reservationRecommendations", srv.reservationRecommendations)
}

// reservationOrders is the namespace of the reservation order ids derived
// from reservation ids: the world names reservations only.
var reservationOrders = uuid.MustParse("0b7c3f0e-2d5a-4c8e-9f61-5a4e2b7d9c13")

// ReservationOrderID is the order id the simulator gives a reservation of
// the world, the same in every run.
func ReservationOrderID(reservationID string) string {
	return uuid.NewSHA1(reservationOrders, []byte(strings.ToLower(reservationID))).String()
}

type reservationSummaryJSON struct {
	ID         string                      `json:"id"`
	Name       string                      `json:"name"`
	Type       string                      `json:"type"`
	Tags       map[string]string           `json:"tags"`
	Properties reservationSummaryPropsJSON `json:"properties"`
}

type reservationSummaryPropsJSON struct {
	ReservationOrderID       string  `json:"reservationOrderId"`
	ReservationID            string  `json:"reservationId"`
	SKUName                  string  `json:"skuName"`
	Kind                     string  `json:"kind"`
	ReservedHours            float64 `json:"reservedHours"`
	UsageDate                string  `json:"usageDate"`
	UsedHours                float64 `json:"usedHours"`
	MinUtilizationPercentage float64 `json:"minUtilizationPercentage"`
	AvgUtilizationPercentage float64 `json:"avgUtilizationPercentage"`
	MaxUtilizationPercentage float64 `json:"maxUtilizationPercentage"`
}

// usageDateClause and eventDateClause are one comparison of a $filter,
// e.g. "properties/usageDate ge 2026-10-01" (the date may be quoted).
var (
	usageDateClause = dateClause("usageDate")
	eventDateClause = dateClause("eventDate")
)

func dateClause(property string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)^properties/` + property + `\s+(ge|gt|le|lt|eq)\s+'?(\d{4}-\d{2}-\d{2})[^'\s]*'?$`)
}

var and = regexp.MustCompile(`(?i)\s+and\s+`)

// usageDateRange reads the date range from $filter, or from startDate and
// endDate (the billing profile form); empty bounds are open.
func usageDateRange(r *http.Request) (from, to string, err error) {
	return dateRange(r, usageDateClause, "usageDate")
}

// dateRange reads the range of one date property from $filter, or from
// startDate and endDate; empty bounds are open.
func dateRange(r *http.Request, clauseRE *regexp.Regexp, property string) (from, to string, err error) {
	q := r.URL.Query()
	from, to = q.Get("startDate"), q.Get("endDate")
	filter := strings.TrimSpace(q.Get("$filter"))
	if filter == "" {
		return from, to, nil
	}
	for _, clause := range and.Split(filter, -1) {
		m := clauseRE.FindStringSubmatch(strings.TrimSpace(clause))
		if m == nil {
			return "", "", fmt.Errorf("$filter clause %q is not supported; use properties/%s ge|le YYYY-MM-DD joined by and", clause, property)
		}
		d, perr := time.Parse(time.DateOnly, m[2])
		if perr != nil {
			return "", "", fmt.Errorf("$filter: %q is not a date", m[2])
		}
		switch strings.ToLower(m[1]) {
		case "ge":
			from = d.Format(time.DateOnly)
		case "gt":
			from = d.AddDate(0, 0, 1).Format(time.DateOnly)
		case "le":
			to = d.Format(time.DateOnly)
		case "lt":
			to = d.AddDate(0, 0, -1).Format(time.DateOnly)
		case "eq":
			from, to = d.Format(time.DateOnly), d.Format(time.DateOnly)
		}
	}
	return from, to, nil
}

// reachesBillingAccount reports whether a caller of directory tenant tid
// may read the billing account id: one of a tenant whose subscriptions
// it reaches.
func (srv *server) reachesBillingAccount(tid, id string) bool {
	for _, t := range srv.sim.World().Tenants {
		if t.BillingAccountID != nil && strings.EqualFold(*t.BillingAccountID, id) {
			return srv.reaches(tid, t)
		}
	}
	return false
}

// billingScope is the billing account a request names and its scope; a
// caller that may not read it is answered 403, as Azure answers a
// principal without a billing role, and ok is false.
func (srv *server) billingScope(w http.ResponseWriter, r *http.Request, c idp.Claims, resource string) (account, scope string, ok bool) {
	account = r.PathValue("billingAccountId")
	scope = "/providers/Microsoft.Billing/billingAccounts/" + account
	if !srv.reachesBillingAccount(c.TenantID, account) {
		cloudsim.WriteError(w, http.StatusForbidden, "AuthorizationFailed", fmt.Sprintf(
			"The client '%s' with object id '%s' does not have authorization to perform action 'Microsoft.Consumption/%s/read' over scope '%s' or the scope is invalid.",
			c.ObjectID, c.ObjectID, resource, scope))
		return "", "", false
	}
	return account, scope, true
}

func utilization(used, reserved float64) float64 {
	if reserved <= 0 {
		return 0
	}
	return used / reserved * 100
}

func (srv *server) reservationSummaries(w http.ResponseWriter, r *http.Request, c idp.Claims) {
	account, scope, ok := srv.billingScope(w, r, c, "reservationSummaries")
	if !ok {
		return
	}
	grain := strings.ToLower(r.URL.Query().Get("grain"))
	if grain != "daily" && grain != "monthly" {
		badRequest(w, "The grain parameter must be daily or monthly.")
		return
	}
	from, to, err := usageDateRange(r)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	if grain == "daily" && (from == "" || to == "") {
		badRequest(w, "The daily grain needs a properties/usageDate range in $filter.")
		return
	}
	var days []*world.Reservation
	for i := range srv.sim.World().Reservations {
		res := &srv.sim.World().Reservations[i]
		if strings.EqualFold(res.BillingAccountID, account) && (from == "" || res.Date >= from) && (to == "" || res.Date <= to) {
			days = append(days, res)
		}
	}
	slices.SortStableFunc(days, func(a, b *world.Reservation) int {
		return cmp.Or(strings.Compare(a.Date, b.Date), strings.Compare(a.ReservationID, b.ReservationID))
	})
	summaries := make([]reservationSummaryPropsJSON, 0, len(days))
	if grain == "daily" {
		for _, d := range days {
			u := utilization(d.UsedHours, d.ReservedHours)
			summaries = append(summaries, summaryOf(d, d.Date, u, u, u))
		}
	} else {
		summaries = monthly(days)
	}
	p := cloudsim.PageOf(r, srv.sim.URLs[cloudsim.ARM], len(summaries), cloudsim.DefaultPageSize)
	value := make([]reservationSummaryJSON, 0, p.End-p.Start)
	for _, s := range summaries[p.Start:p.End] {
		name := s.ReservationID + "_" + strings.ReplaceAll(s.UsageDate[:10], "-", "")
		value = append(value, reservationSummaryJSON{
			ID:         scope + "/providers/Microsoft.Consumption/reservationSummaries/" + name,
			Name:       name,
			Type:       "Microsoft.Consumption/reservationSummaries",
			Properties: s,
		})
	}
	body := map[string]any{"value": value}
	if p.NextLink != "" {
		body["nextLink"] = p.NextLink
	}
	cloudsim.WriteJSON(w, body)
}

func summaryOf(d *world.Reservation, day string, minU, avgU, maxU float64) reservationSummaryPropsJSON {
	return reservationSummaryPropsJSON{
		ReservationOrderID:       ReservationOrderID(d.ReservationID),
		ReservationID:            d.ReservationID,
		SKUName:                  d.SKU,
		Kind:                     "Reservation",
		ReservedHours:            d.ReservedHours,
		UsageDate:                day + "T00:00:00Z",
		UsedHours:                d.UsedHours,
		MinUtilizationPercentage: minU,
		AvgUtilizationPercentage: avgU,
		MaxUtilizationPercentage: maxU,
	}
}

// monthly sums each reservation's days into months dated on the first:
// hours add up, and the utilisation percentages are the lowest, mean and
// highest of the month's days.
func monthly(days []*world.Reservation) []reservationSummaryPropsJSON {
	type key struct{ month, id string }
	at := map[key]int{}
	var out []reservationSummaryPropsJSON
	var count []int
	for _, d := range days {
		k := key{d.Date[:7], d.ReservationID}
		u := utilization(d.UsedHours, d.ReservedHours)
		i, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, summaryOf(d, k.month+"-01", u, u, u))
			count = append(count, 1)
			continue
		}
		s := &out[i]
		s.ReservedHours += d.ReservedHours
		s.UsedHours += d.UsedHours
		s.MinUtilizationPercentage = min(s.MinUtilizationPercentage, u)
		s.MaxUtilizationPercentage = max(s.MaxUtilizationPercentage, u)
		s.AvgUtilizationPercentage += u // a sum until the last day is in
		count[i]++
	}
	for i := range out {
		out[i].AvgUtilizationPercentage /= float64(count[i])
	}
	slices.SortStableFunc(out, func(a, b reservationSummaryPropsJSON) int {
		return cmp.Or(strings.Compare(a.UsageDate, b.UsageDate), strings.Compare(a.ReservationID, b.ReservationID))
	})
	return out
}
