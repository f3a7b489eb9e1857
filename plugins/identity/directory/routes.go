package directory

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/stewardhq/steward/sdk"
)

// Handlers serves the identity reads.
type Handlers struct {
	Store *Store
	// Host names the tenants.
	Host *sdk.Host
	// Now is the clock stale accounts, guests' ages and the trend are
	// measured from; nil is time.Now.
	Now func() time.Time
}

func (h *Handlers) now() time.Time {
	if h.Now != nil {
		return h.Now().UTC()
	}
	return time.Now().UTC()
}

const tag = "identity"

// defaultStaleDays is how long without a sign-in makes an account stale
// unless the caller says otherwise; the stale route's days parameter
// defaults to it in its struct tag.
const defaultStaleDays = 90

// percent is part of whole in percent to two decimals; nil when whole is
// zero, as a coverage of nobody is not a figure.
func percent(part, whole int64) *float64 {
	if whole == 0 {
		return nil
	}
	p := math.Round(float64(part)*10000/float64(whole)) / 100
	return &p
}

// TenantSummary is one tenant's identity posture.
type TenantSummary struct {
	TenantID   string `json:"tenant_id"`
	TenantName string `json:"tenant_name"`
	TotalUsers int64  `json:"total_users" doc:"Every account of the directory: members and guests, enabled or not"`
	GuestUsers int64  `json:"guest_users"`
	// DisabledUsers are accounts that cannot sign in.
	DisabledUsers int64 `json:"disabled_users"`
	AdminUsers    int64 `json:"admin_users" doc:"Holders of a directory role"`
	MFAUsers      int64 `json:"mfa_registered_users" doc:"Accounts registered for MFA: members and guests, enabled or not"`
	// MemberUsers are the population MFA coverage is measured on.
	MemberUsers    int64 `json:"enabled_members" doc:"Enabled accounts that are not guests"`
	MemberMFAUsers int64 `json:"enabled_members_with_mfa" doc:"Those of enabled_members registered for MFA"`
	// UnprotectedUsers are the accounts without an MFA method.
	UnprotectedUsers int64     `json:"unprotected_users" doc:"Accounts without an MFA method registered: members and guests, enabled or not"`
	MFACoverage      *float64  `json:"mfa_coverage_percentage" doc:"enabled_members_with_mfa of enabled_members in percent, two decimals; null without enabled members. Guests (guest_users) and disabled accounts (disabled_users) are counted apart, not in it"`
	AdminMFA         *float64  `json:"admin_mfa_percentage" doc:"Admins with MFA of admin_users in percent, two decimals; null without admins"`
	Devices          int64     `json:"devices"`
	CompliantDevices int64     `json:"compliant_devices"`
	DeviceCompliance *float64  `json:"device_compliance_percentage" doc:"compliant_devices of devices in percent, two decimals; null without devices"`
	SyncedAt         time.Time `json:"synced_at"`
}

// UserItem is a user in a list.
type UserItem struct {
	TenantID          string     `json:"tenant_id"`
	UserID            string     `json:"user_id"`
	DisplayName       string     `json:"display_name"`
	UserPrincipalName string     `json:"user_principal_name"`
	Mail              string     `json:"mail"`
	UserType          string     `json:"user_type" enum:"Member,Guest"`
	AccountEnabled    bool       `json:"account_enabled"`
	IsAdmin           bool       `json:"is_admin"`
	MFARegistered     bool       `json:"mfa_registered"`
	MFAMethods        []string   `json:"mfa_methods"`
	CreatedAt         *time.Time `json:"created_at"`
	LastSignIn        *time.Time `json:"last_sign_in" doc:"null when the account never signed in"`
	// DaysSinceSignIn counts from the last sign-in, or from creation for
	// an account that never signed in.
	DaysSinceSignIn *int `json:"days_since_sign_in"`
}

// UserList is a page of users.
type UserList struct {
	Items  []UserItem `json:"items"`
	Total  int        `json:"total"`
	Limit  int        `json:"limit"`
	Offset int        `json:"offset"`
}

// GuestItem is a guest account.
type GuestItem struct {
	UserItem
	// InvitedFrom is the inviting directory's domain, from the guest's
	// external user principal name; Graph's user listing does not name the
	// inviting person.
	InvitedFrom string `json:"invited_from" doc:"Domain of the directory that invited the guest, from its #EXT# user principal name"`
	HomeDomain  string `json:"home_domain" doc:"Domain of the guest's own address"`
	AgeDays     *int   `json:"age_days" doc:"Days since the guest account was created"`
}

// GuestList is a page of guests.
type GuestList struct {
	Items  []GuestItem `json:"items"`
	Total  int         `json:"total"`
	Limit  int         `json:"limit"`
	Offset int         `json:"offset"`
}

// AssignmentItem is a directory role held by a principal.
type AssignmentItem struct {
	TenantID          string     `json:"tenant_id"`
	RoleID            string     `json:"role_id"`
	RoleName          string     `json:"role_name"`
	RoleTemplateID    string     `json:"role_template_id"`
	MemberID          string     `json:"member_id"`
	MemberType        string     `json:"member_type" doc:"user, group or servicePrincipal"`
	DisplayName       string     `json:"display_name"`
	UserPrincipalName string     `json:"user_principal_name"`
	AccountEnabled    *bool      `json:"account_enabled" doc:"null for a holder that is not a synced user"`
	MFARegistered     *bool      `json:"mfa_registered"`
	LastSignIn        *time.Time `json:"last_sign_in"`
}

// AssignmentList is a page of role assignments.
type AssignmentList struct {
	Items  []AssignmentItem `json:"items"`
	Total  int              `json:"total"`
	Limit  int              `json:"limit"`
	Offset int              `json:"offset"`
}

// DecisionItem is a reviewer's decision.
type DecisionItem struct {
	InstanceID        string     `json:"instance_id"`
	Decision          string     `json:"decision" doc:"Approve, Deny, NotReviewed or DontKnow"`
	Recommendation    string     `json:"recommendation"`
	PrincipalID       string     `json:"principal_id"`
	PrincipalName     string     `json:"principal_name"`
	UserPrincipalName string     `json:"user_principal_name"`
	ReviewedBy        string     `json:"reviewed_by"`
	ReviewedAt        *time.Time `json:"reviewed_at"`
}

// ReviewItem is an access review with its decisions.
type ReviewItem struct {
	TenantID    string         `json:"tenant_id"`
	ReviewID    string         `json:"review_id"`
	Name        string         `json:"name"`
	Status      string         `json:"status"`
	CreatedAt   *time.Time     `json:"created_at"`
	EndsAt      *time.Time     `json:"ends_at" doc:"When its latest instance ends; null until a sync reads it"`
	Overdue     bool           `json:"overdue" doc:"Past ends_at and not done (completing, completed, auto-reviewed or applied)"`
	Total       int64          `json:"decisions_total"`
	Approved    int64          `json:"approved"`
	Denied      int64          `json:"denied"`
	NotReviewed int64          `json:"not_reviewed"`
	Decisions   []DecisionItem `json:"decisions"`
}

// ReviewList is a page of access reviews.
type ReviewList struct {
	Items  []ReviewItem `json:"items"`
	Total  int          `json:"total"`
	Limit  int          `json:"limit"`
	Offset int          `json:"offset"`
}

// DeviceItem is a managed device.
type DeviceItem struct {
	TenantID          string     `json:"tenant_id"`
	DeviceID          string     `json:"device_id"`
	Name              string     `json:"name"`
	UserID            string     `json:"user_id"`
	UserPrincipalName string     `json:"user_principal_name"`
	OperatingSystem   string     `json:"operating_system"`
	OSVersion         string     `json:"os_version"`
	ComplianceState   string     `json:"compliance_state"`
	IsEncrypted       bool       `json:"is_encrypted"`
	LastSync          *time.Time `json:"last_sync"`
}

// DeviceList is a page of devices.
type DeviceList struct {
	Items  []DeviceItem `json:"items"`
	Total  int          `json:"total"`
	Limit  int          `json:"limit"`
	Offset int          `json:"offset"`
}

// TrendDay is one day of the MFA trend.
type TrendDay struct {
	Date       string `json:"date"`
	Tenants    int64  `json:"tenants" doc:"Tenants with a snapshot on the day"`
	TotalUsers int64  `json:"total_users"`
	MFAUsers   int64  `json:"mfa_registered_users"`
	// The members' figures sum the snapshots that counted them.
	MemberUsers    int64    `json:"enabled_members" doc:"Enabled accounts that are not guests, of the day's snapshots that counted them"`
	MemberMFAUsers int64    `json:"enabled_members_with_mfa"`
	AdminUsers     int64    `json:"admin_users"`
	MFACoverage    *float64 `json:"mfa_coverage_percentage" doc:"enabled_members_with_mfa of enabled_members; null without them, as on days before they were counted"`
	AdminMFA       *float64 `json:"admin_mfa_percentage"`
}

// ListParams are a list's tenants, window and order; each list declares
// its own sort_by.
type ListParams struct {
	Tenants   sdk.TenantIDs `query:"tenant_ids"`
	Limit     int           `query:"limit" minimum:"1" maximum:"500" default:"50" doc:"Page size"`
	Offset    int           `query:"offset" minimum:"0" maximum:"1000000" default:"0" doc:"Items to skip"`
	SortOrder string        `query:"sort_order" enum:"asc,desc" default:"asc"`
}

// page is the list's window, sorted by sortBy.
func (l ListParams) page(sortBy string) Page {
	return Page{TenantIDs: l.Tenants, SortBy: sortBy, Desc: l.SortOrder == "desc", Limit: l.Limit, Offset: l.Offset}
}

type tenantsIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
}

type withoutMFAIn struct {
	ListParams
	SortBy     string `query:"sort_by" enum:"display_name,last_sign_in,created_at" default:"display_name"`
	AdminsOnly bool   `query:"admins_only" default:"false"`
}

type assignmentsIn struct {
	ListParams
	SortBy string `query:"sort_by" enum:"role_name,display_name,last_sign_in" default:"role_name"`
}

type staleIn struct {
	ListParams
	SortBy string `query:"sort_by" enum:"last_sign_in,display_name,created_at" default:"last_sign_in"`
	Days   int    `query:"days" minimum:"1" maximum:"3650" default:"90" doc:"Days without a sign-in"`
}

type guestsIn struct {
	ListParams
	SortBy string `query:"sort_by" enum:"created_at,display_name,last_sign_in" default:"created_at"`
}

type reviewsIn struct {
	ListParams
	SortBy  string `query:"sort_by" enum:"created_at,name,status,ends_at" default:"created_at"`
	Status  string `query:"status" maxLength:"64" enum:"Initializing,NotStarted,Starting,InProgress,Completing,Completed,AutoReviewing,AutoReviewed,Applying,Applied" doc:"Only reviews of this status, as Graph names it"`
	Overdue bool   `query:"overdue" default:"false" doc:"Only overdue reviews: past their end and not done"`
}

type devicesIn struct {
	ListParams
	SortBy          string `query:"sort_by" enum:"name,compliance_state,last_sync" default:"name"`
	ComplianceState string `query:"compliance_state" maxLength:"64" enum:"compliant,noncompliant,unknown,inGracePeriod,conflict,error,configManager" doc:"Only devices in this state"`
}

type trendIn struct {
	Tenants sdk.TenantIDs `query:"tenant_ids"`
	Days    int           `query:"days" minimum:"7" maximum:"365" default:"30" doc:"Days up to today"`
}

// Routes declares the read routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	op := func(id, summary, doc string) sdk.Op {
		return sdk.Op{ID: "identity-" + id, Tags: []string{tag}, Summary: summary, Description: doc}
	}
	return []sdk.Route{
		sdk.Get("/api/v1/identity/summary", op("summary", "Identity posture per tenant",
			"One record per tenant with a synced directory: users, guests, admins (directory role holders), MFA coverage of the enabled members (not guests, not disabled) and of the admins in percent to two decimals, "+
				"accounts without MFA, and managed devices' compliance."), h.summary),
		sdk.Get("/api/v1/identity/users/without-mfa", op("users-without-mfa", "Accounts without MFA, paginated",
			"Accounts with no MFA method registered; admins_only keeps the directory role holders."), h.withoutMFA),
		sdk.Get("/api/v1/identity/privileged", op("privileged", "Privileged role assignments, paginated",
			"One item per directory role and holder, with the holder's account state and MFA registration."), h.privileged),
		sdk.Get("/api/v1/identity/disabled-with-roles", op("disabled-with-roles", "Disabled accounts still holding roles, paginated",
			"Role assignments whose holder's account is disabled."), h.disabledWithRoles),
		sdk.Get("/api/v1/identity/stale", op("stale", "Stale accounts, paginated",
			"Enabled accounts that have not signed in for `days` days, and accounts older than that which never signed in. Disabled accounts are not listed."), h.stale),
		sdk.Get("/api/v1/identity/guests", op("guests", "Guest accounts, paginated",
			"Guests with the inviting directory's domain, their own domain and their age in days."), h.guests),
		sdk.Get("/api/v1/identity/access-reviews", op("access-reviews", "Access reviews with their decisions, paginated",
			"Each review with its status, when its latest instance ends and whether it is overdue (past that and not done), its decisions counted by outcome and listed; overdue keeps the overdue ones."), h.reviews),
		sdk.Get("/api/v1/identity/access-review-findings", op("access-review-findings", "Access review approvals of privileged accounts without MFA, paginated",
			"Decisions of the tenants' access reviews that approved a directory role holder with no MFA method registered, one item per decision."), h.reviewFindings),
		sdk.Get("/api/v1/identity/devices", op("devices", "Managed devices and their compliance, paginated",
			"Intune managed devices; compliance_state keeps one state."), h.devices),
		sdk.Get("/api/v1/identity/conditional-access", op("conditional-access", "Conditional Access posture per tenant",
			"One record per tenant whose latest sync read its policies: whether it enforces security defaults, and for each of MFA for all users, MFA for admins "+
				"(the Global Administrator role) and legacy authentication blocked, the strongest state of a policy carrying it (enabled, report-only, disabled or none) "+
				"and whether it is enforced (an enabled policy, or security defaults); with every policy and what it carries."), h.conditionalAccess),
		sdk.Get("/api/v1/identity/global-admins", op("global-admins", "Global Administrators per tenant",
			"One record per tenant whose latest sync counted them: the principals holding the Global Administrator role or eligible for it in Privileged Identity Management, "+
				"each once, a group's members (nested groups' included) in the group's stead; status is too_few below 2, too_many above 4, else ok."), h.globalAdmins),
		sdk.Get("/api/v1/identity/risky-users", op("risky-users", "Risky users, paginated",
			"The users Identity Protection judged at risk, now or before, with their risk level, state and detail; at_risk keeps those still at risk "+
				"(atRisk or confirmedCompromised), risk_level and risk_state one of each."), h.riskyUsers),
		sdk.Get("/api/v1/identity/app-credentials", op("app-credentials", "Application credentials ending soon or ended, paginated",
			"The client secrets (passwordCredentials) and certificates (keyCredentials) of the applications and service principals ending within `within_days` days "+
				"from now, and those already ended, soonest first by default; days_left rounds up and is 0 or less once a credential has ended."), h.credentials),
		sdk.Get("/api/v1/identity/mfa-trend", op("mfa-trend", "Daily MFA coverage",
			"The tenants' daily snapshots summed per day over the last `days` days (today included), oldest first; a day without any sync is absent, "+
				"and tenants counts the tenants with a snapshot that day."), h.trend),
	}
}

func (h *Handlers) summary(ctx context.Context, in *tenantsIn) (*[]TenantSummary, error) {
	tenants := in.Tenants
	counts, err := h.Store.Counts(ctx, tenants)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	if len(counts) > 0 {
		known, err := h.Host.Tenants(ctx, tenants...)
		if err != nil {
			return nil, err
		}
		for _, t := range known {
			names[t.ID] = t.Name
		}
	}
	out := make([]TenantSummary, len(counts))
	for i, c := range counts {
		out[i] = TenantSummary{TenantID: c.TenantID, TenantName: names[c.TenantID], TotalUsers: c.TotalUsers, GuestUsers: c.GuestUsers,
			DisabledUsers: c.DisabledUsers, AdminUsers: c.AdminUsers, MFAUsers: c.MFAUsers, MemberUsers: c.MemberUsers, MemberMFAUsers: c.MemberMFAUsers,
			UnprotectedUsers: c.TotalUsers - c.MFAUsers, MFACoverage: percent(c.MemberMFAUsers, c.MemberUsers), AdminMFA: percent(c.AdminMFAUsers, c.AdminUsers),
			Devices: c.Devices, CompliantDevices: c.CompliantDevices, DeviceCompliance: percent(c.CompliantDevices, c.Devices), SyncedAt: c.SyncedAt.UTC()}
	}
	return &out, nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func days(from, to time.Time) *int {
	if from.IsZero() {
		return nil
	}
	n := int(to.Sub(from) / (24 * time.Hour))
	return &n
}

func (h *Handlers) userItem(u UserRow) UserItem {
	methods := []string{}
	if u.MFAMethods != "" {
		methods = strings.Split(u.MFAMethods, ",")
	}
	since := u.LastSignIn
	if since.IsZero() {
		since = u.Created
	}
	return UserItem{TenantID: u.TenantID, UserID: u.UserID, DisplayName: u.DisplayName, UserPrincipalName: u.UserPrincipalName, Mail: u.Mail,
		UserType: u.UserType, AccountEnabled: u.AccountEnabled, IsAdmin: u.IsAdmin, MFARegistered: u.MFARegistered, MFAMethods: methods,
		CreatedAt: timePtr(u.Created), LastSignIn: timePtr(u.LastSignIn), DaysSinceSignIn: days(since, h.now())}
}

func (h *Handlers) users(ctx context.Context, p Page, f UserFilter) (*UserList, error) {
	rows, total, err := h.Store.Users(ctx, p, f)
	if err != nil {
		return nil, err
	}
	out := UserList{Items: make([]UserItem, len(rows)), Total: total, Limit: p.Limit, Offset: p.Offset}
	for i, u := range rows {
		out.Items[i] = h.userItem(u)
	}
	return &out, nil
}

func (h *Handlers) withoutMFA(ctx context.Context, in *withoutMFAIn) (*UserList, error) {
	return h.users(ctx, in.page(in.SortBy), UserFilter{WithoutMFA: true, AdminsOnly: in.AdminsOnly})
}

func (h *Handlers) stale(ctx context.Context, in *staleIn) (*UserList, error) {
	return h.users(ctx, in.page(in.SortBy), UserFilter{StaleBefore: h.now().AddDate(0, 0, -in.Days)})
}

func (h *Handlers) guests(ctx context.Context, in *guestsIn) (*GuestList, error) {
	p := in.page(in.SortBy)
	rows, total, err := h.Store.Users(ctx, p, UserFilter{Guests: true})
	if err != nil {
		return nil, err
	}
	out := GuestList{Items: make([]GuestItem, len(rows)), Total: total, Limit: p.Limit, Offset: p.Offset}
	for i, u := range rows {
		g := GuestItem{UserItem: h.userItem(u), AgeDays: days(u.Created, h.now())}
		if _, after, ok := strings.Cut(u.UserPrincipalName, "#EXT#@"); ok {
			g.InvitedFrom = after
		}
		if _, after, ok := strings.Cut(u.Mail, "@"); ok {
			g.HomeDomain = after
		}
		out.Items[i] = g
	}
	return &out, nil
}

func (h *Handlers) assignments(ctx context.Context, in *assignmentsIn, disabledOnly bool) (*AssignmentList, error) {
	p := in.page(in.SortBy)
	rows, total, err := h.Store.Assignments(ctx, p, disabledOnly)
	if err != nil {
		return nil, err
	}
	out := AssignmentList{Items: make([]AssignmentItem, len(rows)), Total: total, Limit: p.Limit, Offset: p.Offset}
	for i, a := range rows {
		out.Items[i] = AssignmentItem{TenantID: a.TenantID, RoleID: a.RoleID, RoleName: a.RoleName, RoleTemplateID: a.RoleTemplateID,
			MemberID: a.MemberID, MemberType: a.MemberType, DisplayName: a.MemberName, UserPrincipalName: a.MemberUPN,
			AccountEnabled: a.AccountEnabled, MFARegistered: a.MFARegistered, LastSignIn: timePtr(a.LastSignIn)}
	}
	return &out, nil
}

func (h *Handlers) privileged(ctx context.Context, in *assignmentsIn) (*AssignmentList, error) {
	return h.assignments(ctx, in, false)
}

func (h *Handlers) disabledWithRoles(ctx context.Context, in *assignmentsIn) (*AssignmentList, error) {
	return h.assignments(ctx, in, true)
}

func (h *Handlers) reviews(ctx context.Context, in *reviewsIn) (*ReviewList, error) {
	p := in.page(in.SortBy)
	now := time.Now()
	rows, total, err := h.Store.Reviews(ctx, p, ReviewFilter{Status: in.Status, Overdue: in.Overdue, Now: now})
	if err != nil {
		return nil, err
	}
	decisions, err := h.Store.DecisionsOf(ctx, rows)
	if err != nil {
		return nil, err
	}
	byReview := map[[2]string][]DecisionItem{}
	for _, d := range decisions {
		k := [2]string{d.TenantID, d.ReviewID}
		byReview[k] = append(byReview[k], DecisionItem{InstanceID: d.InstanceID, Decision: d.Decision, Recommendation: d.Recommendation,
			PrincipalID: d.PrincipalID, PrincipalName: d.PrincipalName, UserPrincipalName: d.PrincipalUPN, ReviewedBy: d.ReviewedBy,
			ReviewedAt: timePtr(d.Reviewed)})
	}
	out := ReviewList{Items: make([]ReviewItem, len(rows)), Total: total, Limit: p.Limit, Offset: p.Offset}
	for i, rv := range rows {
		ds := byReview[[2]string{rv.TenantID, rv.ReviewID}]
		if ds == nil {
			ds = []DecisionItem{}
		}
		out.Items[i] = ReviewItem{TenantID: rv.TenantID, ReviewID: rv.ReviewID, Name: rv.Name, Status: rv.Status, CreatedAt: timePtr(rv.Created),
			EndsAt: timePtr(rv.Ends), Overdue: Overdue(rv.Status, rv.Ends, now),
			Total: rv.Decisions, Approved: rv.Approved, Denied: rv.Denied, NotReviewed: rv.NotReviewed, Decisions: ds}
	}
	return &out, nil
}

func (h *Handlers) devices(ctx context.Context, in *devicesIn) (*DeviceList, error) {
	p := in.page(in.SortBy)
	rows, total, err := h.Store.Devices(ctx, p, in.ComplianceState)
	if err != nil {
		return nil, err
	}
	out := DeviceList{Items: make([]DeviceItem, len(rows)), Total: total, Limit: p.Limit, Offset: p.Offset}
	for i, d := range rows {
		out.Items[i] = DeviceItem{TenantID: d.TenantID, DeviceID: d.DeviceID, Name: d.Name, UserID: d.UserID, UserPrincipalName: d.UserPrincipalName,
			OperatingSystem: d.OperatingSystem, OSVersion: d.OSVersion, ComplianceState: d.ComplianceState, IsEncrypted: d.IsEncrypted,
			LastSync: timePtr(d.LastSync)}
	}
	return &out, nil
}

func (h *Handlers) trend(ctx context.Context, in *trendIn) (*[]TrendDay, error) {
	from := h.now().AddDate(0, 0, 1-in.Days).Format(time.DateOnly)
	rows, err := h.Store.Trend(ctx, in.Tenants, from)
	if err != nil {
		return nil, err
	}
	out := make([]TrendDay, len(rows))
	for i, d := range rows {
		out[i] = TrendDay{Date: d.Day, Tenants: d.Tenants, TotalUsers: d.TotalUsers, MFAUsers: d.MFAUsers, MemberUsers: d.MemberUsers,
			MemberMFAUsers: d.MemberMFAUsers, AdminUsers: d.AdminUsers, MFACoverage: percent(d.MemberMFAUsers, d.MemberUsers), AdminMFA: percent(d.AdminMFAUsers, d.AdminUsers)}
	}
	return &out, nil
}
