package views_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stewardhq/steward/plugins/cost/budgets"
	"github.com/stewardhq/steward/plugins/cost/views"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// send answers a form route's status and HTML.
func (w *world) send(t *testing.T, method, path string, form url.Values, who sdk.Principal) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp := w.h.Do(req, who)
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// budgetNamed is the tenant's budget of the name, or nil.
func (w *world) budgetNamed(t *testing.T, tenant, name string) *budgets.Budget {
	t.Helper()
	list, _, err := w.budgets.List(context.Background(), budgets.ListQuery{TenantIDs: []string{tenant}, SortBy: "name", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func audited(w *world, action string) []plugintest.AuditEntry {
	var out []plugintest.AuditEntry
	for _, e := range w.h.AuditEntries() {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

// fieldError is the error shown beside the form's field of the id.
func fieldError(html, id string) string {
	m := regexp.MustCompile(`<p class="alert" id="` + regexp.QuoteMeta(id) + `-error">([^<]*)</p>`).FindStringSubmatch(html)
	if m == nil {
		return ""
	}
	return m[1]
}

// testBudgetEditor: on a page of one tenant the budget section is the
// editor; a budget is created, refused with each error beside its field
// and the input kept, changed and deleted through its form routes, which
// go through the budget API and its audit; another tenant's budget and
// tenant are refused. It leaves the budgets as they were.
func testBudgetEditor(t *testing.T, w *world) {
	const q = "?tenant_id=t1"
	several := text(w.html(t, views.PagePath, userA))
	contains(t, "the page of two tenants", several, "pick a tenant with the tenant picker to create, change or delete its budgets")
	one := w.html(t, views.PagePath+q, userA)
	contains(t, "the page of Alpha", one, `id="cost-budgets"`, `hx-post="/partials/cost-budgets?tenant_id=t1"`, `name="thresholds[4].contact_emails"`,
		`hx-confirm="Delete the budget Alpha monthly and its alerts?"`)

	form := url.Values{"name": {"Team budget"}, "amount": {"12.345"}, "currency": {"USD"}, "time_grain": {"Quarterly"}, "start_date": {"2026-10-01"},
		"thresholds[0].percentage": {"50"}, "thresholds[2].percentage": {"90"}, "thresholds[2].contact_emails": {"finops@example.com, not-an-address"},
		"notifications.enabled": {"true"}, "notifications.contact_roles": {"Owner", "Reader"}}
	status, refused := w.send(t, http.MethodPost, views.BudgetsPath+q, form, userA)
	if status != http.StatusOK {
		t.Fatalf("a refused form: %d %s", status, refused)
	}
	if got := fieldError(refused, "budget-amount"); got != "must have at most two decimals" {
		t.Errorf("the amount's error: %q\n%s", got, refused)
	}
	// The API's second threshold came from the form's third row.
	if got := fieldError(refused, "budget-threshold-2-emails"); got != "item 2: must be an e-mail address such as finops@example.com" {
		t.Errorf("the third threshold's addresses' error: %q", got)
	}
	contains(t, "the refused form", refused, `role="alert"`, `aria-invalid="true"`, `value="Team budget"`, `value="12.345"`,
		`<option value="Quarterly" selected>`, `value="Owner" checked`, `value="Reader" checked`, `value="finops@example.com, not-an-address"`)
	if b := w.budgetNamed(t, "t1", "Team budget"); b != nil {
		t.Fatalf("a refused form created %+v", b)
	}
	for _, c := range []struct{ amount, want string }{{"abc", "expected number"}, {"", "is required"}, {"-5", "expected number &gt; 0"}} {
		form.Set("amount", c.amount)
		_, html := w.send(t, http.MethodPost, views.BudgetsPath+q, form, userA)
		if got := fieldError(html, "budget-amount"); !strings.Contains(got, c.want) {
			t.Errorf("amount %q: error %q, want %q", c.amount, got, c.want)
		}
	}

	// A name the tenant has is the API's conflict, said above the form.
	form.Set("amount", "10")
	form.Set("name", "Alpha monthly")
	form.Set("thresholds[2].contact_emails", "finops@example.com")
	_, conflict := w.send(t, http.MethodPost, views.BudgetsPath+q, form, userA)
	contains(t, "a name taken", text(conflict), "The budget was not saved:a budget of that name already exists in the tenant and scope")
	form.Set("name", "Team budget")

	form.Set("amount", "1500.50")
	form.Set("thresholds[2].contact_emails", "finops@example.com")
	status, created := w.send(t, http.MethodPost, views.BudgetsPath+q, form, userA)
	contains(t, "the section after the create", text(created), "Budget “Team budget” created.", "Team budget", "1,500.50 USD")
	b := w.budgetNamed(t, "t1", "Team budget")
	if status != http.StatusOK || b == nil || b.Amount != 150050 || b.TimeGrain != budgets.Quarterly || len(b.Thresholds) != 2 ||
		b.Thresholds[1].Percentage != 90 || b.Notifications == nil || len(b.Notifications.ContactRoles) != 2 || b.CreatedBy != "ua" {
		t.Fatalf("created: %d %+v", status, b)
	}
	if e := audited(w, "budget.create.success"); len(e) != 1 || e[0].TenantID != "t1" || e[0].Principal.ID != "ua" {
		t.Errorf("the create's audit entries: %+v", e)
	}

	edit := w.html(t, views.BudgetsPath+q+"&edit="+b.ID, userA)
	patch := "/partials/cost-budgets/" + b.ID + q
	contains(t, "the edit form", edit, `hx-patch="`+patch+`"`, `value="1500.50"`, `value="2026-10-01"`, "Save budget", "Cancel")
	form.Set("amount", "2000")
	form.Set("end_date", "2026-09-01")
	_, html := w.send(t, http.MethodPatch, patch, form, userA)
	if got := fieldError(html, "budget-end-date"); !strings.Contains(got, "must be after start_date") {
		t.Errorf("an end before the start: %q", got)
	}
	contains(t, "the refused change", html, `hx-patch="`+patch+`"`, `value="2000"`)
	form.Set("end_date", "")
	_, saved := w.send(t, http.MethodPatch, patch, form, userA)
	contains(t, "the section after the change", text(saved), "Budget “Team budget” saved.", "2,000.00 USD")
	if b = w.budgetNamed(t, "t1", "Team budget"); b == nil || b.Amount != 200000 || b.EndDay != nil {
		t.Errorf("changed: %+v", b)
	}
	if e := audited(w, "budget.update.success"); len(e) != 1 || e[0].TenantID != "t1" {
		t.Errorf("the change's audit entries: %+v", e)
	}

	// Another tenant's budget, and another tenant, are refused and left
	// alone.
	beta := w.budgetNamed(t, "t2", "Beta budget")
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{http.MethodDelete, "/partials/cost-budgets/" + beta.ID + q, http.StatusNotFound},
		{http.MethodPatch, "/partials/cost-budgets/" + beta.ID + q, http.StatusNotFound},
		{http.MethodGet, views.BudgetsPath + q + "&edit=" + beta.ID, http.StatusNotFound},
		{http.MethodPost, views.BudgetsPath + "?tenant_id=t2", http.StatusForbidden},
		{http.MethodDelete, "/partials/cost-budgets/" + beta.ID + "?tenant_id=t2", http.StatusForbidden},
	} {
		status, body := w.send(t, c.method, c.path, form, userA)
		if status != c.want || strings.Contains(body, "Beta") {
			t.Errorf("%s %s as Alpha's user: %d %s", c.method, c.path, status, body)
		}
	}
	if w.budgetNamed(t, "t2", "Beta budget") == nil || w.budgetNamed(t, "t2", "Team budget") != nil {
		t.Error("Alpha's user changed Beta's budgets")
	}

	status, deleted := w.send(t, http.MethodDelete, patch, nil, userA)
	contains(t, "the section after the delete", text(deleted), "Budget “Team budget” deleted.")
	if status != http.StatusOK || w.budgetNamed(t, "t1", "Team budget") != nil {
		t.Errorf("delete: %d, the budget is still there", status)
	}
	if e := audited(w, "budget.delete.success"); len(e) != 1 || e[0].TenantID != "t1" {
		t.Errorf("the delete's audit entries: %+v", e)
	}
}
