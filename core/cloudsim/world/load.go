package world

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/mail"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// DateLayout is the layout of every plain date in a world.
const DateLayout = "2006-01-02"

// maxReported bounds the problems one load reports, so a broken generated
// file gives a readable answer.
const maxReported = 50

// Load reads and validates a world file. Every problem is reported with the
// path of the entry it is in, e.g. `costs[3].date: "2026-13-01" is not a
// date (YYYY-MM-DD)`.
func Load(path string) (*World, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	w, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("world file %s: %w", path, err)
	}
	return w, nil
}

// Parse decodes and validates a world document.
func Parse(b []byte) (*World, error) {
	var w World
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&w); err != nil {
		return nil, describeJSONError(b, err)
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &w, nil
}

func describeJSONError(b []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := position(b, syn.Offset)
		return fmt.Errorf("line %d, column %d: %v", line, col, syn)
	case errors.As(err, &typ):
		line, col := position(b, typ.Offset)
		return fmt.Errorf("%s: line %d, column %d: expected %s, found %s", typ.Field, line, col, typ.Type, typ.Value)
	}
	return err
}

func position(b []byte, offset int64) (line, col int) {
	if offset > int64(len(b)) {
		offset = int64(len(b))
	}
	before := b[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// problems collects validation errors with their paths.
type problems struct{ list []string }

func (p *problems) add(path, format string, args ...any) {
	p.list = append(p.list, path+": "+fmt.Sprintf(format, args...))
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	shown := p.list
	more := ""
	if len(shown) > maxReported {
		more = fmt.Sprintf("\n… and %d more", len(shown)-maxReported)
		shown = shown[:maxReported]
	}
	return fmt.Errorf("invalid world (%d problems):\n%s%s", len(p.list), strings.Join(shown, "\n"), more)
}

func (p *problems) required(path, value string) bool {
	if strings.TrimSpace(value) == "" {
		p.add(path, "required")
		return false
	}
	return true
}

func (p *problems) date(path, value string) {
	if !p.required(path, value) {
		return
	}
	if _, err := time.Parse(DateLayout, value); err != nil {
		p.add(path, "%q is not a date (YYYY-MM-DD)", value)
	}
}

func (p *problems) oneOf(path, value string, allowed ...string) {
	if !slices.Contains(allowed, value) {
		p.add(path, "%q is not one of %s", value, strings.Join(allowed, ", "))
	}
}

// policyDefinitionPattern matches a built-in policy definition's id, or a
// subscription's custom one's with the subscription in group 1.
var policyDefinitionPattern = regexp.MustCompile(`(?i)^(?:/subscriptions/([^/]+))?/providers/Microsoft\.Authorization/policyDefinitions/[^/]+$`)

// Validate checks every entry and the references between them: costs,
// policy states, resources and quotas name a subscription of a tenant;
// policy definitions (one per id) a subscription when custom;
// users and access reviews a tenant; reservations, their purchases and
// recommendations, savings plans and benefit recommendations a billing
// account; Conditional Access policies, role assignments and
// applications a tenant, each user they name one of its directory; security assessments (whose name is a GUID) and secure scores
// (one per subscription, each control's current between 0 and its max)
// a subscription; exchange rates are positive, by date and currency code.
func (w *World) Validate() error {
	var p problems
	dirs := map[string]int{}
	subs := map[string]int{}
	billing := map[string]bool{}
	for i, t := range w.Tenants {
		at := fmt.Sprintf("tenants[%d]", i)
		p.required(at+".name", t.Name)
		if p.required(at+".directory_tenant_id", t.DirectoryTenantID) {
			if j, dup := dirs[t.DirectoryTenantID]; dup {
				p.add(at+".directory_tenant_id", "%q is also tenants[%d]'s", t.DirectoryTenantID, j)
			}
			dirs[t.DirectoryTenantID] = i
		}
		if len(t.Subscriptions) == 0 {
			p.add(at+".subscriptions", "a tenant needs at least one subscription")
		}
		for k, s := range t.Subscriptions {
			sat := fmt.Sprintf("%s.subscriptions[%d]", at, k)
			if p.required(sat+".id", s.ID) {
				if j, dup := subs[s.ID]; dup {
					p.add(sat+".id", "%q is also a subscription of tenants[%d]", s.ID, j)
				}
				subs[s.ID] = i
			}
		}
		if t.BillingAccountID != nil {
			if p.required(at+".billing_account_id", *t.BillingAccountID) {
				billing[*t.BillingAccountID] = true
			}
		}
		for k, d := range t.Domains {
			p.required(fmt.Sprintf("%s.domains[%d]", at, k), d)
		}
	}
	sub := func(path, id string) {
		if p.required(path, id) {
			if _, ok := subs[id]; !ok {
				p.add(path, "%q is not a subscription of any tenant", id)
			}
		}
	}
	dir := func(path, id string) {
		if p.required(path, id) {
			if _, ok := dirs[id]; !ok {
				p.add(path, "%q is not the directory id of any tenant", id)
			}
		}
	}
	emails := map[string]int{}
	for i, u := range w.Users {
		at := fmt.Sprintf("users[%d]", i)
		if p.required(at+".email", u.Email) {
			if _, err := mail.ParseAddress(u.Email); err != nil {
				p.add(at+".email", "%q is not an e-mail address", u.Email)
			}
			// An address is unique in a directory; another directory may
			// have a user of the same address.
			key := strings.ToLower(u.DirectoryTenantID + "/" + u.Email)
			if j, dup := emails[key]; dup {
				p.add(at+".email", "%q is also users[%d]'s in directory %s", u.Email, j, u.DirectoryTenantID)
			}
			emails[key] = i
		}
		dir(at+".directory_tenant_id", u.DirectoryTenantID)
		if u.UserType != "" {
			p.oneOf(at+".user_type", u.UserType, "Member", "Guest")
		}
		if u.LastSignIn != "" {
			p.date(at+".last_sign_in", u.LastSignIn)
		}
		if u.RiskLevel != "" || u.RiskState != "" {
			p.oneOf(at+".risk_level", u.RiskLevel, "low", "medium", "high")
			p.oneOf(at+".risk_state", u.RiskState, "atRisk", "confirmedCompromised", "remediated", "dismissed", "confirmedSafe")
		}
	}
	for i, c := range w.Costs {
		at := fmt.Sprintf("costs[%d]", i)
		sub(at+".subscription_id", c.SubscriptionID)
		p.date(at+".date", c.Date)
		p.required(at+".service", c.Service)
		if c.Currency != "" && len(c.Currency) != 3 {
			p.add(at+".currency", "%q is not a three-letter currency code", c.Currency)
		}
	}
	for i, s := range w.PolicyStates {
		at := fmt.Sprintf("policy_states[%d]", i)
		sub(at+".subscription_id", s.SubscriptionID)
		p.required(at+".policy_definition_id", s.PolicyDefinitionID)
		p.required(at+".policy_name", s.PolicyName)
		p.oneOf(at+".compliance_state", s.ComplianceState, "Compliant", "NonCompliant", "Exempt", "Unknown")
		if s.Severity != "" {
			p.oneOf(at+".severity", s.Severity, "High", "Medium", "Low")
		}
		if s.Timestamp != "" {
			if _, err := time.Parse(time.RFC3339, s.Timestamp); err != nil {
				p.add(at+".timestamp", "%q is not an RFC 3339 date-time", s.Timestamp)
			}
		}
	}
	definitions := map[string]int{}
	for i, d := range w.PolicyDefinitions {
		at := fmt.Sprintf("policy_definitions[%d]", i)
		if p.required(at+".id", d.ID) {
			m := policyDefinitionPattern.FindStringSubmatch(d.ID)
			switch {
			case m == nil:
				p.add(at+".id", "%q is neither /providers/Microsoft.Authorization/policyDefinitions/{name} nor "+
					"/subscriptions/{id}/providers/Microsoft.Authorization/policyDefinitions/{name}", d.ID)
			case m[1] != "":
				sub(at+".id", m[1])
			}
			if j, dup := definitions[strings.ToLower(d.ID)]; dup {
				p.add(at+".id", "%q is also policy_definitions[%d]'s", d.ID, j)
			}
			definitions[strings.ToLower(d.ID)] = i
		}
		p.required(at+".display_name", d.DisplayName)
		if d.Severity != "" {
			p.oneOf(at+".severity", d.Severity, "High", "Medium", "Low")
		}
	}
	for i, a := range w.SecurityAssessments {
		at := fmt.Sprintf("security_assessments[%d]", i)
		sub(at+".subscription_id", a.SubscriptionID)
		p.required(at+".resource_id", a.ResourceID)
		if p.required(at+".name", a.Name) {
			if _, err := uuid.Parse(a.Name); err != nil {
				p.add(at+".name", "%q is not a GUID", a.Name)
			}
		}
		p.required(at+".display_name", a.DisplayName)
		p.oneOf(at+".status", a.Status, "Healthy", "Unhealthy", "NotApplicable")
		p.oneOf(at+".severity", a.Severity, "High", "Medium", "Low")
	}
	scored := map[string]int{}
	for i, s := range w.SecureScores {
		at := fmt.Sprintf("secure_scores[%d]", i)
		sub(at+".subscription_id", s.SubscriptionID)
		if j, dup := scored[strings.ToLower(s.SubscriptionID)]; dup {
			p.add(at+".subscription_id", "%q is also secure_scores[%d]'s", s.SubscriptionID, j)
		}
		scored[strings.ToLower(s.SubscriptionID)] = i
		for k, c := range s.Controls {
			cat := fmt.Sprintf("%s.controls[%d]", at, k)
			p.required(cat+".name", c.Name)
			p.required(cat+".display_name", c.DisplayName)
			if c.Max < 0 || c.Current < 0 || c.Current > float64(c.Max) {
				p.add(cat+".current", "%v is not between 0 and max (%d)", c.Current, c.Max)
			}
			if c.HealthyResources < 0 || c.UnhealthyResources < 0 || c.NotApplicableResources < 0 {
				p.add(cat, "resource counts must not be negative")
			}
		}
	}
	for i, r := range w.Resources {
		at := fmt.Sprintf("resources[%d]", i)
		sub(at+".subscription_id", r.SubscriptionID)
		p.required(at+".id", r.ID)
		p.required(at+".type", r.Type)
	}
	for i, q := range w.Quotas {
		at := fmt.Sprintf("quotas[%d]", i)
		sub(at+".subscription_id", q.SubscriptionID)
		p.required(at+".location", q.Location)
		p.oneOf(at+".provider", q.Provider, "compute", "network")
		p.required(at+".name", q.Name)
		if q.Limit < 0 || q.CurrentValue < 0 {
			p.add(at, "current_value and limit must not be negative")
		}
	}
	for i, r := range w.Reservations {
		at := fmt.Sprintf("reservations[%d]", i)
		if p.required(at+".billing_account_id", r.BillingAccountID) && !billing[r.BillingAccountID] {
			p.add(at+".billing_account_id", "%q is not the billing account of any tenant", r.BillingAccountID)
		}
		p.required(at+".reservation_id", r.ReservationID)
		p.date(at+".date", r.Date)
		if r.UsedHours > r.ReservedHours {
			p.add(at+".used_hours", "%g exceeds reserved_hours %g", r.UsedHours, r.ReservedHours)
		}
	}
	for i, r := range w.ReservationPurchases {
		at := fmt.Sprintf("reservation_purchases[%d]", i)
		if p.required(at+".billing_account_id", r.BillingAccountID) && !billing[r.BillingAccountID] {
			p.add(at+".billing_account_id", "%q is not the billing account of any tenant", r.BillingAccountID)
		}
		p.required(at+".reservation_id", r.ReservationID)
		p.required(at+".sku", r.SKU)
		p.oneOf(at+".term", r.Term, "P1Y", "P3Y", "P5Y")
		p.date(at+".purchase_date", r.PurchaseDate)
		p.required(at+".currency", r.Currency)
		if r.Quantity <= 0 {
			p.add(at+".quantity", "%g is not a positive quantity", r.Quantity)
		}
		if r.Amount < 0 {
			p.add(at+".amount", "%g is negative", r.Amount)
		}
		if r.InstanceFlexibilityRatio <= 0 {
			p.add(at+".instance_flexibility_ratio", "%g is not a positive ratio", r.InstanceFlexibilityRatio)
		}
	}
	for i, r := range w.ReservationRecommendations {
		at := fmt.Sprintf("reservation_recommendations[%d]", i)
		if p.required(at+".billing_account_id", r.BillingAccountID) && !billing[r.BillingAccountID] {
			p.add(at+".billing_account_id", "%q is not the billing account of any tenant", r.BillingAccountID)
		}
		p.required(at+".sku", r.SKU)
		p.oneOf(at+".term", r.Term, "P1Y", "P3Y")
		p.oneOf(at+".scope", r.Scope, "Single", "Shared")
		p.required(at+".resource_type", r.ResourceType)
		if !slices.Contains([]int{7, 30, 60}, r.LookBackDays) {
			p.add(at+".look_back_days", "%d is not one of 7, 30, 60", r.LookBackDays)
		}
		if r.RecommendedQuantity <= 0 {
			p.add(at+".recommended_quantity", "%g is not a positive quantity", r.RecommendedQuantity)
		}
		p.required(at+".currency", r.Currency)
		p.date(at+".first_usage_date", r.FirstUsageDate)
	}
	orders := map[string]int{}
	for i, sp := range w.SavingsPlans {
		at := fmt.Sprintf("savings_plans[%d]", i)
		if p.required(at+".billing_account_id", sp.BillingAccountID) && !billing[sp.BillingAccountID] {
			p.add(at+".billing_account_id", "%q is not the billing account of any tenant", sp.BillingAccountID)
		}
		if p.required(at+".savings_plan_order_id", sp.SavingsPlanOrderID) {
			if j, dup := orders[strings.ToLower(sp.SavingsPlanOrderID)]; dup {
				p.add(at+".savings_plan_order_id", "%q is also savings_plans[%d]'s", sp.SavingsPlanOrderID, j)
			}
			orders[strings.ToLower(sp.SavingsPlanOrderID)] = i
		}
		p.required(at+".savings_plan_id", sp.SavingsPlanID)
		p.oneOf(at+".term", sp.Term, "P1Y", "P3Y")
		p.date(at+".purchase_date", sp.PurchaseDate)
		p.required(at+".currency", sp.Currency)
		if sp.HourlyCommitment <= 0 {
			p.add(at+".hourly_commitment", "%g is not a positive amount", sp.HourlyCommitment)
		}
		for k, d := range sp.Utilization {
			dat := fmt.Sprintf("%s.utilization[%d]", at, k)
			p.date(dat+".date", d.Date)
			if d.MinUtilization < 0 || d.MinUtilization > d.AvgUtilization || d.AvgUtilization > d.MaxUtilization || d.MaxUtilization > 100 {
				p.add(dat, "utilisation must be 0 <= min_utilization <= avg_utilization <= max_utilization <= 100")
			}
		}
	}
	for i, r := range w.BenefitRecommendations {
		at := fmt.Sprintf("benefit_recommendations[%d]", i)
		if p.required(at+".billing_account_id", r.BillingAccountID) && !billing[r.BillingAccountID] {
			p.add(at+".billing_account_id", "%q is not the billing account of any tenant", r.BillingAccountID)
		}
		p.oneOf(at+".term", r.Term, "P1Y", "P3Y")
		if !slices.Contains([]int{7, 30, 60}, r.LookBackDays) {
			p.add(at+".look_back_days", "%d is not one of 7, 30, 60", r.LookBackDays)
		}
		if r.CommitmentAmount <= 0 {
			p.add(at+".commitment_amount", "%g is not a positive amount", r.CommitmentAmount)
		}
		p.required(at+".currency", r.Currency)
		p.date(at+".first_consumption_date", r.FirstConsumptionDate)
		p.date(at+".last_consumption_date", r.LastConsumptionDate)
	}
	for i, r := range w.AccessReviews {
		at := fmt.Sprintf("access_reviews[%d]", i)
		dir(at+".directory_tenant_id", r.DirectoryTenantID)
		p.required(at+".id", r.ID)
		if r.EndDate != "" {
			p.date(at+".end_date", r.EndDate)
		}
		for k, d := range r.Decisions {
			p.oneOf(fmt.Sprintf("%s.decisions[%d].decision", at, k), d.Decision, "Approve", "Deny", "NotReviewed", "DontKnow")
		}
	}
	policies := map[string]int{}
	for i, c := range w.ConditionalAccessPolicies {
		at := fmt.Sprintf("conditional_access_policies[%d]", i)
		dir(at+".directory_tenant_id", c.DirectoryTenantID)
		if p.required(at+".id", c.ID) {
			key := strings.ToLower(c.DirectoryTenantID + "/" + c.ID)
			if j, dup := policies[key]; dup {
				p.add(at+".id", "%q is also conditional_access_policies[%d]'s", c.ID, j)
			}
			policies[key] = i
		}
		p.required(at+".name", c.Name)
		p.oneOf(at+".state", c.State, "enabled", "disabled", "enabledForReportingButNotEnforced")
		for _, l := range []struct {
			field string
			users []string
		}{{"include_users", c.IncludeUsers}, {"exclude_users", c.ExcludeUsers}} {
			for k, u := range l.users {
				if slices.Contains([]string{"All", "None", "GuestsOrExternalUsers"}, u) {
					continue
				}
				if _, ok := emails[strings.ToLower(c.DirectoryTenantID+"/"+u)]; !ok {
					p.add(fmt.Sprintf("%s.%s[%d]", at, l.field, k), "%q is not All, None, GuestsOrExternalUsers or a user of the directory", u)
				}
			}
		}
		for k, r := range c.IncludeRoles {
			if _, err := uuid.Parse(r); err != nil {
				p.add(fmt.Sprintf("%s.include_roles[%d]", at, k), "%q is not a role template id (a GUID)", r)
			}
		}
		for k, a := range c.ClientAppTypes {
			p.oneOf(fmt.Sprintf("%s.client_app_types[%d]", at, k), a, "all", "browser", "mobileAppsAndDesktopClients", "exchangeActiveSync", "other")
		}
		if len(c.GrantControls) == 0 {
			p.add(at+".grant_controls", "a policy needs at least one grant control")
		}
		for k, g := range c.GrantControls {
			p.oneOf(fmt.Sprintf("%s.grant_controls[%d]", at, k), g, "block", "mfa", "compliantDevice", "domainJoinedDevice",
				"approvedApplication", "compliantApplication", "passwordChange")
		}
		if c.GrantOperator != "" {
			p.oneOf(at+".grant_operator", c.GrantOperator, "AND", "OR")
		}
	}
	for i, a := range w.RoleAssignments {
		at := fmt.Sprintf("role_assignments[%d]", i)
		dir(at+".directory_tenant_id", a.DirectoryTenantID)
		if a.RoleTemplateID != "" {
			if _, err := uuid.Parse(a.RoleTemplateID); err != nil {
				p.add(at+".role_template_id", "%q is not a role template id (a GUID)", a.RoleTemplateID)
			}
		}
		if group, ok := strings.CutPrefix(a.Principal, "group:"); ok {
			p.required(at+".principal", group)
		} else if p.required(at+".principal", a.Principal) {
			if _, ok := emails[strings.ToLower(a.DirectoryTenantID+"/"+a.Principal)]; !ok {
				p.add(at+".principal", "%q is not a user of the directory nor group:<name>", a.Principal)
			}
		}
		p.oneOf(at+".kind", a.Kind, "active", "eligible")
	}
	for i, a := range w.Applications {
		at := fmt.Sprintf("applications[%d]", i)
		dir(at+".directory_tenant_id", a.DirectoryTenantID)
		p.required(at+".name", a.Name)
		for k, c := range a.Credentials {
			cat := fmt.Sprintf("%s.credentials[%d]", at, k)
			p.oneOf(cat+".type", c.Type, "password", "certificate")
			p.date(cat+".end_date", c.EndDate)
		}
	}
	for i, r := range w.DNS {
		at := fmt.Sprintf("dns[%d]", i)
		p.required(at+".name", r.Name)
		p.oneOf(at+".type", r.Type, "TXT", "CNAME", "MX", "A", "AAAA", "PTR")
		p.required(at+".value", r.Value)
	}
	for i, d := range w.DNSSEC {
		p.required(fmt.Sprintf("dnssec[%d]", i), d)
	}
	for i, m := range w.MTASTS {
		at := fmt.Sprintf("mta_sts[%d]", i)
		p.required(at+".domain", m.Domain)
		if m.Status != 0 && (m.Status < 100 || m.Status > 599) {
			p.add(at+".status", "%d is not an HTTP status", m.Status)
		}
	}
	for i, m := range w.Mailboxes {
		at := fmt.Sprintf("mailboxes[%d]", i)
		p.required(at+".address", m.Address)
		dir(at+".directory_tenant_id", m.DirectoryTenantID)
		for k, msg := range m.Messages {
			mat := fmt.Sprintf("%s.messages[%d]", at, k)
			p.required(mat+".id", msg.ID)
			if _, err := time.Parse(time.RFC3339, msg.Received); err != nil {
				p.add(mat+".received", "%q is not an RFC 3339 time", msg.Received)
			}
			for a, att := range msg.Attachments {
				aat := fmt.Sprintf("%s.attachments[%d]", mat, a)
				p.required(aat+".name", att.Name)
				if _, err := base64.StdEncoding.DecodeString(att.Base64); err != nil {
					p.add(aat+".base64", "is not base64: %v", err)
				}
			}
		}
	}
	if x := w.ExchangeRates; x != nil {
		p.currency("exchange_rates.base", x.Base)
		for _, date := range slices.Sorted(maps.Keys(x.Rates)) {
			at := "exchange_rates.rates." + date
			if _, err := time.Parse(DateLayout, date); err != nil {
				p.add(at, "%q is not a date (YYYY-MM-DD)", date)
			}
			for _, code := range slices.Sorted(maps.Keys(x.Rates[date])) {
				if p.currency(at, code) && !(x.Rates[date][code] > 0) {
					p.add(at+"."+code, "%g is not a positive rate", x.Rates[date][code])
				}
			}
		}
	}
	return p.err()
}

// currency checks an ISO 4217 code's form: three capital letters.
func (p *problems) currency(path, code string) bool {
	for _, c := range code {
		if c < 'A' || c > 'Z' {
			p.add(path, "%q is not an ISO 4217 currency code such as USD", code)
			return false
		}
	}
	if len(code) != 3 {
		p.add(path, "%q is not an ISO 4217 currency code such as USD", code)
		return false
	}
	return true
}
