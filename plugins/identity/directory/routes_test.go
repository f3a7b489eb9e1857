package directory_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	simgraph "github.com/stewardhq/steward/core/cloudsim/graph"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/plugins/identity/directory"
	"github.com/stewardhq/steward/sdk"
)

var (
	admin     = sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: []string{contoso.ID, fabrikam.ID}}
	contosoer = sdk.Principal{ID: "uc", Kind: "user", TenantIDs: []string{contoso.ID}}
)

func (f *fixture) do(t *testing.T, target string, p sdk.Principal) (int, []byte) {
	t.Helper()
	resp := f.harness.Do(httptest.NewRequest(http.MethodGet, target, nil), p)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (f *fixture) get(t *testing.T, target string, p sdk.Principal, v any) {
	t.Helper()
	code, body := f.do(t, target, p)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", target, err, body)
	}
}

func names[T any](items []T, name func(T) string) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, name(it))
	}
	return out
}

func userNames(l directory.UserList) []string {
	return names(l.Items, func(u directory.UserItem) string { return u.DisplayName })
}

// worldDevices counts the simulator's devices of a directory and the
// compliant ones.
func worldDevices(w *world.World, dir string) (all, compliant int64) {
	for _, u := range w.Users {
		if u.DirectoryTenantID != dir {
			continue
		}
		for _, d := range simgraph.Devices(u) {
			all++
			if d.ComplianceState == "compliant" {
				compliant++
			}
		}
	}
	return all, compliant
}

func pct(part, whole int64) float64 {
	return float64(int64(float64(part)*10000/float64(whole)+0.5)) / 100
}

// TestReads: against the known world, the summary's MFA percentages to two
// decimals, the lists of accounts without MFA, privileged, disabled with
// roles, stale and guest accounts, access reviews, devices and the trend.
func TestReads(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		w := identityWorld()
		f := start(t, dialect, w, nil)
		f.mustRun(t)

		var sum []directory.TenantSummary
		f.get(t, "/api/v1/identity/summary", admin, &sum)
		if len(sum) != 2 {
			t.Fatalf("summary %+v", sum)
		}
		c, fb := sum[0], sum[1]
		if c.TenantID != contoso.ID || c.TenantName != "Contoso" || c.TotalUsers != 7 || c.GuestUsers != 1 || c.DisabledUsers != 1 ||
			c.AdminUsers != 3 || c.MFAUsers != 4 || c.UnprotectedUsers != 3 || c.MemberUsers != 5 || c.MemberMFAUsers != 3 || *c.MFACoverage != 60 || *c.AdminMFA != 66.67 {
			t.Fatalf("contoso summary %+v", c)
		}
		if fb.TotalUsers != 3 || fb.AdminUsers != 1 || *fb.MFACoverage != 66.67 || *fb.AdminMFA != 100 || fb.UnprotectedUsers != 1 {
			t.Fatalf("fabrikam summary %+v", fb)
		}
		all, compliant := worldDevices(w, contosoDir)
		if c.Devices != all || c.CompliantDevices != compliant || (all > 0 && *c.DeviceCompliance != pct(compliant, all)) {
			t.Fatalf("contoso devices %d/%d %v, want %d/%d", c.CompliantDevices, c.Devices, c.DeviceCompliance, compliant, all)
		}

		var l directory.UserList
		f.get(t, "/api/v1/identity/users/without-mfa?tenant_ids="+contoso.ID, admin, &l)
		if got := userNames(l); !slices.Equal(got, []string{"Cal Never", "Gus Guest", "Rory Root"}) || l.Total != 3 || l.Limit != 50 {
			t.Fatalf("without MFA %v (%d)", got, l.Total)
		}
		f.get(t, "/api/v1/identity/users/without-mfa?admins_only=true", admin, &l)
		if got := userNames(l); !slices.Equal(got, []string{"Rory Root"}) {
			t.Fatalf("admins without MFA %v", got)
		}
		f.get(t, "/api/v1/identity/users/without-mfa?limit=1&offset=1&sort_by=display_name&sort_order=desc", admin, &l)
		if got := userNames(l); !slices.Equal(got, []string{"Hal Nomfa"}) || l.Total != 4 || l.Offset != 1 {
			t.Fatalf("second of the accounts without MFA, by name descending: %v of %d", got, l.Total)
		}

		var a directory.AssignmentList
		f.get(t, "/api/v1/identity/privileged?sort_by=display_name", admin, &a)
		got := names(a.Items, func(x directory.AssignmentItem) string { return x.DisplayName + "/" + x.RoleName })
		if want := []string{"Ada Admin/Global Administrator", "Dee Gone/Global Administrator", "Fay Admin/Global Administrator", "Rory Root/Global Administrator"}; !slices.Equal(got, want) {
			t.Fatalf("privileged %v, want %v", got, want)
		}
		f.get(t, "/api/v1/identity/disabled-with-roles", admin, &a)
		if got := names(a.Items, func(x directory.AssignmentItem) string { return x.DisplayName }); !slices.Equal(got, []string{"Dee Gone"}) ||
			*a.Items[0].AccountEnabled || !*a.Items[0].MFARegistered {
			t.Fatalf("disabled with roles %+v", a.Items)
		}

		// Stale at 90 days: Bea signed in on 1 August; Cal never did and
		// is stale when created before the cut-off; Dee is disabled.
		cutoff := simNow.AddDate(0, 0, -90)
		want := []string{"Bea Old"}
		if simgraph.CreatedDateTime(w.Users[3], simNow).Before(cutoff) {
			want = append(want, "Cal Never")
		}
		f.get(t, "/api/v1/identity/stale?sort_by=display_name", admin, &l)
		if got := userNames(l); !slices.Equal(got, want) {
			t.Fatalf("stale %v, want %v", got, want)
		}
		if d := l.Items[0].DaysSinceSignIn; d == nil || *d != 136 {
			t.Fatalf("bea's days since sign-in %v, want 136", d)
		}
		f.get(t, "/api/v1/identity/stale?days=200", admin, &l)
		if l.Total != 0 && !slices.Equal(userNames(l), []string{"Cal Never"}) {
			t.Fatalf("stale at 200 days %v", userNames(l))
		}

		var g directory.GuestList
		f.get(t, "/api/v1/identity/guests", admin, &g)
		created := simgraph.CreatedDateTime(w.Users[4], simNow)
		if g.Total != 1 || g.Items[0].DisplayName != "Gus Guest" || g.Items[0].InvitedFrom != "contoso.example" ||
			g.Items[0].HomeDomain != "partner.example" || *g.Items[0].AgeDays != int(simNow.Sub(created)/(24*time.Hour)) {
			t.Fatalf("guests %+v", g.Items)
		}

		var rv directory.ReviewList
		f.get(t, "/api/v1/identity/access-reviews", admin, &rv)
		if rv.Total != 1 || rv.Items[0].Name != "Quarterly review" || rv.Items[0].Approved != 2 || rv.Items[0].Denied != 1 || rv.Items[0].Total != 3 {
			t.Fatalf("reviews %+v", rv.Items)
		}
		decided := names(rv.Items[0].Decisions, func(d directory.DecisionItem) string { return d.PrincipalName + ":" + d.Decision })
		if !slices.Equal(decided, []string{"Bea Old:Approve", "Gus Guest:Deny", "Rory Root:Approve"}) {
			t.Fatalf("decisions %v", decided)
		}
		// Rory's approval is the one finding: a role holder without MFA.
		// Bea's is none (she has MFA and holds no active role), nor is the
		// denied guest's.
		var rf directory.ReviewFindingList
		f.get(t, "/api/v1/identity/access-review-findings", admin, &rf)
		if rf.Total != 1 || len(rf.Items) != 1 || rf.Items[0].DisplayName != "Rory Root" || rf.Items[0].ReviewName != "Quarterly review" ||
			rf.Items[0].Finding != "approved_privileged_without_mfa" {
			t.Fatalf("access review findings %+v", rf)
		}
		f.get(t, "/api/v1/identity/access-review-findings?tenant_ids="+fabrikam.ID, admin, &rf)
		if rf.Total != 0 {
			t.Fatalf("fabrikam's access review findings %+v", rf)
		}
		f.get(t, "/api/v1/identity/access-reviews?status=Completed", admin, &rv)
		if rv.Total != 0 || len(rv.Items) != 0 {
			t.Fatalf("completed reviews %+v", rv)
		}
		// The review in progress ended on 1 November: overdue.
		f.get(t, "/api/v1/identity/access-reviews?overdue=true", admin, &rv)
		if rv.Total != 1 || !rv.Items[0].Overdue || rv.Items[0].EndsAt == nil || !rv.Items[0].EndsAt.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("overdue reviews %+v", rv)
		}
		f.get(t, "/api/v1/identity/access-reviews?overdue=true&tenant_ids="+fabrikam.ID, admin, &rv)
		if rv.Total != 0 {
			t.Fatalf("fabrikam's overdue reviews %+v", rv)
		}

		var dl directory.DeviceList
		f.get(t, "/api/v1/identity/devices?compliance_state=compliant&tenant_ids="+contoso.ID+"&limit=500", admin, &dl)
		if int64(dl.Total) != compliant || len(dl.Items) != int(compliant) {
			t.Fatalf("compliant devices %d, want %d", dl.Total, compliant)
		}

		f.nextDay(t)
		f.mustRun(t)
		var trend []directory.TrendDay
		f.get(t, "/api/v1/identity/mfa-trend?days=7", admin, &trend)
		if len(trend) != 2 || trend[0].Date != "2026-12-15" || trend[1].Date != "2026-12-16" || trend[1].Tenants != 2 ||
			trend[1].TotalUsers != 10 || trend[1].MemberUsers != 8 || trend[1].MemberMFAUsers != 5 || *trend[1].MFACoverage != 62.5 || *trend[1].AdminMFA != 75 {
			t.Fatalf("trend %+v", trend)
		}
		f.get(t, "/api/v1/identity/mfa-trend?days=7&tenant_ids="+contoso.ID, admin, &trend)
		if len(trend) != 2 || *trend[0].MFACoverage != 60 || *trend[0].AdminMFA != 66.67 {
			t.Fatalf("contoso trend %+v", trend)
		}
	})
}

var listRoutes = []string{"/api/v1/identity/users/without-mfa", "/api/v1/identity/privileged", "/api/v1/identity/disabled-with-roles",
	"/api/v1/identity/stale", "/api/v1/identity/guests", "/api/v1/identity/access-reviews", "/api/v1/identity/devices", "/api/v1/identity/risky-users",
	"/api/v1/identity/app-credentials", "/api/v1/identity/access-review-findings"}

var allRoutes = append([]string{"/api/v1/identity/summary", "/api/v1/identity/mfa-trend", "/api/v1/identity/conditional-access",
	"/api/v1/identity/global-admins"}, listRoutes...)

// TestBoundsAndScope: every bound is a 422 naming the parameter; a
// standard user sees only its tenant's records and naming another tenant
// is a 403.
func TestBoundsAndScope(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, identityWorld(), nil)
		f.mustRun(t)
		cases := []struct{ target, location string }{
			{"/api/v1/identity/stale?days=0", "query.days"},
			{"/api/v1/identity/stale?days=3651", "query.days"},
			{"/api/v1/identity/mfa-trend?days=6", "query.days"},
			{"/api/v1/identity/mfa-trend?days=366", "query.days"},
			{"/api/v1/identity/users/without-mfa?admins_only=maybe", "query.admins_only"},
			{"/api/v1/identity/access-reviews?status=Bogus", "query.status"},
			{"/api/v1/identity/devices?compliance_state=bogus", "query.compliance_state"},
			{"/api/v1/identity/risky-users?risk_level=severe", "query.risk_level"},
			{"/api/v1/identity/risky-users?risk_state=atrisk", "query.risk_state"},
			{"/api/v1/identity/risky-users?at_risk=maybe", "query.at_risk"},
			{"/api/v1/identity/app-credentials?within_days=366", "query.within_days"},
			{"/api/v1/identity/app-credentials?within_days=-1", "query.within_days"},
			{"/api/v1/identity/app-credentials?credential_type=key", "query.credential_type"},
		}
		for _, r := range listRoutes {
			cases = append(cases, []struct{ target, location string }{
				{r + "?limit=0", "query.limit"}, {r + "?limit=501", "query.limit"}, {r + "?offset=-1", "query.offset"},
				{r + "?offset=1000001", "query.offset"},
				{r + "?sort_by=bogus", "query.sort_by"}, {r + "?sort_order=up", "query.sort_order"},
			}...)
		}
		for _, r := range allRoutes {
			cases = append(cases, []struct{ target, location string }{
				{r + "?tenant_ids=" + tenantList(101), "query.tenant_ids"},
				{r + "?tenant_ids=" + strings.Repeat("t", 65), "query.tenant_ids[0]"},
			}...)
		}
		for _, c := range cases {
			code, body := f.do(t, c.target, admin)
			var p sdk.Problem
			_ = json.Unmarshal(body, &p)
			if code != http.StatusUnprocessableEntity || len(p.Errors) == 0 || p.Errors[0].Location != c.location {
				t.Errorf("GET %s: %d %s, want 422 naming %s", c.target, code, body, c.location)
			}
		}
		// On the bounds the request reaches the handler: a hundred of the
		// caller's tenants are served, and a 64-character id is checked
		// against the caller's tenants rather than refused as malformed.
		for _, r := range listRoutes {
			if code, body := f.do(t, r+"?offset=1000000", admin); code != http.StatusOK {
				t.Errorf("%s at the largest offset: %d %s", r, code, body)
			}
		}
		for _, r := range allRoutes {
			if code, body := f.do(t, r+"?tenant_ids="+tenantList(100), admin); code != http.StatusOK {
				t.Errorf("%s naming 100 tenants: %d %s", r, code, body)
			}
			if code, body := f.do(t, r+"?tenant_ids="+strings.Repeat("t", 64), admin); code != http.StatusForbidden {
				t.Errorf("%s naming an unknown 64-character tenant: %d %s, want 403", r, code, body)
			}
		}
		for _, r := range allRoutes {
			if code, body := f.do(t, r+"?tenant_ids="+fabrikam.ID, contosoer); code != http.StatusForbidden {
				t.Errorf("%s naming another tenant: %d %s", r, code, body)
			}
			code, body := f.do(t, r, contosoer)
			if code != http.StatusOK {
				t.Fatalf("%s: %d %s", r, code, body)
			}
			var generic any
			if err := json.Unmarshal(body, &generic); err != nil {
				t.Fatal(err)
			}
			if leaks(generic, fabrikam.ID) {
				t.Errorf("%s shows fabrikam to a contoso user: %s", r, body)
			}
		}
		var sum []directory.TenantSummary
		f.get(t, "/api/v1/identity/summary", contosoer, &sum)
		if len(sum) != 1 || sum[0].TenantID != contoso.ID {
			t.Fatalf("contoso user's summary %+v", sum)
		}
	})
}

// tenantList names contoso n times, comma-separated: a tenant_ids of n
// items the admin may see.
func tenantList(n int) string {
	return strings.TrimSuffix(strings.Repeat(contoso.ID+",", n), ",")
}

// leaks reports whether a decoded JSON value holds s anywhere.
func leaks(v any, s string) bool {
	switch x := v.(type) {
	case string:
		return x == s
	case []any:
		return slices.ContainsFunc(x, func(e any) bool { return leaks(e, s) })
	case map[string]any:
		for _, e := range x {
			if leaks(e, s) {
				return true
			}
		}
	}
	return false
}

// TestDataset: identity_mfa has each requested tenant's latest figures,
// its access reviews' findings and overdue reviews among them, and nothing
// of a tenant not requested.
func TestDataset(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		w := identityWorld()
		f := start(t, dialect, w, nil)
		read := func(tenants ...string) []directory.MFARecord {
			t.Helper()
			raw, err := f.harness.ReadDataset(context.Background(), directory.DatasetName, tenants, nil)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]directory.MFARecord, len(raw))
			for i, r := range raw {
				if err := json.Unmarshal(r, &out[i]); err != nil {
					t.Fatal(err)
				}
			}
			return out
		}
		if got := read(contoso.ID, fabrikam.ID); len(got) != 0 {
			t.Fatalf("before any sync: %+v", got)
		}
		f.mustRun(t)
		f.nextDay(t)
		f.mustRun(t)
		got := read(contoso.ID)
		all, compliant := worldDevices(w, contosoDir)
		if len(got) != 1 || got[0].TenantID != contoso.ID || got[0].Date != "2026-12-16" || got[0].TotalUsers != 7 || got[0].AdminUsers != 3 ||
			got[0].MemberUsers != 5 || got[0].MemberMFAUsers != 3 || *got[0].MFACoverage != 60 || *got[0].AdminMFA != 66.67 || got[0].Devices != all ||
			(all > 0 && *got[0].DeviceCompliance != pct(compliant, all)) {
			t.Fatalf("contoso's record %+v", got)
		}
		// Contoso's review approved Rory, a role holder without MFA, and
		// ended on 1 November in progress; Fabrikam has no review.
		if n, m := got[0].AccessReviewFindings, got[0].OverdueAccessReviews; n == nil || *n != 1 || m == nil || *m != 1 {
			t.Fatalf("contoso's access review figures %v %v", n, m)
		}
		if got := read(contoso.ID, fabrikam.ID); len(got) != 2 || got[1].TenantID != fabrikam.ID || *got[1].MFACoverage != 66.67 ||
			got[1].AccessReviewFindings == nil || *got[1].AccessReviewFindings != 0 || got[1].OverdueAccessReviews == nil || *got[1].OverdueAccessReviews != 0 {
			t.Fatalf("both tenants' records %+v", got)
		}
		if got := read("t-other"); len(got) != 0 {
			t.Fatalf("a tenant without data: %+v", got)
		}
	})
}
