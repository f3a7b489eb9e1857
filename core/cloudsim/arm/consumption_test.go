package arm_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim/arm"
)

func summariesPath(account, query string) string {
	return "/providers/Microsoft.Billing/billingAccounts/" + account +
		"/providers/Microsoft.Consumption/reservationSummaries?api-version=2021-10-01&" + query
}

func filter(f string) string { return "$filter=" + url.QueryEscape(f) }

func TestReservationSummaries(t *testing.T) {
	e := start(t)
	resp, body := e.do("GET", summariesPath(billingAccount, "grain=daily&"+filter("properties/usageDate ge '2026-10-01' and properties/usageDate le '2026-10-05'")), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	value := body["value"].([]any)
	if len(value) != 5 {
		t.Fatalf("%d summaries, want 5", len(value))
	}
	s := value[2].(map[string]any)
	p := s["properties"].(map[string]any)
	if s["type"] != "Microsoft.Consumption/reservationSummaries" || !strings.HasPrefix(s["id"].(string), "/providers/Microsoft.Billing/billingAccounts/"+billingAccount+"/providers/Microsoft.Consumption/reservationSummaries/") ||
		p["reservationId"] != "res-1" || p["reservationOrderId"] != arm.ReservationOrderID("res-1") || p["skuName"] != "Standard_D2s_v5" ||
		p["usageDate"] != "2026-10-03T00:00:00Z" || p["reservedHours"] != 24.0 || p["usedHours"] != 3.0 ||
		p["minUtilizationPercentage"] != 12.5 || p["avgUtilizationPercentage"] != 12.5 || p["maxUtilizationPercentage"] != 12.5 {
		t.Fatalf("summary %v", s)
	}

	// Unquoted dates, AND, and paging with $top.
	n, pages := 0, 0
	for link := summariesPath(billingAccount, "grain=daily&$top=15&"+filter("properties/usageDate ge 2026-10-01 AND properties/usageDate le 2026-11-30")); link != ""; pages++ {
		_, body := e.do("GET", link, nil)
		n += len(body["value"].([]any))
		link, _ = body["nextLink"].(string)
	}
	if n != 40 || pages != 3 {
		t.Fatalf("%d summaries in %d pages, want 40 in 3", n, pages)
	}

	// Monthly sums the days; without a filter it covers every month.
	_, body = e.do("GET", summariesPath(billingAccount, "grain=monthly"), nil)
	value = body["value"].([]any)
	if len(value) != 2 {
		t.Fatalf("monthly %v", body)
	}
	nov := value[1].(map[string]any)["properties"].(map[string]any)
	// November holds days 32..40 of the world: used hours d%25 = 7..15.
	if nov["usageDate"] != "2026-11-01T00:00:00Z" || nov["reservedHours"] != 9*24.0 || nov["usedHours"] != 99.0 ||
		nov["minUtilizationPercentage"] != 7/24.0*100 || nov["maxUtilizationPercentage"] != 15/24.0*100 {
		t.Fatalf("November %v", nov)
	}
}

func TestReservationSummariesRejects(t *testing.T) {
	e := start(t)
	resp, body := e.do("GET", summariesPath("87654321", "grain=daily&"+filter("properties/usageDate ge 2026-10-01 and properties/usageDate le 2026-10-05")), nil)
	msg, _ := body["error"].(map[string]any)["message"].(string)
	if resp.StatusCode != 403 || errorCode(body) != "AuthorizationFailed" || !strings.Contains(msg, "87654321") {
		t.Fatalf("unknown billing account: %d %v", resp.StatusCode, body)
	}
	for name, query := range map[string]string{
		"no grain":         filter("properties/usageDate ge 2026-10-01 and properties/usageDate le 2026-10-05"),
		"hourly grain":     "grain=hourly",
		"daily, no filter": "grain=daily",
		"other filter":     "grain=daily&" + filter("properties/reservationId eq 'res-1'"),
	} {
		if resp, body := e.do("GET", summariesPath(billingAccount, query), nil); resp.StatusCode != 400 || errorCode(body) != "BadRequest" {
			t.Errorf("%s: %d %v", name, resp.StatusCode, body)
		}
	}
}
