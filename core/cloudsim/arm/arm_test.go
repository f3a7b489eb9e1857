package arm_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/idp"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

const (
	tenantID       = "11111111-1111-4111-8111-111111111111"
	subA           = "00000000-0000-4000-8000-00000000000a"
	subB           = "00000000-0000-4000-8000-00000000000b"
	billingAccount = "12345678"
	apiVersion     = "api-version=2024-01-01"
)

type env struct {
	t     *testing.T
	sim   *cloudsim.Sim
	clock *simtest.Clock
	token string
}

func testWorld() *world.World {
	ba := billingAccount
	w := &world.World{Tenants: []world.Tenant{{
		Name: "Contoso", DirectoryTenantID: tenantID, BillingAccountID: &ba,
		Subscriptions: []world.Subscription{{ID: subA, Name: "Production"}, {ID: subB, Name: "Development"}},
	}}}
	services := []string{"Virtual Machines", "Storage", "Bandwidth"}
	for d := 1; d <= 10; d++ {
		for i, svc := range services {
			for _, rg := range []string{"rg-web", "rg-data"} {
				w.Costs = append(w.Costs, world.Cost{SubscriptionID: subA, Date: fmt.Sprintf("2026-10-%02d", d),
					Service: svc, ResourceGroup: rg, Cost: float64(d*10 + i), Currency: "USD"})
			}
		}
	}
	w.Costs = append(w.Costs, world.Cost{SubscriptionID: subB, Date: "2026-10-01", Service: "Storage", ResourceGroup: "rg-x", Cost: 1, Currency: "USD"})
	w.Quotas = []world.Quota{
		{SubscriptionID: subA, Location: "westeurope", Provider: "compute", Name: "cores", CurrentValue: 12, Limit: 100},
		{SubscriptionID: subA, Location: "westeurope", Provider: "network", Name: "VirtualNetworks", CurrentValue: 2, Limit: 50},
		{SubscriptionID: subA, Location: "westeurope", Provider: "network", Name: "CustomQuota", CurrentValue: 1, Limit: 5},
	}
	for d := 1; d <= 40; d++ {
		date := time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC).AddDate(0, 0, d).Format(time.DateOnly)
		w.Reservations = append(w.Reservations, world.Reservation{BillingAccountID: billingAccount, ReservationID: "res-1",
			SKU: "Standard_D2s_v5", Date: date, ReservedHours: 24, UsedHours: float64(d % 25)})
	}
	return w
}

func start(t *testing.T, opts ...arm.Option) *env {
	t.Helper()
	return startWorld(t, testWorld(), opts...)
}

// startWorld serves w on a simulator with ARM, with a token of tenantID.
func startWorld(t *testing.T, w *world.World, opts ...arm.Option) *env {
	t.Helper()
	clk := simtest.NewClock(time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC))
	s, p := simtest.Start(t, w, cloudsim.Options{Now: clk.Now}, simtest.Client(simtest.ClientID, simtest.ClientSecret))
	arm.Register(s, p, opts...)
	e := &env{t: t, sim: s, clock: clk}
	e.token = e.getToken(arm.Audience + "/.default")
	return e
}

// getToken gets an app-only token from the simulated identity provider.
func (e *env) getToken(scope string) string {
	e.t.Helper()
	return simtest.Token(e.t, e.sim, tenantID, scope)
}

// do sends a request to ARM with the env's token and decodes a JSON answer.
func (e *env) do(method, path string, body any) (*http.Response, map[string]any) {
	e.t.Helper()
	return e.doWith(e.token, method, path, body)
}

func (e *env) doWith(token, method, path string, body any) (*http.Response, map[string]any) {
	e.t.Helper()
	return simtest.Do(e.t, e.sim, cloudsim.ARM, token, method, path, body, nil)
}

// errorCode reads the Azure error envelope.
func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	code, _ := e["code"].(string)
	msg, _ := e["message"].(string)
	if msg == "" {
		return ""
	}
	return code
}

func TestAuthenticationAndAPIVersion(t *testing.T) {
	e := start(t)
	path := "/subscriptions?" + apiVersion
	for _, c := range []struct {
		name, token, code string
	}{
		{"no token", "", "AuthenticationFailed"},
		{"not a token", "garbage", "InvalidAuthenticationToken"},
		{"token for Graph", e.getToken(idp.GraphResource + "/.default"), "InvalidAuthenticationToken"},
	} {
		resp, body := e.doWith(c.token, "GET", path, nil)
		if resp.StatusCode != 401 || errorCode(body) != c.code || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer authorization_uri=") {
			t.Errorf("%s: %d %v %q, want 401 %s with a challenge", c.name, resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"), c.code)
		}
	}
	if resp, body := e.do("GET", "/subscriptions", nil); resp.StatusCode != 400 || errorCode(body) != "MissingApiVersionParameter" {
		t.Errorf("no api-version: %d %v", resp.StatusCode, body)
	}
	if resp, _ := e.do("GET", path, nil); resp.StatusCode != 200 {
		t.Fatalf("valid token: %d", resp.StatusCode)
	}

	e.sim.Faults.Set(cloudsim.ARM, "/subscriptions", cloudsim.Fault{ExpireTokens: true})
	if resp, body := e.do("GET", path, nil); resp.StatusCode != 401 || errorCode(body) != "ExpiredAuthenticationToken" {
		t.Errorf("expired by fault: %d %v", resp.StatusCode, body)
	}
	e.sim.Faults.Clear()
	e.clock.Advance(idp.DefaultTokenLifetime)
	if resp, body := e.do("GET", path, nil); resp.StatusCode != 401 || errorCode(body) != "ExpiredAuthenticationToken" {
		t.Errorf("expired by time: %d %v", resp.StatusCode, body)
	}
}

func TestSubscriptions(t *testing.T) {
	e := start(t)
	resp, body := e.do("GET", "/subscriptions?"+apiVersion+"&$top=1", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	value := body["value"].([]any)
	first := value[0].(map[string]any)
	if len(value) != 1 || first["id"] != "/subscriptions/"+subA || first["subscriptionId"] != subA || first["displayName"] != "Production" ||
		first["state"] != "Enabled" || first["tenantId"] != tenantID {
		t.Fatalf("first page %v", body)
	}
	next, _ := body["nextLink"].(string)
	if !strings.HasPrefix(next, e.sim.URLs[cloudsim.ARM]+"/subscriptions?") || !strings.Contains(next, "api-version=") {
		t.Fatalf("nextLink %q", next)
	}
	_, body = e.do("GET", next, nil)
	if v := body["value"].([]any); len(v) != 1 || v[0].(map[string]any)["subscriptionId"] != subB || body["nextLink"] != nil {
		t.Fatalf("second page %v", body)
	}

	_, body = e.do("GET", "/subscriptions/"+strings.ToUpper(subB)+"?"+apiVersion, nil)
	if body["displayName"] != "Development" {
		t.Fatalf("get %v", body)
	}
	if resp, body := e.do("GET", "/subscriptions/nope?"+apiVersion, nil); resp.StatusCode != 404 || errorCode(body) != "SubscriptionNotFound" {
		t.Fatalf("unknown: %d %v", resp.StatusCode, body)
	}
}

func TestUsages(t *testing.T) {
	e := start(t)
	_, body := e.do("GET", "/subscriptions/"+subA+"/providers/Microsoft.Compute/locations/West%20Europe/usages?"+apiVersion, nil)
	value := body["value"].([]any)
	if len(value) != 1 {
		t.Fatalf("compute %v", body)
	}
	u := value[0].(map[string]any)
	name := u["name"].(map[string]any)
	if u["currentValue"] != 12.0 || u["limit"] != 100.0 || u["unit"] != "Count" || name["value"] != "cores" ||
		name["localizedValue"] != "Total Regional vCPUs" || u["id"] != nil {
		t.Fatalf("compute usage %v", u)
	}
	_, body = e.do("GET", "/subscriptions/"+subA+"/providers/Microsoft.Network/locations/westeurope/usages?"+apiVersion, nil)
	value = body["value"].([]any)
	if len(value) != 2 {
		t.Fatalf("network %v", body)
	}
	u = value[1].(map[string]any)
	name = u["name"].(map[string]any)
	if u["id"] != "/subscriptions/"+subA+"/providers/Microsoft.Network/locations/westeurope/usages/CustomQuota" ||
		name["localizedValue"] != "CustomQuota" {
		t.Fatalf("network usage %v", u)
	}
	if _, body = e.do("GET", "/subscriptions/"+subB+"/providers/Microsoft.Compute/locations/westeurope/usages?"+apiVersion, nil); len(body["value"].([]any)) != 0 {
		t.Fatalf("another subscription's quotas: %v", body)
	}
	if resp, body := e.do("GET", "/subscriptions/nope/providers/Microsoft.Compute/locations/westeurope/usages?"+apiVersion, nil); resp.StatusCode != 404 || errorCode(body) != "SubscriptionNotFound" {
		t.Fatalf("unknown subscription: %d %v", resp.StatusCode, body)
	}
}
