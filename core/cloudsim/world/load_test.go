package world

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const valid = `{
  "tenants": [{"name": "Brand A", "directory_tenant_id": "dir-a", "subscriptions": [{"id": "sub-a", "name": "A prod"}],
               "billing_account_id": "ba-1", "access_groups": ["grp-a"], "delegated": true, "domains": ["brand-a.example"],
               "extra_field": "allowed"}],
  "users": [{"email": "alice@brand-a.example", "name": "Alice", "directory_tenant_id": "dir-a", "roles": ["Governance.Admin"],
             "groups": ["grp-a"], "user_type": "Member", "mfa_registered": true, "last_sign_in": "2026-11-01",
             "risk_level": "high", "risk_state": "atRisk"}],
  "costs": [{"subscription_id": "sub-a", "date": "2026-10-01", "service": "Virtual Machines", "resource_group": "rg-web", "cost": 12.34, "currency": "USD"}],
  "policy_states": [{"subscription_id": "sub-a", "policy_definition_id": "p1", "policy_name": "Require MFA", "category": "Identity",
                     "group_names": ["SOC_2_CC6.1"], "compliance_state": "NonCompliant", "resource_id": "r1", "severity": "High",
                     "timestamp": "2026-11-01T00:00:00Z"}],
  "resources": [{"subscription_id": "sub-a", "id": "/subscriptions/sub-a/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1",
                 "name": "vm1", "type": "Microsoft.Compute/virtualMachines", "location": "eastus"}],
  "quotas": [{"subscription_id": "sub-a", "location": "eastus", "provider": "compute", "name": "cores", "current_value": 80, "limit": 100}],
  "reservations": [{"billing_account_id": "ba-1", "reservation_id": "res-1", "sku": "Standard_D2s_v3", "date": "2026-10-01", "reserved_hours": 24, "used_hours": 20}],
  "access_reviews": [{"directory_tenant_id": "dir-a", "id": "ar-1", "name": "Quarterly", "status": "InProgress", "decisions": [{"user": "alice@brand-a.example", "decision": "Approve"}]}],
  "conditional_access_policies": [{"directory_tenant_id": "dir-a", "id": "ca-1", "name": "MFA for all", "state": "enabled", "include_users": ["All"],
                                   "exclude_users": ["alice@brand-a.example"], "include_roles": ["62e90394-69f5-4237-9190-012177145e10"],
                                   "client_app_types": ["browser"], "grant_controls": ["mfa"], "grant_operator": "OR"}],
  "applications": [{"directory_tenant_id": "dir-a", "name": "Payroll sync", "credentials": [{"type": "password", "name": "ci", "end_date": "2026-12-01"}]}],
  "role_assignments": [{"directory_tenant_id": "dir-a", "principal": "alice@brand-a.example", "kind": "eligible"},
                       {"directory_tenant_id": "dir-a", "principal": "group:grp-ops", "kind": "active", "role_template_id": "e8611ab8-c189-46e8-94e1-60213ab1f814"}],
  "dns": [{"name": "_dmarc.brand-a.example", "type": "TXT", "value": "v=DMARC1; p=reject"}], "dnssec": ["brand-a.example"],
  "mta_sts": [{"domain": "brand-a.example", "policy": "version: STSv1\nmode: enforce\nmx: mx.brand-a.example\nmax_age: 604800\n", "status": 200}], "exchange_rates": {"base": "USD", "rates": {"2026-11-02": {"EUR": 0.9123}}}, "security_assessments": [{"subscription_id": "sub-a", "resource_id": "r1", "name": "4fb67663-9ab9-475d-b026-8c544cced439", "display_name": "Minimum TLS", "status": "Unhealthy", "severity": "Medium", "policy_definition_id": "p1", "category": "Data"}], "secure_scores": [{"subscription_id": "sub-a", "controls": [{"name": "c1", "display_name": "Encrypt data in transit", "current": 1.5, "max": 4, "healthy_resources": 3, "unhealthy_resources": 5}]}], "policy_definitions": [{"id": "/providers/Microsoft.Authorization/policyDefinitions/p1", "display_name": "Require MFA", "description": "Accounts need MFA.", "category": "Identity", "severity": "High", "remediation": "Require MFA with Conditional Access."}, {"id": "/subscriptions/sub-a/providers/Microsoft.Authorization/policyDefinitions/owner-tag", "display_name": "Owner tag"}]
}`

func TestParseValid(t *testing.T) {
	w, err := Parse([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Tenants) != 1 || w.Tenants[0].Subscriptions[0].ID != "sub-a" || *w.Tenants[0].BillingAccountID != "ba-1" {
		t.Fatalf("tenants %+v", w.Tenants)
	}
	if w.Costs[0].Cost != 12.34 || w.Quotas[0].Limit != 100 || w.Reservations[0].UsedHours != 20 || w.DNS[0].Type != "TXT" ||
		w.ExchangeRates.Base != "USD" || w.ExchangeRates.Rates["2026-11-02"]["EUR"] != 0.9123 ||
		w.SecurityAssessments[0].Status != "Unhealthy" || w.SecureScores[0].Controls[0].Current != 1.5 ||
		w.PolicyDefinitions[0].Remediation != "Require MFA with Conditional Access." || w.PolicyDefinitions[1].DisplayName != "Owner tag" ||
		w.DNSSEC[0] != "brand-a.example" || w.MTASTS[0].Domain != "brand-a.example" || !strings.HasPrefix(w.MTASTS[0].Policy, "version: STSv1\n") ||
		w.ConditionalAccessPolicies[0].ExcludeUsers[0] != "alice@brand-a.example" || w.ConditionalAccessPolicies[0].State != "enabled" ||
		w.Users[0].RiskLevel != "high" || w.RoleAssignments[0].Role() != GlobalAdministratorRole || w.RoleAssignments[1].Role() != "e8611ab8-c189-46e8-94e1-60213ab1f814" {
		t.Fatalf("world %+v", w)
	}
	empty, err := Parse([]byte(`{}`))
	if err != nil || len(empty.Tenants) != 0 {
		t.Fatalf("every list is optional: %v", err)
	}
}

func TestParseReportsEntryPaths(t *testing.T) {
	cases := []struct {
		name, replace, with, want string
	}{
		{"bad date", `"date": "2026-10-01", "service"`, `"date": "2026-13-01", "service"`, `costs[0].date: "2026-13-01" is not a date`},
		{"unknown subscription", `"subscription_id": "sub-a", "location"`, `"subscription_id": "sub-x", "location"`, `quotas[0].subscription_id: "sub-x" is not a subscription of any tenant`},
		{"bad provider", `"provider": "compute"`, `"provider": "storage"`, `quotas[0].provider: "storage" is not one of compute, network`},
		{"user of no tenant", `"email": "alice@brand-a.example", "name": "Alice", "directory_tenant_id": "dir-a"`, `"email": "alice@brand-a.example", "name": "Alice", "directory_tenant_id": "dir-z"`, `users[0].directory_tenant_id: "dir-z" is not the directory id of any tenant`},
		{"bad email", `"email": "alice@brand-a.example", "name"`, `"email": "not-an-email", "name"`, `users[0].email: "not-an-email" is not an e-mail address`},
		{"bad state", `"compliance_state": "NonCompliant"`, `"compliance_state": "Broken"`, `policy_states[0].compliance_state`},
		{"bad severity", `"severity": "High"`, `"severity": "Urgent"`, `policy_states[0].severity`},
		{"unknown billing account", `"billing_account_id": "ba-1", "reservation_id"`, `"billing_account_id": "ba-9", "reservation_id"`, `reservations[0].billing_account_id: "ba-9" is not the billing account of any tenant`},
		{"overused reservation", `"used_hours": 20`, `"used_hours": 30`, `reservations[0].used_hours: 30 exceeds reserved_hours 24`},
		{"bad dns type", `"type": "TXT"`, `"type": "SRV"`, `dns[0].type: "SRV" is not one of TXT, CNAME, MX, A, AAAA`},
		{"policy without a domain", `"domain": "brand-a.example", "policy"`, `"domain": "", "policy"`, `mta_sts[0].domain: required`},
		{"policy status not HTTP", `"status": 200`, `"status": 1000`, `mta_sts[0].status: 1000 is not an HTTP status`},
		{"empty signed zone", `"dnssec": ["brand-a.example"]`, `"dnssec": [""]`, `dnssec[0]: required`},
		{"missing tenant name", `"name": "Brand A", `, ``, `tenants[0].name: required`},
		{"bad decision", `"decision": "Approve"`, `"decision": "Maybe"`, `access_reviews[0].decisions[0].decision`},
		{"bad rates base", `"base": "USD"`, `"base": "usd"`, `exchange_rates.base: "usd" is not an ISO 4217 currency code such as USD`},
		{"bad rate date", `"2026-11-02": {"EUR"`, `"2026-11-31": {"EUR"`, `exchange_rates.rates.2026-11-31: "2026-11-31" is not a date (YYYY-MM-DD)`},
		{"bad rate currency", `{"EUR": 0.9123}`, `{"EURO": 0.9123}`, `exchange_rates.rates.2026-11-02: "EURO" is not an ISO 4217 currency code such as USD`},
		{"zero rate", `{"EUR": 0.9123}`, `{"EUR": 0}`, `exchange_rates.rates.2026-11-02.EUR: 0 is not a positive rate`},
		{"negative rate", `{"EUR": 0.9123}`, `{"EUR": -1.1}`, `exchange_rates.rates.2026-11-02.EUR: -1.1 is not a positive rate`},
		{"assessment key not a GUID", `"name": "4fb67663-9ab9-475d-b026-8c544cced439"`, `"name": "tls"`, `security_assessments[0].name: "tls" is not a GUID`},
		{"bad assessment status", `"status": "Unhealthy"`, `"status": "Broken"`, `security_assessments[0].status: "Broken" is not one of Healthy, Unhealthy, NotApplicable`},
		{"assessment of no subscription", `"subscription_id": "sub-a", "resource_id": "r1"`, `"subscription_id": "sub-z", "resource_id": "r1"`, `security_assessments[0].subscription_id: "sub-z" is not a subscription`},
		{"score over max", `"current": 1.5, "max": 4`, `"current": 4.5, "max": 4`, `secure_scores[0].controls[0].current: 4.5 is not between 0 and max (4)`},
		{"definition id of no scope", `"id": "/providers/Microsoft.Authorization/policyDefinitions/p1"`, `"id": "p1"`, `policy_definitions[0].id: "p1" is neither`},
		{"custom definition of no subscription", `/subscriptions/sub-a/providers/Microsoft.Authorization`, `/subscriptions/sub-q/providers/Microsoft.Authorization`, `policy_definitions[1].id: "sub-q" is not a subscription of any tenant`},
		{"duplicate definition", `/subscriptions/sub-a/providers/Microsoft.Authorization/policyDefinitions/owner-tag`, `/providers/Microsoft.Authorization/policyDefinitions/P1`, `policy_definitions[1].id: "/providers/Microsoft.Authorization/policyDefinitions/P1" is also policy_definitions[0]'s`},
		{"definition without a name", `"display_name": "Owner tag"`, `"display_name": ""`, `policy_definitions[1].display_name: required`},
		{"bad definition severity", `"severity": "High", "remediation"`, `"severity": "Severe", "remediation"`, `policy_definitions[0].severity`},
		{"bad policy state", `"state": "enabled"`, `"state": "on"`, `conditional_access_policies[0].state: "on" is not one of enabled, disabled, enabledForReportingButNotEnforced`},
		{"policy of no tenant", `"directory_tenant_id": "dir-a", "id": "ca-1"`, `"directory_tenant_id": "dir-z", "id": "ca-1"`, `conditional_access_policies[0].directory_tenant_id: "dir-z" is not the directory id`},
		{"policy excluding a stranger", `"exclude_users": ["alice@brand-a.example"]`, `"exclude_users": ["bob@brand-a.example"]`, `conditional_access_policies[0].exclude_users[0]: "bob@brand-a.example" is not All, None, GuestsOrExternalUsers or a user of the directory`},
		{"policy role not a GUID", `"include_roles": ["62e90394-69f5-4237-9190-012177145e10"]`, `"include_roles": ["Global Administrator"]`, `conditional_access_policies[0].include_roles[0]: "Global Administrator" is not a role template id`},
		{"bad client app", `"client_app_types": ["browser"]`, `"client_app_types": ["imap"]`, `conditional_access_policies[0].client_app_types[0]: "imap" is not one of`},
		{"no grant control", `"grant_controls": ["mfa"]`, `"grant_controls": []`, `conditional_access_policies[0].grant_controls: a policy needs at least one grant control`},
		{"bad grant control", `"grant_controls": ["mfa"]`, `"grant_controls": ["sms"]`, `conditional_access_policies[0].grant_controls[0]: "sms" is not one of`},
		{"bad grant operator", `"grant_operator": "OR"`, `"grant_operator": "XOR"`, `conditional_access_policies[0].grant_operator: "XOR" is not one of AND, OR`},
		{"assignment of a stranger", `"principal": "alice@brand-a.example", "kind"`, `"principal": "bob@brand-a.example", "kind"`, `role_assignments[0].principal: "bob@brand-a.example" is not a user of the directory nor group:<name>`},
		{"assignment of a nameless group", `"principal": "group:grp-ops"`, `"principal": "group:"`, `role_assignments[1].principal: required`},
		{"bad assignment kind", `"kind": "eligible"`, `"kind": "permanent"`, `role_assignments[0].kind: "permanent" is not one of active, eligible`},
		{"assignment role not a GUID", `"role_template_id": "e8611ab8-c189-46e8-94e1-60213ab1f814"`, `"role_template_id": "PRA"`, `role_assignments[1].role_template_id: "PRA" is not a role template id`},
		{"bad risk level", `"risk_level": "high"`, `"risk_level": "severe"`, `users[0].risk_level: "severe" is not one of low, medium, high`},
		{"risk level without a state", `, "risk_state": "atRisk"`, ``, `users[0].risk_state: "" is not one of atRisk`},
		{"bad credential type", `"type": "password", "name": "ci"`, `"type": "token", "name": "ci"`, `applications[0].credentials[0].type: "token" is not one of password, certificate`},
		{"bad credential end", `"end_date": "2026-12-01"`, `"end_date": "soon"`, `applications[0].credentials[0].end_date: "soon" is not a date`},
		{"bad review end", `"status": "InProgress", "decisions"`, `"status": "InProgress", "end_date": "soon", "decisions"`, `access_reviews[0].end_date: "soon" is not a date`},
		{"nameless application", `"name": "Payroll sync", `, ``, `applications[0].name: required`},
		{"wrong type", `"cost": 12.34`, `"cost": "twelve"`, `costs.cost: line 8, column`},
		{"syntax", `"dns": [`, `"dns": [[`, `line 23, column`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := strings.Replace(valid, c.replace, c.with, 1)
			if doc == valid {
				t.Fatalf("replacement %q did not apply", c.replace)
			}
			_, err := Parse([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %q, got %v", c.want, err)
			}
		})
	}
}

func TestDuplicatesAndAllProblemsReported(t *testing.T) {
	doc := `{"tenants": [
	  {"name": "A", "directory_tenant_id": "d", "subscriptions": [{"id": "s"}]},
	  {"name": "B", "directory_tenant_id": "d", "subscriptions": [{"id": "s"}]},
	  {"name": "C", "directory_tenant_id": "e", "subscriptions": []}]}`
	_, err := Parse([]byte(doc))
	if err == nil {
		t.Fatal("duplicates accepted")
	}
	for _, want := range []string{
		`tenants[1].directory_tenant_id: "d" is also tenants[0]'s`,
		`tenants[1].subscriptions[0].id: "s" is also a subscription of tenants[0]`,
		`tenants[2].subscriptions: a tenant needs at least one subscription`,
		"(3 problems)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "world.json")
	if err := os.WriteFile(path, []byte(`{"costs": [{"subscription_id": "nope", "date": "2026-01-01", "service": "VM"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "costs[0].subscription_id") {
		t.Fatalf("got %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("missing file accepted")
	}
}

// TestUserAddresses: an address is unique within a directory, not across
// directories.
func TestUserAddresses(t *testing.T) {
	tenants := `"tenants": [{"name": "A", "directory_tenant_id": "d", "subscriptions": [{"id": "s"}]},
	  {"name": "B", "directory_tenant_id": "e", "subscriptions": [{"id": "t"}]}]`
	if _, err := Parse([]byte(`{` + tenants + `, "users": [{"email": "x@a.example", "directory_tenant_id": "d"},
	  {"email": "X@a.example", "directory_tenant_id": "e"}]}`)); err != nil {
		t.Fatalf("one address in two directories refused: %v", err)
	}
	_, err := Parse([]byte(`{` + tenants + `, "users": [{"email": "x@a.example", "directory_tenant_id": "d"},
	  {"email": "X@a.example", "directory_tenant_id": "d"}]}`))
	if err == nil || !strings.Contains(err.Error(), `users[1].email: "X@a.example" is also users[0]'s in directory d`) {
		t.Fatalf("one address twice in a directory: %v", err)
	}
}

// TestConsent: a tenant has consented unless its "consented" is false; a
// directory the world does not hold has not.
func TestConsent(t *testing.T) {
	w, err := Parse([]byte(`{"tenants": [{"name": "A", "directory_tenant_id": "dir-a", "subscriptions": [{"id": "sub-a", "name": "A"}]},
		{"name": "B", "directory_tenant_id": "dir-b", "subscriptions": [{"id": "sub-b", "name": "B"}], "consented": false},
		{"name": "C", "directory_tenant_id": "dir-c", "subscriptions": [{"id": "sub-c", "name": "C"}], "consented": true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]bool{"DIR-A": true, "dir-b": false, "dir-c": true, "dir-x": false} {
		if got := w.Consents(dir); got != want {
			t.Errorf("Consents(%s) = %v, want %v", dir, got, want)
		}
	}
}
