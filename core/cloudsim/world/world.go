// Package world is the simulated cloud's model: the tenants, users, costs,
// policy states, resources, quotas, reservations, access reviews, DNS
// records and mailboxes it serves, and the daily exchange rates of its
// currencies. A world comes from a JSON world file or from the
// deterministic built-in demo generator. Dates are YYYY-MM-DD.
//
// Beyond the fields the contract names, a tenant may carry "consented":
// false, for a directory where Steward's application has no (or no
// longer) admin consent; see Tenant.Consented. Worlds without it behave
// as before.
package world

import (
	"strings"
	"time"
)

// World is the whole simulated estate. Every list is optional; fields
// beyond these are allowed in a file and ignored.
type World struct {
	Tenants      []Tenant      `json:"tenants"`
	Users        []User        `json:"users"`
	Costs        []Cost        `json:"costs"`
	PolicyStates []PolicyState `json:"policy_states"`
	// PolicyDefinitions are the policy definitions Microsoft.Authorization
	// serves beyond those the policy states imply (see PolicyDefinition).
	PolicyDefinitions []PolicyDefinition `json:"policy_definitions"`
	Resources         []Resource         `json:"resources"`
	Quotas            []Quota            `json:"quotas"`
	Reservations      []Reservation      `json:"reservations"`
	// ReservationPurchases and ReservationRecommendations are the
	// reservations' purchases and the provider's advice on what to buy.
	ReservationPurchases       []ReservationPurchase       `json:"reservation_purchases"`
	ReservationRecommendations []ReservationRecommendation `json:"reservation_recommendations"`
	// SavingsPlans and BenefitRecommendations are the savings plans of
	// billing accounts, with their daily utilisation, and the provider's
	// advice on what hourly commitment to buy.
	SavingsPlans           []SavingsPlan           `json:"savings_plans"`
	BenefitRecommendations []BenefitRecommendation `json:"benefit_recommendations"`
	AccessReviews          []AccessReview          `json:"access_reviews"`
	// ConditionalAccessPolicies are the directories' Conditional Access
	// policies.
	ConditionalAccessPolicies []ConditionalAccessPolicy `json:"conditional_access_policies"`
	// RoleAssignments are directory roles given through Privileged
	// Identity Management, beside the Global Administrator role every
	// privileged user holds.
	RoleAssignments []RoleAssignment `json:"role_assignments"`
	// Applications are the directories' application registrations and
	// service principals with their credentials.
	Applications []Application `json:"applications"`
	DNS          []DNSRecord   `json:"dns"`
	// DNSSEC are the tenant domains whose zones are signed: the simulated
	// DNS sets the AD bit on their answers, as a validating resolver
	// does, for clients that ask for it.
	DNSSEC []string `json:"dnssec"`
	// MTASTS are the MTA-STS policies the simulated cloud serves at
	// https://mta-sts.<domain>/.well-known/mta-sts.txt.
	MTASTS []MTASTSPolicy `json:"mta_sts"`
	// SecurityAssessments and SecureScores are Defender for Cloud's
	// assessments of resources and each subscription's secure score by
	// security control.
	SecurityAssessments []SecurityAssessment `json:"security_assessments"`
	SecureScores        []SecureScore        `json:"secure_scores"`
	// ExchangeRates are the daily reference rates the simulated cloud's
	// exchange rate service answers with; absent, it knows none.
	ExchangeRates *ExchangeRates `json:"exchange_rates,omitempty"`
	// Mailboxes are the directories' Exchange Online mailboxes Graph
	// serves the messages of (see Mailbox).
	Mailboxes []Mailbox `json:"mailboxes,omitempty"`
}

// ExchangeRates are daily reference rates against one base currency, as a
// central bank publishes them: on working days only, none on weekends and
// holidays.
type ExchangeRates struct {
	// Base is the ISO 4217 code each rate is quoted against.
	Base string `json:"base"`
	// Rates are by date (YYYY-MM-DD), then by ISO 4217 code: units of
	// that currency per 1 Base.
	Rates map[string]map[string]float64 `json:"rates"`
}

// Tenant is a cloud directory tenant of one brand.
type Tenant struct {
	Name              string         `json:"name"`
	DirectoryTenantID string         `json:"directory_tenant_id"`
	Subscriptions     []Subscription `json:"subscriptions"`
	BillingAccountID  *string        `json:"billing_account_id"`
	AccessGroups      []string       `json:"access_groups"`
	Delegated         bool           `json:"delegated"`
	Domains           []string       `json:"domains"`
	// Brand names the brand the tenant belongs to, if any: tenants of one
	// brand name, whatever its case, are one brand. A development host
	// registers it with the tenant (host/app).
	Brand string `json:"brand,omitempty"`
	// Consented is whether Steward's multi-tenant application has admin
	// consent in the tenant's directory; absent means it has. A tenant
	// registered without delegation is read with the application's own
	// tokens of its directory, which need that consent: without it the
	// identity provider refuses the application a token there (as Entra
	// ID refuses an application with no service principal in the
	// directory), and a token issued before consent was withdrawn reads
	// nothing (Resource Manager lists none of the directory's
	// subscriptions and refuses each one; Graph refuses the directory).
	// Lighthouse delegation does not depend on it: the managing tenant's
	// token reaches a delegated tenant's subscriptions either way.
	Consented *bool `json:"consented,omitempty"`
	// SecurityDefaults is whether the directory enforces Entra ID's
	// security defaults (MFA registration for everyone, MFA for admins,
	// legacy authentication blocked); absent means it does not.
	SecurityDefaults bool `json:"security_defaults,omitempty"`
}

// HasConsent reports whether Steward's application has admin consent in
// the tenant's directory (see Consented).
func (t Tenant) HasConsent() bool { return t.Consented == nil || *t.Consented }

// Consents reports whether the directory is a tenant of the world in whose
// directory Steward's application has admin consent. Case does not
// matter, as for directory tenant ids everywhere.
func (w *World) Consents(directoryTenantID string) bool {
	for _, t := range w.Tenants {
		if strings.EqualFold(t.DirectoryTenantID, directoryTenantID) {
			return t.HasConsent()
		}
	}
	return false
}

// Has reports whether the directory is a tenant of the world; case does
// not matter.
func (w *World) Has(directoryTenantID string) bool {
	for _, t := range w.Tenants {
		if strings.EqualFold(t.DirectoryTenantID, directoryTenantID) {
			return true
		}
	}
	return false
}

// Subscription is an Azure subscription of a tenant.
type Subscription struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// User is a directory user who can sign in through the simulated IdP.
type User struct {
	Email             string   `json:"email"`
	Name              string   `json:"name"`
	DirectoryTenantID string   `json:"directory_tenant_id"`
	Roles             []string `json:"roles"`
	Groups            []string `json:"groups"`
	UserType          string   `json:"user_type"`
	AccountEnabled    *bool    `json:"account_enabled"`
	IsPrivileged      bool     `json:"is_privileged"`
	MFARegistered     bool     `json:"mfa_registered"`
	MFAMethods        []string `json:"mfa_methods"`
	LastSignIn        string   `json:"last_sign_in"`
	// RiskLevel and RiskState are Identity Protection's judgement of the
	// user: a level of low, medium or high, and a state of atRisk,
	// confirmedCompromised, remediated, dismissed or confirmedSafe.
	// Absent, the user was never at risk.
	RiskLevel string `json:"risk_level,omitempty"`
	RiskState string `json:"risk_state,omitempty"`
}

// Cost is one day's cost of a service in a resource group, and of one
// resource when ResourceID names it (optional: rows without it are costs
// the provider reports by resource group only, such as a subscription's
// support charge, or worlds that do not model resources' costs).
//
// Cost is the actual cost, as billed: a reservation's purchase costs its
// price on the day it is bought, and the usage it covers costs nothing.
// AmortizedCost is the same row with commitments spread over their terms:
// the purchase costs nothing, the covered usage its day's share of the
// price, and a row of a reservation's unused hours (cost 0) the share
// they leave. Absent, it is Cost: the row involves no commitment.
type Cost struct {
	SubscriptionID string   `json:"subscription_id"`
	Date           string   `json:"date"`
	Service        string   `json:"service"`
	ResourceGroup  string   `json:"resource_group"`
	ResourceID     string   `json:"resource_id,omitempty"`
	Cost           float64  `json:"cost"`
	AmortizedCost  *float64 `json:"amortized_cost,omitempty"`
	Currency       string   `json:"currency"`
}

// Amortized is the row's amortised cost: AmortizedCost, or Cost without
// one.
func (c *Cost) Amortized() float64 {
	if c.AmortizedCost != nil {
		return *c.AmortizedCost
	}
	return c.Cost
}

// PolicyState is a policy's compliance state for one resource.
type PolicyState struct {
	SubscriptionID     string   `json:"subscription_id"`
	PolicyDefinitionID string   `json:"policy_definition_id"`
	PolicyName         string   `json:"policy_name"`
	Category           string   `json:"category"`
	GroupNames         []string `json:"group_names"`
	ComplianceState    string   `json:"compliance_state"`
	ResourceID         string   `json:"resource_id"`
	Severity           string   `json:"severity"`
	Timestamp          string   `json:"timestamp"`
}

// PolicyDefinition is a policy definition with what a reader of its
// findings wants from it: what it checks and how to fix a resource it
// finds non-compliant. A definition a policy state names but the world
// does not list is served too, from the state's name, category and
// severity, without a description or remediation.
type PolicyDefinition struct {
	// ID is a built-in definition's /providers/Microsoft.Authorization/
	// policyDefinitions/{name} or a subscription's custom one's
	// /subscriptions/{id}/providers/Microsoft.Authorization/
	// policyDefinitions/{name}.
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	Description string `json:"description"`
	Category    string `json:"category"`
	// Severity is High, Medium, Low or empty.
	Severity string `json:"severity"`
	// Remediation is the guidance to bring a non-compliant resource into
	// compliance. Azure has no field for it; the simulated cloud serves it
	// where Defender for Cloud's policies carry theirs, in the metadata's
	// securityCenter.RemediationDescription.
	Remediation string `json:"remediation"`
}

// SecurityAssessment is Defender for Cloud's assessment of one resource
// under one of its recommendations.
type SecurityAssessment struct {
	SubscriptionID string `json:"subscription_id"`
	ResourceID     string `json:"resource_id"`
	// Name is the assessment's key, a GUID naming the recommendation.
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	// Status is Healthy, Unhealthy or NotApplicable.
	Status string `json:"status"`
	// Severity is High, Medium or Low.
	Severity string `json:"severity"`
	// PolicyDefinitionID is the policy definition the recommendation is
	// built on (its metadata's policyDefinitionId); optional.
	PolicyDefinitionID     string `json:"policy_definition_id"`
	RemediationDescription string `json:"remediation_description"`
	// Category is one of Defender's categories, such as Compute, Data,
	// Networking or IdentityAndAccess.
	Category string `json:"category"`
}

// SecureScore is a subscription's secure score, by security control; the
// subscription's score is the sum of its controls'.
type SecureScore struct {
	SubscriptionID string               `json:"subscription_id"`
	Controls       []SecureScoreControl `json:"controls"`
}

// SecureScoreControl is one security control's part of a secure score.
type SecureScoreControl struct {
	// Name is the control's key, a GUID.
	Name        string  `json:"name"`
	DisplayName string  `json:"display_name"`
	Current     float64 `json:"current"`
	Max         int     `json:"max"`
	// HealthyResources, UnhealthyResources and NotApplicableResources
	// count the resources the control's assessments found in each status.
	HealthyResources       int `json:"healthy_resources"`
	UnhealthyResources     int `json:"unhealthy_resources"`
	NotApplicableResources int `json:"not_applicable_resources"`
}

// Resource is an Azure resource as Resource Graph returns it.
type Resource struct {
	SubscriptionID string            `json:"subscription_id"`
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	Type           string            `json:"type"`
	Location       string            `json:"location"`
	Tags           map[string]string `json:"tags"`
	Properties     map[string]any    `json:"properties"`
	// SKU is the resource's top-level sku ({"name", "tier", …}), which
	// Resource Graph lists as null for types without one.
	SKU map[string]any `json:"sku,omitempty"`
}

// Quota is a compute or network usage against its limit.
type Quota struct {
	SubscriptionID string  `json:"subscription_id"`
	Location       string  `json:"location"`
	Provider       string  `json:"provider"`
	Name           string  `json:"name"`
	CurrentValue   float64 `json:"current_value"`
	Limit          float64 `json:"limit"`
}

// Reservation is one day's use of a reservation under a billing account.
type Reservation struct {
	BillingAccountID string  `json:"billing_account_id"`
	ReservationID    string  `json:"reservation_id"`
	SKU              string  `json:"sku"`
	Date             string  `json:"date"`
	ReservedHours    float64 `json:"reserved_hours"`
	UsedHours        float64 `json:"used_hours"`
}

// ReservationPurchase is the purchase of a reservation under a billing
// account: its order's purchase transaction (SKU, term, quantity, price
// paid up front) and its SKU's instance size flexibility, which usage
// details carry. The reservation expires a term after its purchase date.
type ReservationPurchase struct {
	BillingAccountID string `json:"billing_account_id"`
	ReservationID    string `json:"reservation_id"`
	Name             string `json:"name"`
	SKU              string `json:"sku"`
	Region           string `json:"region"`
	// Term is P1Y, P3Y or P5Y.
	Term         string  `json:"term"`
	PurchaseDate string  `json:"purchase_date"`
	Quantity     float64 `json:"quantity"`
	// Amount is the price of the whole term in Currency.
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
	// InstanceFlexibilityRatio is the SKU's normalised size within
	// InstanceFlexibilityGroup: how many of the group's smallest size one
	// instance of it counts as.
	InstanceFlexibilityGroup string  `json:"instance_flexibility_group"`
	InstanceFlexibilityRatio float64 `json:"instance_flexibility_ratio"`
}

// TermYears are the years of each reservation term.
var TermYears = map[string]int{"P1Y": 1, "P3Y": 3, "P5Y": 5}

// ExpiryDate is the day the reservation ends: its term after its purchase
// date (YYYY-MM-DD); empty when either is malformed.
func (p ReservationPurchase) ExpiryDate() string {
	d, err := time.Parse(DateLayout, p.PurchaseDate)
	if err != nil || TermYears[p.Term] == 0 {
		return ""
	}
	return d.AddDate(TermYears[p.Term], 0, 0).Format(DateLayout)
}

// ReservationRecommendation is the provider's advice to buy reservations
// for a billing account, from the usage of the last LookBackDays days.
type ReservationRecommendation struct {
	BillingAccountID string `json:"billing_account_id"`
	SKU              string `json:"sku"`
	Location         string `json:"location"`
	// Term is P1Y or P3Y; Scope Single or Shared.
	Term                     string  `json:"term"`
	Scope                    string  `json:"scope"`
	ResourceType             string  `json:"resource_type"`
	LookBackDays             int     `json:"look_back_days"`
	RecommendedQuantity      float64 `json:"recommended_quantity"`
	NormalizedSize           string  `json:"normalized_size"`
	InstanceFlexibilityGroup string  `json:"instance_flexibility_group"`
	InstanceFlexibilityRatio float64 `json:"instance_flexibility_ratio"`
	// The costs of the look-back period without and with the recommended
	// reservations, and the difference, in Currency.
	CostWithoutReservations float64 `json:"cost_without_reservations"`
	CostWithReservations    float64 `json:"cost_with_reservations"`
	NetSavings              float64 `json:"net_savings"`
	Currency                string  `json:"currency"`
	FirstUsageDate          string  `json:"first_usage_date"`
}

// SavingsPlan is a savings plan of a billing account: an hourly
// commitment of Amount in Currency for its term from PurchaseDate, which
// pays for eligible compute usage up to that amount each hour.
type SavingsPlan struct {
	BillingAccountID   string `json:"billing_account_id"`
	SavingsPlanOrderID string `json:"savings_plan_order_id"`
	SavingsPlanID      string `json:"savings_plan_id"`
	Name               string `json:"name"`
	// Term is P1Y or P3Y.
	Term         string `json:"term"`
	PurchaseDate string `json:"purchase_date"`
	// HourlyCommitment is the amount committed for each hour, in
	// Currency.
	HourlyCommitment float64 `json:"hourly_commitment"`
	Currency         string  `json:"currency"`
	// Utilization is the plan's use per day: the lowest, mean and highest
	// of the day's hourly utilisation percentages. A day absent was not
	// reported.
	Utilization []SavingsPlanDay `json:"utilization"`
}

// SavingsPlanDay is a savings plan's utilisation on one day, in percent
// of its hourly commitment (0–100).
type SavingsPlanDay struct {
	Date           string  `json:"date"`
	MinUtilization float64 `json:"min_utilization"`
	AvgUtilization float64 `json:"avg_utilization"`
	MaxUtilization float64 `json:"max_utilization"`
}

// ExpiryDate is the day the savings plan ends: its term after its
// purchase date (YYYY-MM-DD); empty when either is malformed.
func (p SavingsPlan) ExpiryDate() string {
	return ReservationPurchase{PurchaseDate: p.PurchaseDate, Term: p.Term}.ExpiryDate()
}

// BenefitRecommendation is the provider's advice to buy a savings plan
// shared across a billing account: the hourly commitment that would have
// saved the most over the last LookBackDays days of eligible usage.
type BenefitRecommendation struct {
	BillingAccountID string `json:"billing_account_id"`
	// Term is P1Y or P3Y.
	Term         string `json:"term"`
	LookBackDays int    `json:"look_back_days"`
	// CommitmentAmount is the hourly commitment to buy, in Currency.
	CommitmentAmount float64 `json:"commitment_amount"`
	Currency         string  `json:"currency"`
	// CostWithoutBenefit is the look-back period's on-demand cost of the
	// eligible usage, and SavingsAmount what the commitment would have
	// saved of it.
	CostWithoutBenefit float64 `json:"cost_without_benefit"`
	SavingsAmount      float64 `json:"savings_amount"`
	// AverageUtilization and Coverage are the percentages of the
	// commitment the usage would have used and of the usage it would have
	// covered.
	AverageUtilization   float64 `json:"average_utilization"`
	Coverage             float64 `json:"coverage"`
	FirstConsumptionDate string  `json:"first_consumption_date"`
	LastConsumptionDate  string  `json:"last_consumption_date"`
}

// AccessReview is an access review with its decisions.
type AccessReview struct {
	DirectoryTenantID string `json:"directory_tenant_id"`
	ID                string `json:"id"`
	Name              string `json:"name"`
	Status            string `json:"status"`
	// EndDate, when set (YYYY-MM-DD), is the day the review's instance
	// ends, which it started two weeks before; otherwise its status places
	// it (a finished review ended a month ago, one in progress ends next
	// week, one not started begins next week).
	EndDate   string     `json:"end_date,omitempty"`
	Decisions []Decision `json:"decisions"`
}

// ConditionalAccessPolicy is a Conditional Access policy of a directory,
// with the conditions and controls that decide an identity posture: whom
// it covers, from which client apps, and what it grants. It covers every
// cloud application.
type ConditionalAccessPolicy struct {
	DirectoryTenantID string `json:"directory_tenant_id"`
	ID                string `json:"id"`
	Name              string `json:"name"`
	// State is enabled, disabled or enabledForReportingButNotEnforced
	// (report-only).
	State string `json:"state"`
	// IncludeUsers and ExcludeUsers are "All", "None",
	// "GuestsOrExternalUsers" or the e-mail addresses of users of the
	// directory, which Graph names by object id.
	IncludeUsers []string `json:"include_users"`
	ExcludeUsers []string `json:"exclude_users"`
	// IncludeRoles are directory role template ids, such as Global
	// Administrator's 62e90394-69f5-4237-9190-012177145e10.
	IncludeRoles []string `json:"include_roles"`
	// ClientAppTypes are all, browser, mobileAppsAndDesktopClients,
	// exchangeActiveSync or other; absent is all.
	ClientAppTypes []string `json:"client_app_types"`
	// GrantControls are Graph's built-in controls: block, mfa,
	// compliantDevice, domainJoinedDevice, approvedApplication,
	// compliantApplication or passwordChange.
	GrantControls []string `json:"grant_controls"`
	// GrantOperator is AND or OR (the default): whether every control
	// or one of them is required.
	GrantOperator string `json:"grant_operator,omitempty"`
}

// RoleAssignment is a directory role given to a user or a group through
// Privileged Identity Management: active (usable at once) or eligible (to
// be activated when needed).
type RoleAssignment struct {
	DirectoryTenantID string `json:"directory_tenant_id"`
	// RoleTemplateID is the role's template id; absent is Global
	// Administrator's.
	RoleTemplateID string `json:"role_template_id,omitempty"`
	// Principal is the e-mail address of a user of the directory, or
	// "group:" and the name of a group: its members are the directory's
	// users whose groups name it.
	Principal string `json:"principal"`
	// Kind is active or eligible.
	Kind string `json:"kind"`
}

// Application is an application registered in a directory, or the
// service principal of one (an application of another directory, or a
// managed one), with its credentials.
type Application struct {
	DirectoryTenantID string `json:"directory_tenant_id"`
	Name              string `json:"name"`
	// ServicePrincipal puts the credentials on the application's service
	// principal in the directory instead of on its registration.
	ServicePrincipal bool            `json:"service_principal,omitempty"`
	Credentials      []AppCredential `json:"credentials"`
}

// AppCredential is a client secret or a certificate of an application.
type AppCredential struct {
	// Type is password (a client secret) or certificate.
	Type string `json:"type"`
	Name string `json:"name"`
	// EndDate is the last day it is valid (YYYY-MM-DD); it ends at the
	// day's midnight UTC.
	EndDate string `json:"end_date"`
}

// GlobalAdministratorRole is the Global Administrator role's template id,
// the same in every directory.
const GlobalAdministratorRole = "62e90394-69f5-4237-9190-012177145e10"

// Role is the assignment's role template id.
func (a RoleAssignment) Role() string {
	if a.RoleTemplateID == "" {
		return GlobalAdministratorRole
	}
	return a.RoleTemplateID
}

// Decision is one reviewer decision about a user.
type Decision struct {
	User     string `json:"user"`
	Decision string `json:"decision"`
}

// MTASTSPolicy is a domain's MTA-STS policy file (RFC 8461, 3.2), as its
// policy host serves it. Status, when set, is the HTTP status answered
// instead of 200, for a policy host that fails; ContentType, when set,
// replaces text/plain.
type MTASTSPolicy struct {
	Domain      string `json:"domain"`
	Policy      string `json:"policy"`
	Status      int    `json:"status,omitempty"`
	ContentType string `json:"content_type,omitempty"`
}

// DNSRecord is a TXT, CNAME, MX, A, AAAA or PTR record the simulated DNS
// server answers. An MX value is a preference and a host: "10
// mail.example.com", or "0 ." for a null MX. A PTR record's name is the
// IP address it names (203.0.113.7, 2001:db8::1) or its reverse name
// (7.113.0.203.in-addr.arpa), and its value the host name.
type DNSRecord struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// Mailbox is an Exchange Online mailbox of a directory, with the messages
// of its folders, as Graph's /users/{address}/mailFolders/{folder}/messages
// serves them.
type Mailbox struct {
	// Address is the mailbox's SMTP address, its user principal name in
	// Graph's paths.
	Address           string        `json:"address"`
	DirectoryTenantID string        `json:"directory_tenant_id"`
	Messages          []MailMessage `json:"messages"`
}

// MailMessage is a message of a mailbox. Folder is the well-known name of
// its folder (inbox, archive, …) or the id of one; absent, it is inbox.
// Received is an RFC 3339 time.
type MailMessage struct {
	ID          string           `json:"id"`
	Folder      string           `json:"folder,omitempty"`
	Subject     string           `json:"subject"`
	From        string           `json:"from"`
	Received    string           `json:"received"`
	Attachments []MailAttachment `json:"attachments"`
}

// MailAttachment is a file attached to a message. Its content is Text,
// packed by its name as a DMARC reporter packs a report: a name ending
// in .gz is gzip of Text, one in .zip a zip archive holding Text as the
// name with .zip replaced by .xml; any other name is Text itself. Base64, when set,
// is the content instead, as is, for attachments that are not reports.
type MailAttachment struct {
	Name        string `json:"name"`
	ContentType string `json:"content_type,omitempty"`
	Text        string `json:"text,omitempty"`
	Base64      string `json:"base64,omitempty"`
}
