package world

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// demoToday is mid-afternoon so tests also show that the time of day does
// not matter.
var demoToday = time.Date(2026, time.March, 14, 15, 30, 0, 0, time.UTC)

var guidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func mustJSON(t *testing.T, w *World) []byte {
	t.Helper()
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func dayOffset(t time.Time, offset int) string { return t.AddDate(0, 0, offset).Format(DateLayout) }

func TestDemoIsDeterministic(t *testing.T) {
	a := mustJSON(t, Demo(7, demoToday))
	if !bytes.Equal(a, mustJSON(t, Demo(7, demoToday))) {
		t.Fatal("the same seed and day gave different worlds")
	}
	midnight := time.Date(2026, time.March, 14, 0, 0, 0, 0, time.UTC)
	if !bytes.Equal(a, mustJSON(t, Demo(7, midnight))) {
		t.Fatal("the time of day changed the world")
	}
	if bytes.Equal(a, mustJSON(t, Demo(8, demoToday))) {
		t.Fatal("different seeds gave the same world")
	}
}

func TestDemoValidatesAndRoundTrips(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		if err := Demo(seed, demoToday).Validate(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	// Written to a file and loaded back, the demo world is the same value:
	// its properties already have the shapes JSON decoding produces.
	w := Demo(1, demoToday)
	back, err := Parse(mustJSON(t, w))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, w) {
		t.Fatal("the demo world changed through JSON")
	}
}

func TestDemoMovesWithTime(t *testing.T) {
	before, after := Demo(5, demoToday), Demo(5, demoToday.AddDate(0, 0, 1))
	ids := func(w *World) []string {
		var out []string
		for _, r := range w.Resources {
			out = append(out, r.ID)
		}
		return out
	}
	if !reflect.DeepEqual(before.Tenants, after.Tenants) || !slices.Equal(ids(before), ids(after)) {
		t.Fatal("the estate changed from one day to the next")
	}
	shifted(t, "costs", before.Costs, after.Costs, 365, func(c Cost) string { return c.Date })
	shifted(t, "reservations", before.Reservations, after.Reservations, 90, func(r Reservation) string { return r.Date })
}

// shifted checks that a dated list moved on by one day: the oldest day's
// rows dropped, the new day's added, and every row between unchanged.
func shifted[T comparable](t *testing.T, list string, old, next []T, days int, date func(T) string) {
	t.Helper()
	if len(old) == 0 || len(old) != len(next) || len(old)%days != 0 {
		t.Fatalf("%s: %d rows, then %d, for %d days", list, len(old), len(next), days)
	}
	n := len(old) / days
	oldest, newest := dayOffset(demoToday, 1-days), dayOffset(demoToday, 1)
	for _, r := range old[:n] {
		if date(r) != oldest {
			t.Fatalf("%s: a row of the oldest day is dated %s, want %s", list, date(r), oldest)
		}
	}
	if date(old[n]) == oldest {
		t.Fatalf("%s: the oldest day has more than %d rows", list, n)
	}
	for _, r := range next[len(next)-n:] {
		if date(r) != newest {
			t.Fatalf("%s: a row of the new day is dated %s, want %s", list, date(r), newest)
		}
	}
	if !slices.Equal(old[n:], next[:len(next)-n]) {
		t.Fatalf("%s: history changed when the day moved on", list)
	}
}

// TestDemoContract counts, for a few seeds, everything the demo world
// promises; the counts do not depend on the seed.
func TestDemoContract(t *testing.T) {
	for _, seed := range []int64{1, 42, -9} {
		t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
			w := Demo(seed, demoToday)
			t.Run("tenants", func(t *testing.T) { checkTenants(t, w) })
			t.Run("costs", func(t *testing.T) { checkCosts(t, w) })
			t.Run("reservations", func(t *testing.T) { checkReservations(t, w) })
			t.Run("policy states", func(t *testing.T) { checkPolicyStates(t, w) })
			t.Run("resources", func(t *testing.T) { checkResources(t, w) })
			t.Run("quotas", func(t *testing.T) { checkQuotas(t, w) })
			t.Run("users", func(t *testing.T) { checkUsers(t, w) })
			t.Run("access reviews", func(t *testing.T) { checkAccessReviews(t, w) })
			t.Run("dns", func(t *testing.T) { checkDNS(t, w) })
			t.Run("mailboxes", func(t *testing.T) { checkMailboxes(t, w) })
			t.Run("defender", func(t *testing.T) { checkDefender(t, w) })
		})
	}
}

// checkDefender: each assessment is of a resource of the world, under a
// policy its policy states use, healthy exactly when that policy's state
// of the resource is compliant; both statuses occur; each subscription
// with assessments has a secure score whose controls count its
// assessments and score within their maxima.
func checkDefender(t *testing.T, w *World) {
	states := map[string]string{}
	for _, s := range w.PolicyStates {
		states[s.PolicyDefinitionID+" "+s.ResourceID] = s.ComplianceState
	}
	statuses := map[string]int{}
	perSub := map[string]int{}
	for _, a := range w.SecurityAssessments {
		state, ok := states[a.PolicyDefinitionID+" "+a.ResourceID]
		if !ok || (state == "Compliant") != (a.Status == "Healthy") {
			t.Errorf("assessment %s of %s is %s, its policy state %q", a.DisplayName, a.ResourceID, a.Status, state)
		}
		statuses[a.Status]++
		perSub[a.SubscriptionID]++
	}
	if statuses["Healthy"] == 0 || statuses["Unhealthy"] == 0 {
		t.Errorf("assessments by status %v, want both", statuses)
	}
	if len(w.SecureScores) != len(perSub) {
		t.Errorf("%d secure scores for %d subscriptions with assessments", len(w.SecureScores), len(perSub))
	}
	for _, s := range w.SecureScores {
		n := 0
		for _, c := range s.Controls {
			n += c.HealthyResources + c.UnhealthyResources
			if c.Current < 0 || c.Current > float64(c.Max) {
				t.Errorf("%s's control %s scores %v of %d", s.SubscriptionID, c.DisplayName, c.Current, c.Max)
			}
		}
		if n != perSub[s.SubscriptionID] {
			t.Errorf("%s's controls count %d resources, its assessments are %d", s.SubscriptionID, n, perSub[s.SubscriptionID])
		}
	}
}

func checkTenants(t *testing.T, w *World) {
	brands := map[string]bool{}
	notDelegated := 0
	for _, tn := range w.Tenants {
		brands[strings.TrimSuffix(tn.Name, " Dev")] = true
		if !tn.Delegated {
			notDelegated++
		}
		if !guidRE.MatchString(tn.DirectoryTenantID) {
			t.Errorf("%s: directory id %q is not a GUID", tn.Name, tn.DirectoryTenantID)
		}
		if n := len(tn.Subscriptions); n < 1 || n > 3 {
			t.Errorf("%s: %d subscriptions", tn.Name, n)
		}
		for _, s := range tn.Subscriptions {
			if !guidRE.MatchString(s.ID) || s.Name == "" {
				t.Errorf("%s: subscription %+v", tn.Name, s)
			}
		}
		if len(tn.AccessGroups) == 0 || !strings.HasPrefix(tn.AccessGroups[0], "grp-") {
			t.Errorf("%s: access groups %v", tn.Name, tn.AccessGroups)
		}
		if len(tn.Domains) == 0 {
			t.Errorf("%s: no domains", tn.Name)
		}
		for _, d := range tn.Domains {
			if !strings.HasSuffix(d, ".example") {
				t.Errorf("%s: domain %q", tn.Name, d)
			}
		}
	}
	if len(brands) < 3 || len(w.Tenants) < 5 {
		t.Errorf("%d brands, %d tenants; want at least 3 and 5", len(brands), len(w.Tenants))
	}
	if notDelegated != 1 {
		t.Errorf("%d tenants not delegated, want 1", notDelegated)
	}
}

// subscriptions maps each subscription id to its tenant.
func subscriptions(w *World) map[string]Tenant {
	out := map[string]Tenant{}
	for _, tn := range w.Tenants {
		for _, s := range tn.Subscriptions {
			out[s.ID] = tn
		}
	}
	return out
}

func checkCosts(t *testing.T, w *World) {
	type subDay struct{ sub, date string }
	totals := map[subDay]float64{}
	services := map[string]bool{}
	for _, c := range w.Costs {
		totals[subDay{c.SubscriptionID, c.Date}] += c.Cost
		services[c.Service] = true
		if c.Currency != "USD" || c.Cost <= 0 || math.Round(c.Cost*100)/100 != c.Cost || c.ResourceGroup == "" {
			t.Fatalf("cost row %+v", c)
		}
	}
	if len(services) < 6 {
		t.Errorf("%d services", len(services))
	}
	first, last := dayOffset(demoToday, -364), dayOffset(demoToday, 0)
	for sub := range subscriptions(w) {
		var weekday, weekend []float64
		days := 0
		for date, d := demoToday.AddDate(0, 0, -364), 0; d < 365; date, d = date.AddDate(0, 0, 1), d+1 {
			total, ok := totals[subDay{sub, date.Format(DateLayout)}]
			if !ok {
				continue
			}
			days++
			if wd := date.Weekday(); wd == time.Saturday || wd == time.Sunday {
				weekend = append(weekend, total)
			} else {
				weekday = append(weekday, total)
			}
		}
		if days != 365 {
			t.Errorf("subscription %s: costs on %d of the 365 days %s..%s", sub, days, first, last)
		}
		if mean(weekend) >= mean(weekday) {
			t.Errorf("subscription %s: weekend mean %.2f is not below the weekday mean %.2f", sub, mean(weekend), mean(weekday))
		}
	}
	for k := range totals {
		if k.date < first || k.date > last {
			t.Errorf("a cost dated %s, outside %s..%s", k.date, first, last)
		}
	}
	checkOrphanCosts(t, w)
	spikes := costSpikes(w.Costs)
	recent := slices.ContainsFunc(spikes, func(d string) bool { return d >= dayOffset(demoToday, -29) })
	// A handful: enough to find, far too few to be noise.
	if len(spikes) < 4 || len(spikes) > 25 || !recent {
		t.Errorf("cost spikes on %v; want 4 to 25, one in the last 30 days", spikes)
	}
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// costSpikes finds anomalies as a reader of the data would: a day costing
// at least twice the same series' cost a week before, counting a run of
// such days once. It returns the first day of each.
func costSpikes(costs []Cost) []string {
	// A series is a subscription's service in a resource group: the cost
	// of its resources summed, as Cost Management groups by service.
	type key struct{ sub, service, rg string }
	series := map[key]map[string]float64{}
	for _, c := range costs {
		k := key{c.SubscriptionID, c.Service, c.ResourceGroup}
		if series[k] == nil {
			series[k] = map[string]float64{}
		}
		series[k][c.Date] += c.Cost
	}
	var out []string
	for _, days := range series {
		dates := slices.Sorted(maps.Keys(days))
		previous := false
		for i := 7; i < len(dates); i++ {
			spike := days[dates[i]] >= 2*days[dates[i-7]]
			if spike && !previous {
				out = append(out, dates[i])
			}
			previous = spike
		}
	}
	slices.Sort(out)
	return out
}

func checkReservations(t *testing.T, w *World) {
	var billed []Tenant
	for _, tn := range w.Tenants {
		if tn.BillingAccountID != nil {
			billed = append(billed, tn)
		}
	}
	if len(billed) != 1 {
		t.Fatalf("%d tenants with a billing account, want 1", len(billed))
	}
	type use struct{ reserved, used float64 }
	byID := map[string]*use{}
	dates := map[string]bool{}
	for _, r := range w.Reservations {
		if r.BillingAccountID != *billed[0].BillingAccountID || r.SKU == "" || r.UsedHours > r.ReservedHours {
			t.Fatalf("reservation row %+v", r)
		}
		if byID[r.ReservationID] == nil {
			byID[r.ReservationID] = &use{}
		}
		byID[r.ReservationID].reserved += r.ReservedHours
		byID[r.ReservationID].used += r.UsedHours
		dates[r.Date] = true
	}
	under := 0
	for _, u := range byID {
		if u.used < 0.7*u.reserved {
			under++
		}
	}
	if len(byID) < 3 || under == 0 || under == len(byID) {
		t.Errorf("%d reservations, %d under-utilised; want several, some under-utilised", len(byID), under)
	}
	if len(dates) != 90 || !dates[dayOffset(demoToday, 0)] || !dates[dayOffset(demoToday, -89)] {
		t.Errorf("reservation rows on %d days, want the 90 ending today", len(dates))
	}
	// Every reservation was bought; one expires within 30 days, another
	// within 90 but not 30.
	expiring := map[string]int{}
	for _, p := range w.ReservationPurchases {
		if byID[p.ReservationID] == nil || p.Amount <= 0 || p.InstanceFlexibilityRatio <= 0 {
			t.Errorf("purchase %+v", p)
		}
		delete(byID, p.ReservationID)
		switch e := p.ExpiryDate(); {
		case e <= dayOffset(demoToday, 0):
			t.Errorf("purchase %+v expired on %s", p, e)
		case e <= dayOffset(demoToday, 30):
			expiring["30"]++
		case e <= dayOffset(demoToday, 90):
			expiring["90"]++
		}
	}
	if len(byID) != 0 || expiring["30"] != 1 || expiring["90"] != 1 {
		t.Errorf("reservations without a purchase %v; expiring %v, want one within 30 days and one within 90", byID, expiring)
	}
	if len(w.ReservationRecommendations) == 0 {
		t.Error("no reservation recommendations")
	}
}

var (
	nistDotted     = regexp.MustCompile(`^NIST_CSF_v2\.0_[A-Z]{2}\.[A-Z]{2}_\d{2}$`)
	nistUnderscore = regexp.MustCompile(`^NIST_CSF_v2\.0_[A-Z]{2}_[A-Z]{2}_\d{2}$`)
	definitionRE   = regexp.MustCompile(`^/providers/Microsoft\.Authorization/policyDefinitions/[0-9a-f-]{36}$`)
)

func checkPolicyStates(t *testing.T, w *World) {
	targets := map[string]bool{}
	for _, r := range w.Resources {
		targets[r.ID] = true
	}
	for sub := range subscriptions(w) {
		targets["/subscriptions/"+sub] = true
	}
	count := map[string]int{}
	perSub := map[string]int{}
	for _, s := range w.PolicyStates {
		perSub[s.SubscriptionID]++
		count[s.ComplianceState]++
		count[s.Severity]++
		count[s.Category]++
		if !definitionRE.MatchString(s.PolicyDefinitionID) || !targets[s.ResourceID] || !strings.HasPrefix(s.Timestamp, dayOffset(demoToday, 0)+"T") {
			t.Fatalf("policy state %+v", s)
		}
		for _, g := range s.GroupNames {
			switch {
			case strings.HasPrefix(g, "SOC_2_"):
				count["soc2"]++
			case nistDotted.MatchString(g):
				count["nist dotted"]++
			case nistUnderscore.MatchString(g):
				count["nist underscore"]++
			default:
				t.Errorf("unexpected group name %q", g)
			}
		}
		if len(s.GroupNames) == 0 {
			count["no groups"]++
			for _, kw := range []string{"Secure transfer", "MFA", "diagnostic"} {
				if strings.Contains(s.PolicyName, kw) {
					count[kw]++
				}
			}
		}
	}
	for _, k := range []string{"soc2", "nist dotted", "nist underscore", "no groups", "Secure transfer", "MFA", "diagnostic",
		"High", "Medium", "Low", "Security Center", "Storage", "Identity", "Monitoring", "Network", "NonCompliant"} {
		if count[k] == 0 {
			t.Errorf("no policy states with %s", k)
		}
	}
	if count["Compliant"] <= count["NonCompliant"] {
		t.Errorf("%d compliant and %d non-compliant states; want mostly compliant", count["Compliant"], count["NonCompliant"])
	}
	for sub := range subscriptions(w) {
		if perSub[sub] < 12 {
			t.Errorf("subscription %s: %d policy states", sub, perSub[sub])
		}
	}
}

func checkResources(t *testing.T, w *World) {
	count := map[string]int{}
	seen := map[string]bool{}
	for _, r := range w.Resources {
		if seen[r.ID] {
			t.Errorf("resource %s twice", r.ID)
		}
		seen[r.ID] = true
		if !strings.HasPrefix(r.ID, "/subscriptions/"+r.SubscriptionID+"/resourceGroups/") || !strings.HasSuffix(r.ID, "/"+r.Name) {
			t.Fatalf("resource id %q of %s", r.ID, r.SubscriptionID)
		}
		if !strings.Contains(strings.ToLower(r.ID), "/providers/"+r.Type+"/") {
			t.Fatalf("resource %s has type %s", r.ID, r.Type)
		}
		if r.Tags["env"] == "" || r.Tags["cost-center"] == "" {
			t.Errorf("resource %s tags %v", r.ID, r.Tags)
		}
		if r.Tags["owner"] == "" {
			count["no owner"]++
		}
		count[r.Type]++
		count[r.Location]++
		switch r.Type {
		case "microsoft.compute/disks":
			count[r.Type+" "+r.Properties["diskState"].(string)]++
		case "microsoft.network/publicipaddresses":
			if r.Properties["ipConfiguration"] == nil {
				count["unassociated ip"]++
			}
		case "microsoft.storage/storageaccounts":
			count["https "+strconv.FormatBool(r.Properties["supportsHttpsTrafficOnly"].(bool))]++
			if r.Properties["minimumTlsVersion"] == nil {
				t.Errorf("storage account %s without minimumTlsVersion", r.Name)
			}
		}
	}
	for _, k := range []string{"microsoft.compute/virtualmachines", "microsoft.compute/disks Attached", "microsoft.compute/disks Unattached",
		"unassociated ip", "https true", "https false", "microsoft.keyvault/vaults", "microsoft.sql/servers",
		"microsoft.network/networksecuritygroups", "no owner", "eastus", "westeurope"} {
		if count[k] == 0 {
			t.Errorf("no resources with %s", k)
		}
	}
	if count["eastus"]+count["westeurope"] != len(w.Resources) {
		t.Error("resources outside eastus and westeurope")
	}
}

func checkQuotas(t *testing.T, w *World) {
	pcts := map[float64]bool{}
	zero, above, below, westeurope := 0, 0, 0, 0
	type where struct{ sub, provider string }
	eastus := map[where]bool{}
	for _, q := range w.Quotas {
		if q.Location == "eastus" {
			eastus[where{q.SubscriptionID, q.Provider}] = true
		} else {
			westeurope++
		}
		if q.Limit == 0 {
			if q.CurrentValue == 0 {
				zero++
			}
			continue
		}
		pct := q.CurrentValue / q.Limit * 100
		pcts[math.Round(pct*100)/100] = true
		switch {
		case pct > 90:
			above++
		case pct < 50:
			below++
		}
	}
	for _, edge := range []float64{74.99, 75, 89.99, 90} {
		if !pcts[edge] {
			t.Errorf("no quota at %v %%", edge)
		}
	}
	if zero != 1 || above < 2 || below < 10 || westeurope == 0 {
		t.Errorf("%d zero limits, %d above 90 %%, %d well below, %d in westeurope", zero, above, below, westeurope)
	}
	for sub := range subscriptions(w) {
		if !eastus[where{sub, "compute"}] || !eastus[where{sub, "network"}] {
			t.Errorf("subscription %s lacks eastus compute or network quotas", sub)
		}
	}
}

var mfaMethods = []string{"microsoftAuthenticator", "phoneAuthentication", "fido2", "softwareOneTimePasscode"}

func checkUsers(t *testing.T, w *World) {
	tenants := map[string]Tenant{}
	for _, tn := range w.Tenants {
		tenants[tn.DirectoryTenantID] = tn
	}
	perTenant := map[string]int{}
	count := map[string]int{}
	stale := dayOffset(demoToday, -90)
	for _, u := range w.Users {
		tn := tenants[u.DirectoryTenantID]
		perTenant[tn.Name]++
		domain := u.Email[strings.Index(u.Email, "@")+1:]
		if !strings.HasSuffix(domain, ".example") {
			t.Errorf("user %s outside .example", u.Email)
		}
		if u.UserType == "Guest" {
			count["guest"]++
			if slices.Contains(tn.Domains, domain) {
				t.Errorf("guest %s at the tenant's own domain", u.Email)
			}
		} else if domain != tn.Domains[0] {
			t.Errorf("member %s not at %s", u.Email, tn.Domains[0])
		}
		if slices.Contains(u.Roles, "Governance.Admin") {
			count["admin"]++
			if tn.Name != w.Tenants[0].Name {
				t.Errorf("admin %s in %s", u.Email, tn.Name)
			}
		}
		if !u.MFARegistered {
			count["no mfa"]++
			if u.IsPrivileged {
				count["privileged without mfa"]++
			}
			if len(u.MFAMethods) != 0 {
				t.Errorf("user %s has methods %v without MFA", u.Email, u.MFAMethods)
			}
		} else if len(u.MFAMethods) == 0 {
			t.Errorf("user %s registered for MFA without methods", u.Email)
		}
		for _, m := range u.MFAMethods {
			count[m]++
		}
		if u.LastSignIn < stale {
			count["stale"]++
		}
		if !*u.AccountEnabled {
			count["disabled"]++
		}
		if slices.Contains(u.Groups, tn.AccessGroups[0]) {
			count["with access"]++
		}
	}
	for _, tn := range w.Tenants {
		if n := perTenant[tn.Name]; n < 8 || n > 15 {
			t.Errorf("%s has %d users", tn.Name, n)
		}
	}
	for _, k := range append([]string{"admin", "guest", "no mfa", "privileged without mfa", "stale", "disabled", "with access"}, mfaMethods...) {
		if count[k] == 0 {
			t.Errorf("no users with %s", k)
		}
	}

	known := map[string]string{DemoAdmin: "Contoso Retail", DemoContosoUser: "Contoso Retail", DemoFabrikamUser: "Fabrikam Foods", DemoNorthwindUser: "Northwind Travel"}
	for _, u := range w.Users {
		name, ok := known[u.Email]
		if !ok {
			continue
		}
		delete(known, u.Email)
		tn := tenants[u.DirectoryTenantID]
		if tn.Name != name || !slices.Contains(u.Groups, tn.AccessGroups[0]) || !u.MFARegistered || !*u.AccountEnabled ||
			slices.Contains(u.Roles, "Governance.Admin") != (u.Email == DemoAdmin) {
			t.Errorf("well-known user %+v in %s", u, tn.Name)
		}
	}
	if len(known) != 0 {
		t.Errorf("well-known users missing: %v", known)
	}
}

func checkAccessReviews(t *testing.T, w *World) {
	home := map[string]string{}
	for _, u := range w.Users {
		home[u.Email] = u.DirectoryTenantID
	}
	perTenant := map[string]int{}
	statuses := map[string]bool{}
	for _, r := range w.AccessReviews {
		perTenant[r.DirectoryTenantID]++
		statuses[r.Status] = true
		if len(r.Decisions) == 0 {
			t.Errorf("review %s has no decisions", r.Name)
		}
		for _, d := range r.Decisions {
			if home[d.User] != r.DirectoryTenantID {
				t.Errorf("review %s decides on %s of another tenant", r.Name, d.User)
			}
		}
	}
	for _, tn := range w.Tenants {
		if perTenant[tn.DirectoryTenantID] < 2 {
			t.Errorf("%s has %d access reviews", tn.Name, perTenant[tn.DirectoryTenantID])
		}
	}
	for _, s := range []string{"InProgress", "Completed", "NotStarted"} {
		if !statuses[s] {
			t.Errorf("no %s access review", s)
		}
	}

	// Fabrikam Foods' Global Administrator review approves a privileged
	// user without MFA; Contoso Retail's finance review, in progress ten
	// days after its end, is the one review that ended unfinished.
	users := map[string]User{}
	for _, u := range w.Users {
		users[u.Email] = u
	}
	tenantOf := map[string]string{}
	for _, tn := range w.Tenants {
		tenantOf[tn.DirectoryTenantID] = tn.Name
	}
	var findings, overdue []string
	for _, r := range w.AccessReviews {
		if r.EndDate != "" && r.EndDate < demoToday.Format(DateLayout) && r.Status != "Completed" {
			overdue = append(overdue, tenantOf[r.DirectoryTenantID]+": "+r.Name+" ended "+r.EndDate)
		}
		if r.Name != "Global Administrator access review" {
			continue
		}
		for _, d := range r.Decisions {
			if u := users[d.User]; d.Decision == "Approve" && u.IsPrivileged && !u.MFARegistered {
				findings = append(findings, tenantOf[r.DirectoryTenantID]+": "+u.Email)
			}
		}
	}
	if len(findings) != 1 || !strings.HasPrefix(findings[0], "Fabrikam Foods: ") {
		t.Errorf("the Global Administrator review's approvals without MFA: %v", findings)
	}
	if want := "Contoso Retail: Finance application owners review ended " + demoToday.AddDate(0, 0, -10).Format(DateLayout); !slices.Equal(overdue, []string{want}) {
		t.Errorf("overdue reviews %v, want [%s]", overdue, want)
	}
}

// dmarcTags parses a DMARC record's tags.
func dmarcTags(v string) map[string]string {
	tags := map[string]string{}
	for _, part := range strings.Split(v, ";") {
		if k, val, ok := strings.Cut(strings.TrimSpace(part), "="); ok {
			tags[k] = val
		}
	}
	return tags
}

func checkDNS(t *testing.T, w *World) {
	records := map[string]DNSRecord{}
	for _, r := range w.DNS {
		if r.Type == "PTR" {
			// A report source's reverse name, by its address.
			if _, err := netip.ParseAddr(r.Name); err != nil || r.Value == "" {
				t.Errorf("PTR record %s → %q", r.Name, r.Value)
			}
			continue
		}
		if !strings.HasSuffix(r.Name, ".example") {
			t.Errorf("record %s outside .example", r.Name)
		}
		records[r.Name] = r
	}
	count := map[string]int{}
	for _, tn := range w.Tenants {
		for _, d := range tn.Domains {
			spf := records[d].Value
			_, dkim := records["selector1._domainkey."+d]
			_, dkim2 := records["selector2._domainkey."+d]
			if dkim != dkim2 {
				t.Errorf("%s has one DKIM selector of two", d)
			}
			if !dkim {
				count["no dkim"]++
			}
			dmarc, ok := records["_dmarc."+d]
			if !ok {
				count["missing"]++
				continue
			}
			tags := dmarcTags(dmarc.Value)
			pct := tags["pct"]
			switch {
			case tags["p"] == "none" || (pct != "" && pct != "100") || strings.HasSuffix(spf, "~all"):
				count["weak"]++
			case tags["p"] == "reject" && tags["rua"] != "" && dkim && strings.HasSuffix(spf, "-all"):
				count["strong"]++
			}
		}
	}
	for _, k := range []string{"strong", "weak", "missing", "no dkim"} {
		if count[k] == 0 {
			t.Errorf("no domain with %s mail authentication", k)
		}
	}
}

func BenchmarkDemo(b *testing.B) {
	for b.Loop() {
		Demo(1, demoToday)
	}
}

// TestDemoSpikes: DemoSpikes names exactly the rows Demo spiked. Each
// named row costs its factor times its series' usual level (the same
// weekday a week either side, which no other spike touches), within the
// series' noise; every 24-day cycle has one spike of one or two days; and
// a reader's independent search for doubled days finds the same dates.
func TestDemoSpikes(t *testing.T) {
	w := Demo(3, demoToday)
	spikes := DemoSpikes(3, demoToday)
	type key struct{ sub, service, rg, date string }
	cost := map[key]float64{}
	for _, c := range w.Costs {
		cost[key{c.SubscriptionID, c.Service, c.ResourceGroup, c.Date}] += c.Cost
	}
	spiked := map[key]bool{}
	for _, s := range spikes {
		spiked[key{s.SubscriptionID, s.Service, s.ResourceGroup, s.Date}] = true
	}
	for _, s := range spikes {
		at := mustDate(t, s.Date)
		if s.Factor < 3 || s.Factor >= 8 {
			t.Errorf("spike %+v: factor outside 3–8", s)
		}
		got, ok := cost[key{s.SubscriptionID, s.Service, s.ResourceGroup, s.Date}]
		if !ok {
			t.Errorf("spike %+v names no cost row", s)
			continue
		}
		for _, offset := range []int{-7, 7} {
			k := key{s.SubscriptionID, s.Service, s.ResourceGroup, dayOffset(at, offset)}
			usual, ok := cost[k]
			if !ok || spiked[k] {
				continue
			}
			// ±8 % noise on either day and a week of trend.
			if ratio := got / s.Factor / usual; ratio < 0.8 || ratio > 1.25 {
				t.Errorf("spike %+v: %.2f is %.2f times the factor of the usual %.2f", s, got, ratio, usual)
			}
		}
	}
	cycles := map[int64][]string{}
	for _, s := range spikes {
		c := mustDate(t, s.Date).Unix() / secondsPerDay / anomalyCycle
		cycles[c] = append(cycles[c], s.Date)
	}
	for c, dates := range cycles {
		if len(dates) > 2 {
			t.Errorf("cycle %d spikes on %v", c, dates)
		}
	}
	if len(cycles) < 365/anomalyCycle {
		t.Errorf("%d cycles with a spike in a year, want at least %d", len(cycles), 365/anomalyCycle)
	}
	var firstDays []string
	for i, s := range spikes {
		if i == 0 || dayOffset(mustDate(t, spikes[i-1].Date), 1) != s.Date {
			firstDays = append(firstDays, s.Date)
		}
	}
	for _, d := range costSpikes(w.Costs) {
		if !slices.Contains(firstDays, d) {
			t.Errorf("a doubled day on %s that DemoSpikes does not name (it names %v)", d, firstDays)
		}
	}
}

func mustDate(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(DateLayout, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// checkOrphanCosts: every unattached disk and unassociated public IP has
// a cost of its own each of the 365 days; every cost naming a resource
// names one of its subscription and resource group that bills (no
// attached disk, NIC or NSG, no deallocated machine); and each resource
// that bills, apart from orphans, has costs under one service only.
func checkOrphanCosts(t *testing.T, w *World) {
	orphans, byID := map[string]Resource{}, map[string]Resource{}
	for _, r := range w.Resources {
		byID[r.ID] = r
		if (r.Type == "microsoft.compute/disks" && r.Properties["diskState"] == "Unattached") ||
			(r.Type == "microsoft.network/publicipaddresses" && r.Properties["ipConfiguration"] == nil) {
			orphans[r.ID] = r
		}
	}
	billing := map[string]bool{"microsoft.compute/virtualmachines": true, "microsoft.storage/storageaccounts": true,
		"microsoft.network/virtualnetworks": true, "microsoft.keyvault/vaults": true, "microsoft.sql/servers": true,
		"microsoft.containerservice/managedclusters": true}
	days, services := map[string]int{}, map[string]map[string]bool{}
	for _, c := range w.Costs {
		if c.ResourceID == "" {
			continue
		}
		r, ok := byID[c.ResourceID]
		_, orphan := orphans[c.ResourceID]
		if !ok || c.SubscriptionID != r.SubscriptionID || !strings.Contains(r.ID, "/resourceGroups/"+c.ResourceGroup+"/") ||
			!(orphan || billing[r.Type]) || (r.Type == "microsoft.compute/virtualmachines" && vmWeight(r) == 0) {
			t.Fatalf("cost row %+v names no resource of its subscription and group that bills", c)
		}
		if orphan {
			days[c.ResourceID]++
		}
		if services[c.ResourceID] == nil {
			services[c.ResourceID] = map[string]bool{}
		}
		services[c.ResourceID][c.Service] = true
	}
	for id, s := range services {
		if len(s) != 1 {
			t.Errorf("resource %s bills under %v", id, slices.Sorted(maps.Keys(s)))
		}
	}
	if len(orphans) == 0 {
		t.Fatal("no orphans")
	}
	for id := range orphans {
		if days[id] != 365 {
			t.Errorf("orphan %s has costs on %d days, want 365", id, days[id])
		}
	}
}

// TestSplit: a series' cents are shared by weight and none is lost or
// made: whole parts first, the cents left over to the largest fractions,
// the earlier share on a tie.
func TestSplit(t *testing.T) {
	w := func(ws ...float64) []demoShare {
		out := make([]demoShare, len(ws))
		for i, x := range ws {
			out[i] = demoShare{id: strconv.Itoa(i), weight: x}
		}
		return out
	}
	for _, c := range []struct {
		cents  int64
		shares []demoShare
		want   []int64
	}{
		{100, w(1, 1, 1), []int64{34, 33, 33}},
		{1, w(1, 1), []int64{1, 0}},
		{0, w(2, 1), []int64{0, 0}},
		{1000, w(2.6, 0.8), []int64{765, 235}},
		{7, w(1), []int64{7}},
	} {
		if got := split(c.cents, c.shares); !slices.Equal(got, c.want) {
			t.Errorf("split(%d, %v) = %v, want %v", c.cents, c.shares, got, c.want)
		}
	}
	for cents := int64(0); cents < 2000; cents += 37 {
		parts := split(cents, w(0.61, 1.39, 0.8, 2.6))
		sum := int64(0)
		for _, p := range parts {
			sum += p
		}
		if sum != cents {
			t.Fatalf("split(%d) = %v sums to %d", cents, parts, sum)
		}
	}
}

// TestDemoResourceCosts: a running machine's cost is named after it every
// day; a deallocated one costs nothing; Azure Monitor names no resource.
func TestDemoResourceCosts(t *testing.T) {
	w := Demo(3, demoToday)
	days := map[string]int{}
	monitor := 0
	for _, c := range w.Costs {
		days[c.ResourceID]++
		if c.Service == "Azure Monitor" && c.ResourceID != "" {
			t.Fatalf("Azure Monitor row %+v names a resource", c)
		}
		if c.Service == "Azure Monitor" {
			monitor++
		}
	}
	running, deallocated := 0, 0
	for _, r := range w.Resources {
		if r.Type != "microsoft.compute/virtualmachines" {
			continue
		}
		if vmWeight(r) == 0 {
			deallocated++
			if days[r.ID] != 0 {
				t.Errorf("deallocated %s has costs on %d days", r.Name, days[r.ID])
			}
			continue
		}
		running++
		if days[r.ID] != 365 {
			t.Errorf("running %s has costs on %d days, want 365", r.Name, days[r.ID])
		}
	}
	if running == 0 || deallocated == 0 || monitor == 0 {
		t.Errorf("%d running and %d deallocated machines, %d Azure Monitor rows: the demo should show each", running, deallocated, monitor)
	}
}

// TestDemoExchangeRates: EUR, GBP and JPY against USD on each weekday of
// the year to today and on no weekend; a day's rates do not change as the
// world moves on a day.
func TestDemoExchangeRates(t *testing.T) {
	before, after := Demo(1, demoToday), Demo(1, demoToday.AddDate(0, 0, 1))
	x := before.ExchangeRates
	if x == nil || x.Base != "USD" {
		t.Fatalf("exchange rates %+v", x)
	}
	weekdays := 0
	for d := -364; d <= 0; d++ {
		day := demoToday.AddDate(0, 0, d)
		rates, ok := x.Rates[day.Format(DateLayout)]
		if wd := day.Weekday(); wd == time.Saturday || wd == time.Sunday {
			if ok {
				t.Errorf("rates on %s, a %s", day.Format(DateLayout), wd)
			}
			continue
		}
		weekdays++
		if len(rates) != 3 || rates["EUR"] < 0.85 || rates["EUR"] > 1 || rates["GBP"] < 0.7 || rates["GBP"] > 0.85 || rates["JPY"] < 140 || rates["JPY"] > 160 {
			t.Errorf("rates on %s: %v", day.Format(DateLayout), rates)
		}
		if moved, ok := after.ExchangeRates.Rates[day.Format(DateLayout)]; d > -364 && (!ok || !maps.Equal(moved, rates)) {
			t.Errorf("the rates of %s changed a day later: %v, then %v", day.Format(DateLayout), rates, moved)
		}
	}
	if len(x.Rates) != weekdays {
		t.Errorf("%d days of rates, want the %d weekdays", len(x.Rates), weekdays)
	}
}

// TestDemoPolicyDefinitions: every policy the demo's states name has a
// definition with its name, category and severity, and all but one carry
// a description and remediation, so the demo shows both kinds of finding.
func TestDemoPolicyDefinitions(t *testing.T) {
	w := Demo(3, demoToday)
	defs := map[string]PolicyDefinition{}
	without := 0
	for _, d := range w.PolicyDefinitions {
		defs[d.ID] = d
		if d.Remediation == "" || d.Description == "" {
			without++
		}
	}
	if len(defs) != len(demoPolicies) || without != 1 {
		t.Fatalf("%d definitions of %d policies, %d without guidance", len(defs), len(demoPolicies), without)
	}
	for _, s := range w.PolicyStates {
		d, ok := defs[s.PolicyDefinitionID]
		if !ok || d.DisplayName != s.PolicyName || d.Category != s.Category || d.Severity != s.Severity {
			t.Fatalf("state %+v: definition %+v", s, d)
		}
	}
}

// TestDemoIdentityPosture: each tenant's Conditional Access policies,
// security defaults, Global Administrators (active and eligible), risky
// users and applications' credentials are the ones Demo documents, whatever the seed, and the same from one day
// to the next.
func TestDemoIdentityPosture(t *testing.T) {
	for _, seed := range []int64{1, 7} {
		w := Demo(seed, demoToday)
		got := map[string][]string{}
		for _, p := range w.ConditionalAccessPolicies {
			got[p.DirectoryTenantID] = append(got[p.DirectoryTenantID], p.Name+": "+p.State)
		}
		want := map[string][]string{
			"Contoso Retail":     {"Require MFA for all users: enabled", "Require MFA for administrators: enabled", "Block legacy authentication: enabled"},
			"Contoso Retail Dev": {"Require MFA for all users: enabledForReportingButNotEnforced", "Block legacy authentication: disabled"},
			"Northwind Travel":   {"Require MFA for administrators: enabled", "Block legacy authentication: enabledForReportingButNotEnforced"},
		}
		for _, tn := range w.Tenants {
			if !slices.Equal(got[tn.DirectoryTenantID], want[tn.Name]) {
				t.Errorf("seed %d: %s's policies %v, want %v", seed, tn.Name, got[tn.DirectoryTenantID], want[tn.Name])
			}
			if tn.SecurityDefaults != (tn.Name == "Fabrikam Foods") {
				t.Errorf("seed %d: %s's security defaults %v", seed, tn.Name, tn.SecurityDefaults)
			}
		}
		admins := map[string]int{}
		for _, u := range w.Users {
			if u.IsPrivileged {
				admins[u.DirectoryTenantID]++
			}
		}
		for _, a := range w.RoleAssignments {
			if a.Kind == "eligible" && a.Role() == GlobalAdministratorRole {
				admins[a.DirectoryTenantID]++
			}
		}
		for _, tn := range w.Tenants {
			want := map[string]int{"Contoso Retail": 6, "Contoso Retail Dev": 1, "Fabrikam Foods Dev": 1}[tn.Name]
			if n := admins[tn.DirectoryTenantID]; want != 0 && n != want || want == 0 && (n < 2 || n > 4) {
				t.Errorf("seed %d: %s has %d Global Administrators", seed, tn.Name, n)
			}
		}
		risky := map[string]string{}
		for _, u := range w.Users {
			if u.RiskLevel != "" {
				risky[u.DirectoryTenantID] += u.RiskLevel + "/" + u.RiskState + " "
			}
		}
		for _, tn := range w.Tenants {
			want := map[string]string{"Fabrikam Foods": "high/atRisk ", "Northwind Travel": "medium/remediated "}[tn.Name]
			if risky[tn.DirectoryTenantID] != want {
				t.Errorf("seed %d: %s's risky users %q, want %q", seed, tn.Name, risky[tn.DirectoryTenantID], want)
			}
		}
		ends := map[string]string{}
		for _, a := range w.Applications {
			for _, c := range a.Credentials {
				ends[a.Name+"/"+c.Name] = c.EndDate
			}
		}
		if want := map[string]string{"Storefront API/storefront-ci": "2026-03-26", "Storefront API/api.contoso-shop.example": "2027-01-08",
			"Supplier portal/portal-prod": "2026-03-09", "Booking partner gateway/gateway.northwind-travel.example": "2026-06-12"}; !maps.Equal(ends, want) {
			t.Errorf("seed %d: credentials end %v, want %v", seed, ends, want)
		}
		if !slices.ContainsFunc(w.RoleAssignments, func(a RoleAssignment) bool { return a.Principal == DemoContosoUser }) {
			t.Errorf("seed %d: %s is not an eligible Global Administrator", seed, DemoContosoUser)
		}
		if next := Demo(seed, demoToday.AddDate(0, 0, 1)); !reflect.DeepEqual(next.ConditionalAccessPolicies, w.ConditionalAccessPolicies) ||
			!reflect.DeepEqual(next.RoleAssignments, w.RoleAssignments) {
			t.Errorf("seed %d: the policies change from one day to the next", seed)
		}
	}
}

// checkMailboxes: every domain's DMARC rua address is a mailbox of the
// domain's tenant holding its reports, whose sources have reverse names
// but the spoofer's (203.0.113.x).
func checkMailboxes(t *testing.T, w *World) {
	boxes := map[string]Mailbox{}
	for _, m := range w.Mailboxes {
		boxes[m.Address] = m
	}
	ptr := map[string]bool{}
	for _, r := range w.DNS {
		if r.Type == "PTR" {
			ptr[r.Name] = true
		}
	}
	sourceIP := regexp.MustCompile(`<source_ip>([^<]+)</source_ip>`)
	for _, tn := range w.Tenants {
		for _, d := range tn.Domains {
			var rua string
			for _, r := range w.DNS {
				if r.Name == "_dmarc."+d {
					rua = strings.TrimPrefix(dmarcTags(r.Value)["rua"], "mailto:")
				}
			}
			if rua == "" {
				continue
			}
			box, ok := boxes[rua]
			if !ok || box.DirectoryTenantID != tn.DirectoryTenantID || len(box.Messages) < 4 {
				t.Errorf("%s: rua mailbox %s %+v", d, rua, box)
				continue
			}
			for _, m := range box.Messages {
				if len(m.Attachments) != 1 {
					t.Errorf("%s: message %s has %d attachments", rua, m.ID, len(m.Attachments))
				}
				for _, a := range m.Attachments {
					for _, ip := range sourceIP.FindAllStringSubmatch(a.Text, -1) {
						if ptr[ip[1]] == strings.HasPrefix(ip[1], "203.0.113.") {
							t.Errorf("%s: source %s has a reverse name: %v", rua, ip[1], ptr[ip[1]])
						}
					}
				}
			}
		}
	}
}
