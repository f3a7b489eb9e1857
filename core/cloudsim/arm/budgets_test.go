package arm_test

import (
	"strings"
	"testing"
)

func budgetPath(sub, name string) string {
	p := "/subscriptions/" + sub + "/providers/Microsoft.Consumption/budgets"
	if name != "" {
		p += "/" + name
	}
	return p + "?api-version=2021-10-01"
}

func budgetBody(amount float64, grain string, notifications map[string]any) map[string]any {
	return map[string]any{"properties": map[string]any{
		"category": "Cost", "amount": amount, "timeGrain": grain,
		"timePeriod":    map[string]any{"startDate": "2026-01-01T00:00:00Z"},
		"notifications": notifications,
	}}
}

// The test world's subscription A costs 3360 USD from October 1 to 10;
// the clock is October 15.
const octoberSpend = 3360.0

func TestBudgetLifecycle(t *testing.T) {
	e := start(t)
	actual := map[string]any{"Actual_GreaterThan_80_Percent": map[string]any{
		"enabled": true, "operator": "GreaterThan", "threshold": 80, "contactEmails": []string{"finops@example.com"}, "locale": "en-us"}}
	resp, body := e.do("PUT", budgetPath(subA, "Monthly-Cap"), budgetBody(5000, "Monthly", actual))
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %v", resp.StatusCode, body)
	}
	p := body["properties"].(map[string]any)
	period := p["timePeriod"].(map[string]any)
	spend := p["currentSpend"].(map[string]any)
	n := p["notifications"].(map[string]any)["Actual_GreaterThan_80_Percent"].(map[string]any)
	etag, _ := body["eTag"].(string)
	if body["id"] != "/subscriptions/"+subA+"/providers/Microsoft.Consumption/budgets/Monthly-Cap" || body["name"] != "Monthly-Cap" ||
		body["type"] != "Microsoft.Consumption/budgets" || !strings.HasPrefix(etag, `"`) ||
		p["category"] != "Cost" || p["amount"] != 5000.0 || p["timeGrain"] != "Monthly" ||
		period["startDate"] != "2026-01-01T00:00:00Z" || period["endDate"] != "2035-12-31T00:00:00Z" ||
		spend["amount"] != octoberSpend || spend["unit"] != "USD" || p["forecastSpend"] != nil ||
		n["thresholdType"] != "Actual" || n["threshold"] != 80.0 || n["locale"] != "en-us" {
		t.Fatalf("created %v", body)
	}

	// Names are case-insensitive and keep their first spelling.
	forecast := map[string]any{"Forecast_100": map[string]any{
		"enabled": true, "operator": "GreaterThanOrEqualTo", "threshold": 100, "contactGroups": []string{"/subscriptions/" + subA + "/resourceGroups/rg/providers/microsoft.insights/actionGroups/finops"},
		"thresholdType": "Forecasted"}}
	update := budgetBody(6000, "Monthly", forecast)
	update["eTag"] = etag
	resp, body = e.do("PUT", budgetPath(subA, "monthly-cap"), update)
	p = body["properties"].(map[string]any)
	if resp.StatusCode != 200 || body["name"] != "Monthly-Cap" || body["eTag"] == etag || p["amount"] != 6000.0 ||
		p["forecastSpend"].(map[string]any)["amount"] != octoberSpend/15*31 || p["notifications"].(map[string]any)["Actual_GreaterThan_80_Percent"] != nil {
		t.Fatalf("update: %d %v", resp.StatusCode, body)
	}
	if resp, body := e.do("PUT", budgetPath(subA, "monthly-cap"), update); resp.StatusCode != 412 || errorCode(body) != "PreconditionFailed" {
		t.Fatalf("stale eTag: %d %v", resp.StatusCode, body)
	}

	// A year counted from January holds all of October.
	e.do("PUT", budgetPath(subA, "yearly"), budgetBody(50000, "Annually", nil))
	_, body = e.do("GET", budgetPath(subA, ""), nil)
	list := body["value"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["name"] != "Monthly-Cap" || list[1].(map[string]any)["name"] != "yearly" ||
		list[1].(map[string]any)["properties"].(map[string]any)["currentSpend"].(map[string]any)["amount"] != octoberSpend {
		t.Fatalf("list %v", body)
	}
	if _, body := e.do("GET", budgetPath(subB, ""), nil); len(body["value"].([]any)) != 0 {
		t.Fatalf("another subscription's budgets: %v", body)
	}

	if resp, _ := e.do("DELETE", budgetPath(subA, "MONTHLY-CAP"), nil); resp.StatusCode != 200 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	for _, method := range []string{"GET", "DELETE"} {
		if resp, body := e.do(method, budgetPath(subA, "monthly-cap"), nil); resp.StatusCode != 404 || errorCode(body) != "NotFound" {
			t.Fatalf("%s deleted budget: %d %v", method, resp.StatusCode, body)
		}
	}
	if resp, body := e.do("GET", budgetPath("nope", ""), nil); resp.StatusCode != 404 || errorCode(body) != "SubscriptionNotFound" {
		t.Fatalf("unknown subscription: %d %v", resp.StatusCode, body)
	}
}

func TestBudgetValidation(t *testing.T) {
	e := start(t)
	valid := func() map[string]any { return budgetBody(100, "Monthly", nil) }
	props := func(b map[string]any) map[string]any { return b["properties"].(map[string]any) }
	for name, mutate := range map[string]func(map[string]any){
		"no properties":   func(b map[string]any) { delete(b, "properties") },
		"usage category":  func(b map[string]any) { props(b)["category"] = "Usage" },
		"zero amount":     func(b map[string]any) { props(b)["amount"] = 0 },
		"weekly":          func(b map[string]any) { props(b)["timeGrain"] = "Weekly" },
		"no time period":  func(b map[string]any) { delete(props(b), "timePeriod") },
		"mid-month start": func(b map[string]any) { props(b)["timePeriod"] = map[string]any{"startDate": "2026-01-15"} },
		"end before start": func(b map[string]any) {
			props(b)["timePeriod"] = map[string]any{"startDate": "2026-01-01", "endDate": "2025-12-31"}
		},
		"six notifications": func(b map[string]any) { props(b)["notifications"] = sixNotifications() },
		"bad operator": func(b map[string]any) {
			props(b)["notifications"] = map[string]any{"n": map[string]any{"enabled": true, "operator": "LessThan", "threshold": 50, "contactEmails": []string{"a@example.com"}}}
		},
		"threshold over 1000": func(b map[string]any) {
			props(b)["notifications"] = map[string]any{"n": map[string]any{"enabled": true, "operator": "EqualTo", "threshold": 1001, "contactEmails": []string{"a@example.com"}}}
		},
		"no contact": func(b map[string]any) {
			props(b)["notifications"] = map[string]any{"n": map[string]any{"enabled": true, "operator": "EqualTo", "threshold": 50}}
		},
	} {
		b := valid()
		mutate(b)
		if resp, body := e.do("PUT", budgetPath(subA, "b"), b); resp.StatusCode != 400 || errorCode(body) != "BadRequest" {
			t.Errorf("%s: %d %v, want 400", name, resp.StatusCode, body)
		}
	}
	if resp, body := e.do("PUT", budgetPath(subA, "b"), valid()); resp.StatusCode != 201 {
		t.Fatalf("valid: %d %v", resp.StatusCode, body)
	}
}

func sixNotifications() map[string]any {
	out := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		out[k] = map[string]any{"enabled": true, "operator": "GreaterThan", "threshold": 50, "contactEmails": []string{"a@example.com"}}
	}
	return out
}
