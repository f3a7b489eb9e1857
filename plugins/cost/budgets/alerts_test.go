package budgets_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/cost/budgets"
	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
)

func (f *fixture) alerts(p sdk.Principal, path string) []budgets.AlertView {
	f.t.Helper()
	var out []budgets.AlertView
	f.do(p, http.MethodGet, path, nil).want(f.t, path, http.StatusOK).decode(f.t, &out)
	return out
}

func describe(alerts []budgets.AlertView) string {
	var out []string
	for _, a := range alerts {
		out = append(out, fmt.Sprintf("%s %d%% %s %s %s", a.AlertType, a.ThresholdPercentage, a.PeriodStart, a.Spend, a.Status))
	}
	return strings.Join(out, "; ")
}

// TestAlertOncePerCrossing: a threshold raises one alert the first time
// spend reaches it in a period, however often the budget is evaluated; the
// next period raises it afresh and resolves the last period's pending
// ones; the status follows the spend through every band.
func TestAlertOncePerCrossing(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		d := f.create(userA, budgetBody("Crossings", func(b map[string]any) {
			b["subscription_id"] = subA
			b["thresholds"] = []any{
				map[string]any{"percentage": 50, "contact_emails": []string{"a@example.com"}},
				map[string]any{"percentage": 80, "contact_emails": []string{"b@example.com"}},
			}
		}))
		path := budgetsAt + "/" + d.ID + "/alerts"
		status := func() string { return f.get(userA, d.ID).Status }
		if status() != budgets.StatusActive || len(f.alerts(userA, path)) != 0 {
			t.Fatalf("a budget without spend: %s, alerts %v", status(), describe(f.alerts(userA, path)))
		}
		f.costs(tenantA, subA, "2026-12-01", 499.99, "USD")
		f.costs(tenantA, subA2, "2026-12-01", 5000, "USD") // another subscription of the tenant
		if status() != budgets.StatusActive || len(f.alerts(userA, path)) != 0 {
			t.Fatalf("499.99 of 1000: %s, alerts %v", status(), describe(f.alerts(userA, path)))
		}
		f.costs(tenantA, subA, "2026-12-02", 0.01, "USD")
		for range 3 {
			if err := f.eval.Evaluate(ctx, sdk.Tenant{ID: tenantA}, 0, 1<<30); err != nil {
				t.Fatal(err)
			}
		}
		if got := describe(f.alerts(userA, path)); got != "threshold 50% 2026-12-01 500.00 pending" || status() != budgets.StatusWarning {
			t.Fatalf("at 50 %%: %s, alerts %s", status(), got)
		}
		f.costs(tenantA, subA, "2026-12-03", 300, "USD") // 80 %
		f.costs(tenantA, subA, "2026-12-04", 100, "USD") // 90 %
		if got := describe(f.alerts(userA, path)); got != "threshold 80% 2026-12-01 800.00 pending; threshold 50% 2026-12-01 500.00 pending" || status() != budgets.StatusCritical {
			t.Fatalf("at 90 %%: %s, alerts %s", status(), got)
		}
		f.costs(tenantA, subA, "2026-12-05", 100, "USD") // 100 %
		if status() != budgets.StatusExceeded || len(f.alerts(userA, path)) != 2 {
			t.Fatalf("at 100 %%: %s, alerts %s", status(), describe(f.alerts(userA, path)))
		}

		// January: a new period. December's pending alerts are resolved,
		// January's crossing raises its own.
		f.clock.Set(time.Date(2027, 1, 10, 9, 0, 0, 0, time.UTC))
		f.costs(tenantA, subA, "2027-01-02", 600, "USD")
		got := describe(f.alerts(userA, path))
		if got != "threshold 50% 2027-01-01 600.00 pending; threshold 80% 2026-12-01 800.00 resolved; threshold 50% 2026-12-01 500.00 resolved" {
			t.Fatalf("in January: %s", got)
		}
		if v := f.get(userA, d.ID); v.Status != budgets.StatusWarning || v.PeriodStart.String() != "2027-01-01" || v.CurrentSpend.String() != "600.00" {
			t.Fatalf("in January %+v", v.View)
		}
		// Raising the amount dismisses the crossing that no longer holds.
		f.do(userA, http.MethodPatch, budgetsAt+"/"+d.ID, `{"amount": 2000}`).want(t, "raise", http.StatusOK)
		if got := describe(f.alerts(userA, path+"?status=dismissed")); got != "threshold 50% 2027-01-01 600.00 dismissed" {
			t.Fatalf("after raising the amount: %s", got)
		}
		// An evaluation of other days leaves the budget alone.
		jan, _ := ledger.ParseDay("2026-11-01")
		if err := f.eval.Evaluate(ctx, sdk.Tenant{ID: tenantA}, jan, jan+5); err != nil {
			t.Fatal(err)
		}
		if all := f.alerts(userA, path); len(all) != 3 {
			t.Fatalf("alerts %s", describe(all))
		}
	})
}

// TestThresholdEvents: each alert raises one cost.budget_threshold event,
// to the threshold's contacts, however often the budget is evaluated; a
// threshold of 100 % or more is an error, the others warnings.
func TestThresholdEvents(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		d := f.create(userA, budgetBody("Events", func(b map[string]any) {
			b["subscription_id"] = subA
			b["thresholds"] = []any{
				map[string]any{"percentage": 50, "contact_emails": []string{"a@example.com", "b@example.com"}},
				map[string]any{"percentage": 100, "contact_emails": []string{"c@example.com"}},
			}
		}))
		if got := f.h.Events(); len(got) != 0 {
			t.Fatalf("events before any spend: %+v", got)
		}
		f.costs(tenantA, subA, "2026-12-01", 600, "USD")
		for range 2 {
			if err := f.eval.Evaluate(ctx, sdk.Tenant{ID: tenantA}, 0, 1<<30); err != nil {
				t.Fatal(err)
			}
		}
		got := f.h.Events()
		if len(got) != 1 {
			t.Fatalf("events at 60 %%: %+v, want one", got)
		}
		e := got[0]
		if e.Kind != budgets.EventThreshold || e.Severity != "warning" || e.TenantID != tenantA || e.Title != `Budget "Events": spend reached 50%` ||
			!strings.Contains(e.Message, "reached 50% of budget") || e.Link != "/costs?tenant_id="+tenantA ||
			strings.Join(e.Recipients, ",") != "a@example.com,b@example.com" || e.DedupeKey != d.ID+"/threshold/50/2026-12-01" ||
			e.Details["budget_id"] != d.ID || e.Details["threshold"] != 50.0 {
			t.Errorf("event at 60 %%: %+v", e)
		}
		f.costs(tenantA, subA, "2026-12-02", 500, "USD")
		f.costs(tenantA, subA, "2026-12-03", 1, "USD")
		got = f.h.Events()
		if len(got) != 2 || got[1].Severity != "error" || strings.Join(got[1].Recipients, ",") != "c@example.com" || got[1].DedupeKey != d.ID+"/threshold/100/2026-12-01" {
			t.Fatalf("events at 110 %%: %+v", got)
		}
	})
}

// TestAcknowledge: one alert with a note, again (no change), with an
// empty or null body; another tenant's alert is 404; a bulk request
// naming an alert the caller may not see, or a closed one, acknowledges
// none and names it; a bulk request acknowledges all; each audited.
func TestAcknowledge(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		f.costs(tenantA, subA, "2026-12-01", 900, "USD")
		f.costs(tenantB, subB, "2026-12-01", 900, "USD")
		a := f.create(userA, budgetBody("A", func(b map[string]any) {
			b["thresholds"] = []any{
				map[string]any{"percentage": 50, "contact_emails": []string{"a@example.com"}},
				map[string]any{"percentage": 80, "contact_emails": []string{"a@example.com"}},
			}
		}))
		b := f.create(admin, budgetBody("B", func(b map[string]any) { b["tenant_id"] = tenantB }))
		if len(a.RecentAlerts) != 2 || len(b.RecentAlerts) != 1 {
			t.Fatalf("alerts raised: A %d, B %d", len(a.RecentAlerts), len(b.RecentAlerts))
		}
		a50, a80, b80 := a.RecentAlerts[1].ID, a.RecentAlerts[0].ID, b.RecentAlerts[0].ID
		ack := func(id int64) string { return fmt.Sprintf("%s/alerts/%d/acknowledge", budgetsAt, id) }

		var res budgets.AckResult
		f.do(userA, http.MethodPost, ack(a80), `{"resolution_note": "  Raised with the team  "}`).want(t, "acknowledge", http.StatusOK).decode(t, &res)
		if !res.Success || !res.Changed || res.Alert.Status != budgets.AlertAcknowledged || res.Alert.ResolutionNote == nil ||
			*res.Alert.ResolutionNote != "Raised with the team" || *res.Alert.AcknowledgedBy != userA.ID || res.Alert.AcknowledgedAt == nil {
			t.Fatalf("acknowledged %+v", res)
		}
		f.do(userA, http.MethodPost, ack(a80), "").want(t, "again", http.StatusOK).decode(t, &res)
		if res.Changed || *res.Alert.ResolutionNote != "Raised with the team" {
			t.Errorf("acknowledging again changed it: %+v", res)
		}
		f.do(userA, http.MethodPost, ack(a80), "null").want(t, "null body", http.StatusOK)
		f.do(userA, http.MethodPost, ack(b80), nil).want(t, "another tenant's alert", http.StatusNotFound)
		f.do(userA, http.MethodPost, ack(999999), nil).want(t, "missing alert", http.StatusNotFound)
		f.do(userA, http.MethodPost, ack(a50), `{"resolution_note": "`+strings.Repeat("n", 1001)+`"}`).wantInvalid(t, "long note", "body.resolution_note")
		f.do(userA, http.MethodPost, ack(a50), `{"note": "x"}`).wantInvalid(t, "unknown field", "body.note")
		f.do(userA, http.MethodPost, ack(a50), `[1]`).wantInvalid(t, "array body", "body")

		bulk := budgetsAt + "/alerts/bulk-acknowledge"
		r := f.do(userA, http.MethodPost, bulk, map[string]any{"alert_ids": []int64{a50, b80}}).want(t, "bulk with a foreign id", http.StatusNotFound)
		if !strings.Contains(string(r.body), fmt.Sprint(b80)) {
			t.Errorf("the refusal does not name %d: %s", b80, r.body)
		}
		if all := f.alerts(userA, budgetsAt+"/alerts/all?status=pending"); len(all) != 1 || all[0].ID != a50 {
			t.Fatalf("a refused bulk request changed alerts: %s", describe(all))
		}
		for body, loc := range map[string]string{
			`{}`:                   "body.alert_ids",
			`{"alert_ids": []}`:    "body.alert_ids",
			`{"alert_ids": null}`:  "body.alert_ids",
			`{"alert_ids": [0]}`:   "body.alert_ids[0]",
			`{"alert_ids": ["x"]}`: "body.alert_ids[0]",
			`{"alert_ids": [1], "resolution_note": 5}`:                     "body.resolution_note",
			fmt.Sprintf(`{"alert_ids": [%s1]}`, strings.Repeat("1,", 500)): "body.alert_ids",
		} {
			f.do(userA, http.MethodPost, bulk, body).wantInvalid(t, body, loc)
		}
		var bres budgets.BulkAckResult
		f.do(admin, http.MethodPost, bulk, map[string]any{"alert_ids": []int64{a50, a80, b80, a50}, "resolution_note": "month end"}).
			want(t, "bulk", http.StatusOK).decode(t, &bres)
		if !bres.Success || bres.Acknowledged != 2 || bres.AlreadyAcknowledged != 1 || len(bres.Alerts) != 3 {
			t.Fatalf("bulk %+v", bres)
		}
		for _, al := range bres.Alerts {
			if al.Status != budgets.AlertAcknowledged {
				t.Errorf("after bulk %+v", al)
			}
		}
		if pending := f.alerts(admin, budgetsAt+"/alerts/all?status=pending"); len(pending) != 0 {
			t.Errorf("still pending %s", describe(pending))
		}

		// A closed alert cannot be acknowledged, alone or among others.
		f.do(userA, http.MethodPatch, budgetsAt+"/"+a.ID, `{"amount": 100000}`).want(t, "raise", http.StatusOK)
		f.clock.Set(time.Date(2027, 1, 5, 0, 0, 0, 0, time.UTC))
		f.costs(tenantA, subA, "2027-01-01", 60000, "USD")
		jan := f.alerts(userA, budgetsAt+"/alerts/all?status=pending")
		if len(jan) != 1 {
			t.Fatalf("January %s", describe(jan))
		}
		f.do(userA, http.MethodPatch, budgetsAt+"/"+a.ID, `{"amount": 1000000}`).want(t, "raise again", http.StatusOK)
		f.do(userA, http.MethodPost, ack(jan[0].ID), nil).want(t, "dismissed alert", http.StatusConflict)

		var summary budgets.Summary
		f.do(admin, http.MethodGet, budgetsAt+"/summary", nil).want(t, "summary", http.StatusOK).decode(t, &summary)
		if summary.TotalBudgets != 2 || summary.Alerts.Total != 4 || summary.Alerts.ByStatus[budgets.AlertAcknowledged] != 3 ||
			summary.Alerts.ByStatus[budgets.AlertDismissed] != 1 || summary.Alerts.ByStatus[budgets.AlertPending] != 0 {
			t.Errorf("summary %+v", summary)
		}
		want := []string{
			"budget_alert.acknowledge.success " + tenantA + " " + fmt.Sprint(a80),
			"budget_alert.bulk_acknowledge.success " + tenantA + " ",
			"budget_alert.bulk_acknowledge.success " + tenantB + " ",
		}
		var got []string
		for _, e := range f.audited() {
			if strings.HasPrefix(e, "budget_alert.") {
				got = append(got, e)
			}
		}
		if strings.Join(got[:1], ";") != want[0] || len(got) != 3 || !strings.Contains(strings.Join(got, ";"), want[1]) || !strings.Contains(strings.Join(got, ";"), want[2]) {
			t.Errorf("audited %v, want %v", got, want)
		}
	})
}

// TestSummary: budgets by status and currency, never summed across
// currencies, and pending alerts by type, of the tenants asked for.
func TestSummary(t *testing.T) {
	eachDialect(t, func(t *testing.T, f *fixture) {
		f.costs(tenantA, subA, "2026-12-01", 950, "USD")
		f.costs(tenantA, subA, "2026-12-01", 10, "EUR")
		f.create(userA, budgetBody("usd", func(b map[string]any) {
			b["thresholds"] = []any{map[string]any{"percentage": 120, "contact_emails": []string{"a@example.com"}, "threshold_type": "Forecasted"}}
		}))
		f.create(userA, budgetBody("eur", func(b map[string]any) { b["currency"] = "EUR"; b["amount"] = 20.5 }))
		f.create(admin, budgetBody("b", func(b map[string]any) { b["tenant_id"] = tenantB }))
		var s budgets.Summary
		f.do(userA, http.MethodGet, budgetsAt+"/summary", nil).want(t, "summary", http.StatusOK).decode(t, &s)
		byCurrency := fmt.Sprint(s.ByCurrency)
		if s.TotalBudgets != 2 || s.ByStatus[budgets.StatusCritical] != 1 || s.ByStatus[budgets.StatusActive] != 1 || s.ByStatus[budgets.StatusWarning] != 0 ||
			byCurrency != "[{EUR 1 20.50 10.00} {USD 1 1000.00 950.00}]" || s.Alerts.ByType[budgets.AlertForecast] != 1 || s.Alerts.ByType[budgets.AlertThreshold] != 0 {
			t.Errorf("user A's summary %+v %s", s, byCurrency)
		}
		f.do(admin, http.MethodGet, budgetsAt+"/summary?tenant_ids="+tenantB, nil).want(t, "B's summary", http.StatusOK).decode(t, &s)
		if s.TotalBudgets != 1 || s.Alerts.Total != 0 {
			t.Errorf("B's summary %+v", s)
		}
		f.do(userA, http.MethodGet, budgetsAt+"/summary?tenant_ids="+tenantB, nil).want(t, "B's summary to user A", http.StatusForbidden)
		f.do(userA, http.MethodGet, budgetsAt+"/alerts/all?tenant_ids="+tenantA+","+tenantB, nil).want(t, "B's alerts to user A", http.StatusForbidden)
	})
}
