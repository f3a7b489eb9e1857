package defender_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/arm"
	"github.com/stewardhq/steward/core/cloudsim/simtest"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/defender"
	"github.com/stewardhq/steward/plugins/compliance/frameworks"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

const (
	contosoDir   = "11111111-1111-4111-8111-111111111111"
	fabrikamDir  = "22222222-2222-4222-8222-222222222222"
	clientID     = "steward-test"
	clientSecret = "s3cret"

	subC1 = "c0000000-0000-4000-8000-000000000001"
	subC2 = "c0000000-0000-4000-8000-000000000002"
	subF1 = "f0000000-0000-4000-8000-000000000001"

	keyTLS   = "a0000000-0000-4000-8000-000000000001"
	keyVault = "a0000000-0000-4000-8000-000000000002"
	keyMFA   = "a0000000-0000-4000-8000-000000000003"
)

var (
	contoso  = sdk.Tenant{ID: "t-contoso", Name: "Contoso", DirectoryTenantID: contosoDir, IsActive: true}
	fabrikam = sdk.Tenant{ID: "t-fabrikam", Name: "Fabrikam", DirectoryTenantID: fabrikamDir, UseDelegation: true, IsActive: true}

	admin     = sdk.Principal{ID: "admin", Kind: "user", IsAdmin: true, TenantIDs: []string{contoso.ID, fabrikam.ID}}
	contosoer = sdk.Principal{ID: "uc", Kind: "user", TenantIDs: []string{contoso.ID}}

	simNow = time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)

	// The policy definitions the recommendations are built on, named as
	// the demo world's built-in policies.
	defTLS   = "/providers/Microsoft.Authorization/policyDefinitions/00000000-0000-4000-8000-000000000001"
	defVault = "/providers/Microsoft.Authorization/policyDefinitions/00000000-0000-4000-8000-000000000002"

	nameTLS   = "Storage accounts should have the specified minimum TLS version"
	nameVault = "Key vaults should have deletion protection enabled"
	nameMFA   = "MFA should be enabled on accounts with owner permissions"
)

func resource(sub, typ, name string) string {
	return "/subscriptions/" + sub + "/resourceGroups/rg/providers/" + typ + "/" + name
}

var (
	sa1 = resource(subC1, "Microsoft.Storage/storageAccounts", "sa1")
	sa2 = resource(subC1, "Microsoft.Storage/storageAccounts", "sa2")
	kv1 = resource(subC1, "Microsoft.KeyVault/vaults", "kv1")
	sa3 = resource(subC2, "Microsoft.Storage/storageAccounts", "sa3")
	sa4 = resource(subF1, "Microsoft.Storage/storageAccounts", "sa4")
)

func assessment(sub, res, key, name, status, severity, def string) world.SecurityAssessment {
	return world.SecurityAssessment{SubscriptionID: sub, ResourceID: res, Name: key, DisplayName: name, Status: status, Severity: severity,
		PolicyDefinitionID: def, RemediationDescription: "Fix " + name, Category: "Data"}
}

// defenderWorld has known figures:
//
//	Contoso subC1: sa1 TLS Unhealthy (Medium), sa2 TLS Healthy, kv1
//	vault Unhealthy (High), subC1 MFA Unhealthy (High, no policy);
//	score 3.5 of 6 (controls 1.5 of 4 and 2 of 2). subC2: sa3 TLS
//	NotApplicable; no controls, 0 of 0. Contoso: 3.5 of 6, 58.33 %.
//	Fabrikam subF1: sa4 TLS Healthy; score 4 of 4 (one control):
//	100 %. Both: 7.5 of 10, 75 %.
func defenderWorld() *world.World {
	return &world.World{
		Tenants: []world.Tenant{
			{Name: "Contoso", DirectoryTenantID: contosoDir, Subscriptions: []world.Subscription{{ID: subC1, Name: "Contoso prod"}, {ID: subC2, Name: "Contoso dev"}}},
			{Name: "Fabrikam", DirectoryTenantID: fabrikamDir, Delegated: true, Subscriptions: []world.Subscription{{ID: subF1, Name: "Fabrikam prod"}}},
		},
		SecurityAssessments: []world.SecurityAssessment{
			assessment(subC1, sa1, keyTLS, nameTLS, "Unhealthy", "Medium", defTLS),
			assessment(subC1, sa2, keyTLS, nameTLS, "Healthy", "Medium", defTLS),
			assessment(subC1, kv1, keyVault, nameVault, "Unhealthy", "High", defVault),
			assessment(subC1, "/subscriptions/"+subC1, keyMFA, nameMFA, "Unhealthy", "High", ""),
			assessment(subC2, sa3, keyTLS, nameTLS, "NotApplicable", "Medium", defTLS),
			assessment(subF1, sa4, keyTLS, nameTLS, "Healthy", "Medium", defTLS),
		},
		SecureScores: []world.SecureScore{
			{SubscriptionID: subC1, Controls: []world.SecureScoreControl{
				{Name: "c0000000-0000-4000-8000-0000000000c1", DisplayName: "Encrypt data in transit", Current: 1.5, Max: 4, HealthyResources: 1, UnhealthyResources: 1},
				{Name: "c0000000-0000-4000-8000-0000000000c2", DisplayName: "Enable data recovery", Current: 2, Max: 2, HealthyResources: 0, UnhealthyResources: 1, NotApplicableResources: 3},
			}},
			{SubscriptionID: subF1, Controls: []world.SecureScoreControl{
				{Name: "c0000000-0000-4000-8000-0000000000c1", DisplayName: "Encrypt data in transit", Current: 4, Max: 4, HealthyResources: 1},
			}},
		},
	}
}

// fixture is a simulated cloud serving a world, a migrated store on a
// real database, and the defender sync and reads as a plugin under the
// test harness.
type fixture struct {
	sim     *cloudsim.Sim
	store   *defender.Store
	reads   *defender.Handlers
	harness *plugintest.Harness
}

func start(tb testing.TB, dialect string, w *world.World) *fixture {
	tb.Helper()
	s, p := simtest.Start(tb, w, cloudsim.Options{Now: simtest.Fixed(simNow)}, simtest.Client(clientID, clientSecret))
	arm.Register(s, p)
	db := storetest.Open(tb, dialect)
	if _, err := store.Migrate(context.Background(), db, store.MergeMigrations(states.Migrations(), defender.Migrations()), "compliance_migrations"); err != nil {
		tb.Fatal(err)
	}
	clients, err := cloud.New(cloud.Config{
		Provider: cloud.ProviderSim, TenantID: contosoDir, ClientID: clientID, ClientSecret: clientSecret,
		Credential: cloud.CredentialClientSecret,
		Endpoints:  cloud.Endpoints{Authority: s.URLs[cloudsim.IdP], ResourceManager: s.URLs[cloudsim.ARM], Graph: s.URLs[cloudsim.Graph]},
		CAPEM:      s.CAPEM,
		Retry:      cloud.Retry{MaxRetries: 2, Delay: 10 * time.Millisecond, MaxDelay: time.Second},
	})
	if err != nil {
		tb.Fatal(err)
	}
	f := &fixture{sim: s, store: &defender.Store{DB: db}}
	syncer := &defender.Syncer{Cloud: clients, Store: f.store, Now: func() time.Time { return simNow }}
	reads := &defender.Handlers{Store: f.store}
	f.reads = reads
	pl := func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		syncer.Host, reads.Host = env.Host, env.Host
		return &sdk.Plugin{Routes: reads.Routes(), Jobs: []sdk.Job{syncer.Job()}}, nil
	}
	f.harness = plugintest.New(tb, sdk.Definition{Name: "compliance"}, pl, plugintest.Options{Tenants: []sdk.Tenant{contoso, fabrikam}})
	return f
}

func (f *fixture) sync(tb testing.TB) int64 {
	tb.Helper()
	n, _, err := f.harness.RunJob(context.Background(), defender.Domain)
	if err != nil {
		tb.Fatalf("defender job: %v", err)
	}
	return n
}

func (f *fixture) do(t *testing.T, target string, p sdk.Principal) (int, http.Header, []byte) {
	t.Helper()
	resp := f.harness.Do(httptest.NewRequest(http.MethodGet, target, nil), p)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func (f *fixture) get(t *testing.T, target string, p sdk.Principal, v any) http.Header {
	t.Helper()
	status, h, body := f.do(t, target, p)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", target, err, body)
	}
	return h
}

func each(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) { fn(t, dialect) })
	}
}

// TestSyncIsIdempotent: a sync stores every assessment with its tenant,
// resource type and metadata, and each subscription's score and controls,
// and marks both tenants fresh; a second sync of the same world leaves
// the same rows.
func TestSyncIsIdempotent(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, defenderWorld())
		if n := f.sync(t); n != 6 {
			t.Fatalf("first sync: %d assessments, want 6", n)
		}
		first, _, err := f.store.Assessments(context.Background(), defender.AssessmentQuery{TenantIDs: []string{contoso.ID, fabrikam.ID}, Limit: 100})
		if err != nil || len(first) != 6 {
			t.Fatalf("stored %d assessments, %v", len(first), err)
		}
		kv := first[0]
		if kv.TenantID != contoso.ID || kv.SubscriptionID != subC1 || kv.ResourceID != kv1 || kv.ResourceType != "microsoft.keyvault/vaults" ||
			kv.Status != "Unhealthy" || kv.Severity != "High" || kv.PolicyDefinitionID != defVault || kv.Remediation != "Fix "+nameVault ||
			kv.Category != "Data" || kv.AssessmentName != keyVault || kv.AssessmentID != kv1+"/providers/Microsoft.Security/assessments/"+keyVault ||
			!kv.SyncedAt.Equal(simNow) {
			t.Errorf("first by severity: %+v", kv)
		}
		scores, controls, err := f.store.Scores(context.Background(), []string{contoso.ID, fabrikam.ID})
		if err != nil || len(scores) != 3 || len(controls) != 3 {
			t.Fatalf("%d scores, %d controls, %v; want 3 and 3", len(scores), len(controls), err)
		}
		if s := scores[0]; s.SubscriptionID != subC1 || s.Current != 3.5 || s.Max != 6 || s.Percentage != 0.5833 {
			t.Errorf("subC1's score %+v", s)
		}
		if s := scores[1]; s.SubscriptionID != subC2 || s.Current != 0 || s.Max != 0 {
			t.Errorf("subC2's score %+v", s)
		}
		var fresh []string
		for _, m := range f.harness.FreshMarks() {
			if m.Domain == defender.Domain && m.Failure == "" {
				fresh = append(fresh, m.TenantID)
			}
		}
		if !slices.Equal(fresh, []string{contoso.ID, fabrikam.ID}) {
			t.Errorf("fresh tenants %v", fresh)
		}
		if n := f.sync(t); n != 6 {
			t.Fatalf("second sync: %d assessments, want 6", n)
		}
		second, _, err := f.store.Assessments(context.Background(), defender.AssessmentQuery{TenantIDs: []string{contoso.ID, fabrikam.ID}, Limit: 100})
		if err != nil || !reflect.DeepEqual(stripTimes(first), stripTimes(second)) {
			t.Errorf("second sync changed the rows: %v\n%+v\n%+v", err, first, second)
		}
		again, againControls, err := f.store.Scores(context.Background(), []string{contoso.ID, fabrikam.ID})
		if err != nil || len(again) != 3 || len(againControls) != 3 {
			t.Errorf("after the second sync: %d scores, %d controls, %v", len(again), len(againControls), err)
		}
	})
}

// TestSyncFailureNamesTheRole: a subscription Defender refuses (403)
// fails the run with an error naming the Security Reader role, keeps what
// was stored for it and leaves its tenant unmarked; the other tenant
// syncs and is marked fresh.
func TestSyncFailureNamesTheRole(t *testing.T) {
	f := start(t, "sqlite", defenderWorld())
	f.sync(t)
	marks := len(f.harness.FreshMarks())
	f.sim.Faults.Set(cloudsim.ARM, "/subscriptions/"+subF1+"/providers/Microsoft.Security", cloudsim.Fault{Status: http.StatusForbidden})
	_, _, err := f.harness.RunJob(context.Background(), defender.Domain)
	if err == nil || !strings.Contains(err.Error(), "grant Steward the Security Reader role on subscription "+subF1) {
		t.Fatalf("a refused subscription: %v, want an error naming the role", err)
	}
	var fresh []string
	for _, m := range f.harness.FreshMarks()[marks:] {
		if m.Domain == defender.Domain && m.Failure == "" {
			fresh = append(fresh, m.TenantID)
		}
	}
	if !slices.Equal(fresh, []string{contoso.ID}) {
		t.Errorf("fresh after the failure: %v, want contoso only", fresh)
	}
	kept, total, err := f.store.Assessments(context.Background(), defender.AssessmentQuery{TenantIDs: []string{fabrikam.ID}, Limit: 10})
	if err != nil || total != 1 || kept[0].ResourceID != sa4 {
		t.Errorf("fabrikam's stored assessments after the failure: %+v %d %v", kept, total, err)
	}
}

// stripTimes drops the synced_at the databases read back in their own
// location, to compare rows.
func stripTimes(rows []defender.Assessment) []defender.Assessment {
	out := slices.Clone(rows)
	for i := range out {
		out[i].SyncedAt = time.Time{}
	}
	return out
}

// TestAssessmentsRoute: the list sorts by severity then status, filters
// by status, severity and resource type, pages with X-Total-Count, refuses
// a bad filter with a 422 naming it and another tenant's with a 403.
func TestAssessmentsRoute(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, defenderWorld())
		f.sync(t)
		const at = "/api/v1/compliance/defender/assessments"
		var all []defender.AssessmentItem
		h := f.get(t, at, admin, &all)
		got := make([]string, len(all))
		for i, a := range all {
			got[i] = a.Severity + " " + a.Status + " " + a.ResourceID
		}
		want := []string{
			"High Unhealthy " + kv1, "High Unhealthy /subscriptions/" + subC1,
			"Medium Unhealthy " + sa1, "Medium Healthy " + sa2, "Medium Healthy " + sa4, "Medium NotApplicable " + sa3,
		}
		if !slices.Equal(got, want) || h.Get("X-Total-Count") != "6" {
			t.Errorf("list (total %s):\n got %q\nwant %q", h.Get("X-Total-Count"), got, want)
		}
		var page []defender.AssessmentItem
		h = f.get(t, at+"?status=Unhealthy&limit=1&offset=1", admin, &page)
		if len(page) != 1 || page[0].ResourceID != "/subscriptions/"+subC1 || h.Get("X-Total-Count") != "3" {
			t.Errorf("unhealthy, second of 3: %+v (total %s)", page, h.Get("X-Total-Count"))
		}
		h = f.get(t, at+"?severity=Medium&resource_type=Microsoft.Storage/storageAccounts&tenant_ids="+fabrikam.ID, admin, &page)
		if len(page) != 1 || page[0].ResourceID != sa4 || page[0].TenantID != fabrikam.ID || h.Get("X-Total-Count") != "1" {
			t.Errorf("fabrikam's medium storage accounts: %+v", page)
		}
		f.get(t, at, contosoer, &page)
		if len(page) != 5 {
			t.Errorf("a contoso user sees %d assessments, want contoso's 5", len(page))
		}
		if status, _, body := f.do(t, at+"?tenant_ids="+fabrikam.ID, contosoer); status != http.StatusForbidden {
			t.Errorf("another tenant's assessments: %d %s, want 403", status, body)
		}
		if status, _, body := f.do(t, at+"?status=Broken", admin); status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "query.status") {
			t.Errorf("bad status: %d %s, want 422 naming query.status", status, body)
		}
	})
}

// TestSecureScoreRoute: each subscription's score and controls, each
// tenant's and the total weighted by maximum, exact to the hundredth.
func TestSecureScoreRoute(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, defenderWorld())
		var empty defender.SecureScoreReport
		f.get(t, "/api/v1/compliance/secure-score", admin, &empty)
		if empty.Max != 0 || empty.Percentage != nil || len(empty.Tenants) != 2 || len(empty.Tenants[0].Subscriptions) != 0 {
			t.Errorf("before a sync: %+v", empty)
		}
		f.sync(t)
		var r defender.SecureScoreReport
		f.get(t, "/api/v1/compliance/secure-score", admin, &r)
		if r.Current != 7.5 || r.Max != 10 || r.Percentage == nil || *r.Percentage != 75 || len(r.Tenants) != 2 {
			t.Fatalf("total %+v", r)
		}
		c := r.Tenants[0]
		if c.TenantName != "Contoso" || c.Current != 3.5 || c.Max != 6 || *c.Percentage != 58.33 || len(c.Subscriptions) != 2 {
			t.Fatalf("contoso %+v", c)
		}
		s := c.Subscriptions[0]
		if s.SubscriptionID != subC1 || s.Current != 3.5 || s.Max != 6 || *s.Percentage != 58.33 || len(s.Controls) != 2 || !s.SyncedAt.Equal(simNow) {
			t.Fatalf("subC1 %+v", s)
		}
		if ctl := s.Controls[0]; ctl.DisplayName != "Enable data recovery" || ctl.Current != 2 || ctl.Max != 2 || *ctl.Percentage != 100 ||
			ctl.HealthyResources != 0 || ctl.UnhealthyResources != 1 || ctl.NotApplicableResources != 3 {
			t.Errorf("first control %+v", ctl)
		}
		if ctl := s.Controls[1]; ctl.DisplayName != "Encrypt data in transit" || *ctl.Percentage != 37.5 || ctl.HealthyResources != 1 || ctl.UnhealthyResources != 1 {
			t.Errorf("second control %+v", ctl)
		}
		if s := c.Subscriptions[1]; s.SubscriptionID != subC2 || s.Max != 0 || s.Percentage != nil || len(s.Controls) != 0 {
			t.Errorf("subC2 %+v", s)
		}
		if fb := r.Tenants[1]; fb.TenantName != "Fabrikam" || fb.Current != 4 || *fb.Percentage != 100 {
			t.Errorf("fabrikam %+v", fb)
		}
		var own defender.SecureScoreReport
		f.get(t, "/api/v1/compliance/secure-score", contosoer, &own)
		if len(own.Tenants) != 1 || own.Current != 3.5 || *own.Percentage != 58.33 {
			t.Errorf("a contoso user's score %+v", own)
		}
		if status, _, body := f.do(t, "/api/v1/compliance/secure-score?tenant_ids="+fabrikam.ID, contosoer); status != http.StatusForbidden {
			t.Errorf("another tenant's score: %d %s, want 403", status, body)
		}
	})
}

// TestFindingsAndCoverage: the assessments as findings rows; as policy
// definitions with their resources by compliance; and, as a coverage
// source, counted by the framework coverage exactly as policy states of
// the same definitions would be.
func TestFindingsAndCoverage(t *testing.T) {
	each(t, func(t *testing.T, dialect string) {
		f := start(t, dialect, defenderWorld())
		f.sync(t)
		ctx := context.Background()
		findings, err := f.store.Findings(ctx, []string{fabrikam.ID})
		want := []defender.Finding{{TenantID: fabrikam.ID, ResourceID: sa4, ResourceType: "microsoft.storage/storageaccounts",
			PolicyDefinitionID: defTLS, State: "compliant", Severity: "Medium", Source: "defender"}}
		if err != nil || !slices.Equal(findings, want) {
			t.Errorf("fabrikam's findings %+v, %v", findings, err)
		}
		// By resource id: the subscription itself, kv1, sa1, sa2, then
		// subC2's sa3.
		findings, err = f.store.Findings(ctx, []string{contoso.ID})
		var statesOf []string
		for _, fi := range findings {
			statesOf = append(statesOf, fi.State)
		}
		if err != nil || !slices.Equal(statesOf, []string{"non_compliant", "non_compliant", "non_compliant", "compliant", "not_applicable"}) {
			t.Errorf("contoso's finding states %v, %v", statesOf, err)
		}
		defs, err := f.store.Definitions(ctx, []string{contoso.ID, fabrikam.ID})
		wantDefs := []states.DefinitionCount{
			{PolicyDefinitionID: defTLS, PolicyName: nameTLS, GroupNames: []string{}, Compliant: 2, NonCompliant: 1},
			{PolicyDefinitionID: defVault, PolicyName: nameVault, GroupNames: []string{}, NonCompliant: 1},
		}
		if err != nil || !reflect.DeepEqual(defs, wantDefs) {
			t.Fatalf("definitions %+v, %v", defs, err)
		}

		// The same findings as policy states, in a store of their own,
		// give the coverage the assessments give.
		set, err := frameworks.WithDir("")
		if err != nil {
			t.Fatal(err)
		}
		mapper, err := mapping.New(ctx, set)
		if err != nil {
			t.Fatal(err)
		}
		st := &states.Store{DB: f.store.DB}
		bySource := &coverage.Service{Mapper: mapper, Store: st, Sources: []coverage.Source{f.store.CoverageSource()}}
		fromDefender, err := bySource.Frameworks(ctx, []string{contoso.ID, fabrikam.ID})
		if err != nil {
			t.Fatal(err)
		}
		db2 := storetest.Open(t, dialect)
		if _, err := store.Migrate(ctx, db2, states.Migrations(), "compliance_migrations"); err != nil {
			t.Fatal(err)
		}
		st2 := &states.Store{DB: db2}
		put := func(sub string, list ...states.State) {
			if _, err := st2.Replace(ctx, states.Target{TenantID: contoso.ID, SubscriptionID: sub, SyncedAt: simNow}, func(emit func(states.State) error) error {
				for _, s := range list {
					if err := emit(s); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		ps := func(res, def, name, compliance string) states.State {
			return states.State{ResourceID: res, ResourceType: "x", PolicyAssignmentID: "a", PolicyDefinitionID: def, PolicyDefinitionName: "d",
				PolicyName: name, Category: "Data", ComplianceState: compliance, Severity: "Medium", EvaluatedAt: simNow}
		}
		put(subC1, ps(sa1, defTLS, nameTLS, "NonCompliant"), ps(sa2, defTLS, nameTLS, "Compliant"), ps(kv1, defVault, nameVault, "NonCompliant"))
		put(subF1, ps(sa4, defTLS, nameTLS, "Compliant"))
		fromPolicies, err := (&coverage.Service{Mapper: mapper, Store: st2}).Frameworks(ctx, []string{contoso.ID})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromDefender, fromPolicies) {
			t.Errorf("coverage from the assessments:\n%+v\nfrom the same policy states:\n%+v", fromDefender, fromPolicies)
		}
		matched := 0
		for _, s := range fromDefender {
			matched += s.CoverageSummary.ControlsWithCoverage
		}
		if matched == 0 {
			t.Errorf("the assessments' policies map to no framework: %+v", fromDefender)
		}
	})
}

// TestSections: before a sync both sections say so; after it the Secure
// Score card shows the tenants' score and each subscription's, and the
// assessments section the unhealthy ones by severity, each resource
// linking its resource page.
func TestSections(t *testing.T) {
	f := start(t, "sqlite", defenderWorld())
	sections := f.reads.Sections()
	if len(sections) != 2 || sections[0].Title != "Secure Score" || sections[1].Title != "Defender for Cloud assessments" {
		t.Fatalf("sections %+v", sections)
	}
	req := httptest.NewRequest(http.MethodGet, "/compliance", nil)
	both := []string{contoso.ID, fabrikam.ID}
	for _, s := range sections {
		body, err := s.Render(req, both)
		if err != nil || !strings.Contains(string(body), "No ") {
			t.Errorf("%s before a sync: %v %s", s.Title, err, body)
		}
	}
	f.sync(t)
	score, err := sections[0].Render(req, both)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"7.5 of 10", "58.33 %", "100 %", subC1, "No controls"} {
		if !strings.Contains(string(score), want) {
			t.Errorf("the Secure Score card lacks %q: %s", want, score)
		}
	}
	list, err := sections[1].Render(req, both)
	if err != nil {
		t.Fatal(err)
	}
	html := string(list)
	vault := strings.Index(html, nameVault)
	tls := strings.Index(html, nameTLS)
	if vault < 0 || tls < 0 || vault > tls || !strings.Contains(html, `href="/resources/item?resource_id=`+url.QueryEscape(kv1)+`"`) ||
		!strings.Contains(html, "3 of 3 unhealthy assessments") || strings.Contains(html, "sa2") {
		t.Errorf("the assessments section: %s", html)
	}
}
