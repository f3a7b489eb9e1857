package directory

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

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
// unless the caller says otherwise.
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
	MFAUsers      int64 `json:"mfa_registered_users"`
	// UnprotectedUsers are the accounts without an MFA method.
	UnprotectedUsers int64     `json:"unprotected_users" doc:"Accounts without an MFA method registered"`
	MFACoverage      *float64  `json:"mfa_coverage_percentage" doc:"mfa_registered_users of total_users in percent, two decimals; null without users"`
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
	Date        string   `json:"date"`
	Tenants     int64    `json:"tenants" doc:"Tenants with a snapshot on the day"`
	TotalUsers  int64    `json:"total_users"`
	MFAUsers    int64    `json:"mfa_registered_users"`
	AdminUsers  int64    `json:"admin_users"`
	MFACoverage *float64 `json:"mfa_coverage_percentage"`
	AdminMFA    *float64 `json:"admin_mfa_percentage"`
}

func intPtr(n int) *int { return &n }

func intParam(name string, lo, hi, def int, doc string) *huma.Param {
	l, u := float64(lo), float64(hi)
	return &huma.Param{Name: name, In: "query", Description: doc,
		Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: &l, Maximum: &u, Default: def}}
}

func tenantIDsParam() *huma.Param {
	return &huma.Param{Name: "tenant_ids", In: "query",
		Description: "Tenants to include (repeated or comma-separated); all the caller's tenants when absent. A tenant the caller may not see is a 403.",
		Schema:      &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(64)}, MaxItems: intPtr(100)}}
}

// listParams are a list's tenants, window and order.
func listParams(sorts []any, extra ...*huma.Param) []*huma.Param {
	return append([]*huma.Param{
		tenantIDsParam(),
		intParam("limit", 1, 500, 50, "Page size"),
		intParam("offset", 0, 1_000_000, 0, "Items to skip"),
		{Name: "sort_by", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: sorts, Default: sorts[0]}},
		{Name: "sort_order", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Enum: []any{"asc", "desc"}, Default: "asc"}},
	}, extra...)
}

func stringParam(name string, enum []any, doc string) *huma.Param {
	return &huma.Param{Name: name, In: "query", Description: doc, Schema: &huma.Schema{Type: huma.TypeString, Enum: enum, MaxLength: intPtr(64)}}
}

// Routes declares the read routes, served by h.
func (h *Handlers) Routes() []sdk.Route {
	get := http.MethodGet
	op := func(id, summary, doc string, params []*huma.Param, resp *huma.Response) *huma.Operation {
		return &huma.Operation{OperationID: "identity-" + id, Tags: []string{tag}, Summary: summary, Description: doc,
			Parameters: params, Responses: map[string]*huma.Response{"200": resp}}
	}
	userSort := []any{"display_name", "last_sign_in", "created_at"}
	return []sdk.Route{
		{Method: get, Path: "/api/v1/identity/summary", TenantScoped: true, Handler: h.summary, Operation: op("summary",
			"Identity posture per tenant",
			"One record per tenant with a synced directory: users, guests, admins (directory role holders), MFA coverage of all accounts and of the admins in percent to two decimals, "+
				"accounts without MFA, and managed devices' compliance.",
			[]*huma.Param{tenantIDsParam()}, sdk.JSONResponse("Per-tenant summary", []TenantSummary{}))},
		{Method: get, Path: "/api/v1/identity/users/without-mfa", TenantScoped: true, Handler: h.withoutMFA, Operation: op("users-without-mfa",
			"Accounts without MFA, paginated", "Accounts with no MFA method registered; admins_only keeps the directory role holders.",
			listParams(userSort, &huma.Param{Name: "admins_only", In: "query", Schema: &huma.Schema{Type: huma.TypeBoolean, Default: false}}),
			sdk.JSONResponse("Accounts", UserList{}))},
		{Method: get, Path: "/api/v1/identity/privileged", TenantScoped: true, Handler: h.privileged, Operation: op("privileged",
			"Privileged role assignments, paginated", "One item per directory role and holder, with the holder's account state and MFA registration.",
			listParams([]any{"role_name", "display_name", "last_sign_in"}), sdk.JSONResponse("Role assignments", AssignmentList{}))},
		{Method: get, Path: "/api/v1/identity/disabled-with-roles", TenantScoped: true, Handler: h.disabledWithRoles, Operation: op("disabled-with-roles",
			"Disabled accounts still holding roles, paginated", "Role assignments whose holder's account is disabled.",
			listParams([]any{"role_name", "display_name", "last_sign_in"}), sdk.JSONResponse("Role assignments", AssignmentList{}))},
		{Method: get, Path: "/api/v1/identity/stale", TenantScoped: true, Handler: h.stale, Operation: op("stale",
			"Stale accounts, paginated",
			"Enabled accounts that have not signed in for `days` days, and accounts older than that which never signed in. Disabled accounts are not listed.",
			listParams([]any{"last_sign_in", "display_name", "created_at"}, intParam("days", 1, 3650, defaultStaleDays, "Days without a sign-in")),
			sdk.JSONResponse("Accounts", UserList{}))},
		{Method: get, Path: "/api/v1/identity/guests", TenantScoped: true, Handler: h.guests, Operation: op("guests",
			"Guest accounts, paginated", "Guests with the inviting directory's domain, their own domain and their age in days.",
			listParams([]any{"created_at", "display_name", "last_sign_in"}), sdk.JSONResponse("Guests", GuestList{}))},
		{Method: get, Path: "/api/v1/identity/access-reviews", TenantScoped: true, Handler: h.reviews, Operation: op("access-reviews",
			"Access reviews with their decisions, paginated", "Each review with its status, its decisions counted by outcome and listed.",
			listParams([]any{"created_at", "name", "status"},
				stringParam("status", []any{"Initializing", "NotStarted", "Starting", "InProgress", "Completing", "Completed", "AutoReviewing", "AutoReviewed", "Applying", "Applied"}, "Only reviews of this status, as Graph names it")),
			sdk.JSONResponse("Access reviews", ReviewList{}))},
		{Method: get, Path: "/api/v1/identity/devices", TenantScoped: true, Handler: h.devices, Operation: op("devices",
			"Managed devices and their compliance, paginated", "Intune managed devices; compliance_state keeps one state.",
			listParams([]any{"name", "compliance_state", "last_sync"},
				stringParam("compliance_state", []any{"compliant", "noncompliant", "unknown", "inGracePeriod", "conflict", "error", "configManager"}, "Only devices in this state")),
			sdk.JSONResponse("Devices", DeviceList{}))},
		{Method: get, Path: "/api/v1/identity/mfa-trend", TenantScoped: true, Handler: h.trend, Operation: op("mfa-trend",
			"Daily MFA coverage",
			"The tenants' daily snapshots summed per day over the last `days` days (today included), oldest first; a day without any sync is absent, "+
				"and tenants counts the tenants with a snapshot that day.",
			[]*huma.Param{tenantIDsParam(), intParam("days", 7, 365, 30, "Days up to today")}, sdk.JSONResponse("Daily figures", []TrendDay{}))},
	}
}

// intQuery reads a parameter the host has checked and defaulted.
func intQuery(r *http.Request, name string) int {
	n, _ := strconv.Atoi(r.URL.Query().Get(name))
	return n
}

func page(r *http.Request) (Page, error) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		return Page{}, err
	}
	q := r.URL.Query()
	return Page{TenantIDs: tenants, SortBy: q.Get("sort_by"), Desc: q.Get("sort_order") == "desc",
		Limit: intQuery(r, "limit"), Offset: intQuery(r, "offset")}, nil
}

func (h *Handlers) summary(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	counts, err := h.Store.Counts(r.Context(), tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	names := map[string]string{}
	if len(counts) > 0 {
		known, err := h.Host.Tenants(r.Context(), tenants...)
		if err != nil {
			sdk.WriteError(w, err)
			return
		}
		for _, t := range known {
			names[t.ID] = t.Name
		}
	}
	out := make([]TenantSummary, len(counts))
	for i, c := range counts {
		out[i] = TenantSummary{TenantID: c.TenantID, TenantName: names[c.TenantID], TotalUsers: c.TotalUsers, GuestUsers: c.GuestUsers,
			DisabledUsers: c.DisabledUsers, AdminUsers: c.AdminUsers, MFAUsers: c.MFAUsers, UnprotectedUsers: c.TotalUsers - c.MFAUsers,
			MFACoverage: percent(c.MFAUsers, c.TotalUsers), AdminMFA: percent(c.AdminMFAUsers, c.AdminUsers),
			Devices: c.Devices, CompliantDevices: c.CompliantDevices, DeviceCompliance: percent(c.CompliantDevices, c.Devices), SyncedAt: c.SyncedAt.UTC()}
	}
	sdk.WriteJSON(w, http.StatusOK, out)
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

func (h *Handlers) users(w http.ResponseWriter, r *http.Request, f UserFilter) {
	p, err := page(r)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	rows, total, err := h.Store.Users(r.Context(), p, f)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out := UserList{Items: make([]UserItem, len(rows)), Total: total, Limit: p.Limit, Offset: p.Offset}
	for i, u := range rows {
		out.Items[i] = h.userItem(u)
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) withoutMFA(w http.ResponseWriter, r *http.Request) {
	h.users(w, r, UserFilter{WithoutMFA: true, AdminsOnly: r.URL.Query().Get("admins_only") == "true"})
}

func (h *Handlers) stale(w http.ResponseWriter, r *http.Request) {
	h.users(w, r, UserFilter{StaleBefore: h.now().AddDate(0, 0, -intQuery(r, "days"))})
}

func (h *Handlers) guests(w http.ResponseWriter, r *http.Request) {
	p, err := page(r)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	rows, total, err := h.Store.Users(r.Context(), p, UserFilter{Guests: true})
	if err != nil {
		sdk.WriteError(w, err)
		return
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
	sdk.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) assignments(w http.ResponseWriter, r *http.Request, disabledOnly bool) {
	p, err := page(r)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	rows, total, err := h.Store.Assignments(r.Context(), p, disabledOnly)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out := AssignmentList{Items: make([]AssignmentItem, len(rows)), Total: total, Limit: p.Limit, Offset: p.Offset}
	for i, a := range rows {
		out.Items[i] = AssignmentItem{TenantID: a.TenantID, RoleID: a.RoleID, RoleName: a.RoleName, RoleTemplateID: a.RoleTemplateID,
			MemberID: a.MemberID, MemberType: a.MemberType, DisplayName: a.MemberName, UserPrincipalName: a.MemberUPN,
			AccountEnabled: a.AccountEnabled, MFARegistered: a.MFARegistered, LastSignIn: timePtr(a.LastSignIn)}
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) privileged(w http.ResponseWriter, r *http.Request) { h.assignments(w, r, false) }

func (h *Handlers) disabledWithRoles(w http.ResponseWriter, r *http.Request) {
	h.assignments(w, r, true)
}

func (h *Handlers) reviews(w http.ResponseWriter, r *http.Request) {
	p, err := page(r)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	rows, total, err := h.Store.Reviews(r.Context(), p, r.URL.Query().Get("status"))
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	decisions, err := h.Store.DecisionsOf(r.Context(), rows)
	if err != nil {
		sdk.WriteError(w, err)
		return
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
			Total: rv.Decisions, Approved: rv.Approved, Denied: rv.Denied, NotReviewed: rv.NotReviewed, Decisions: ds}
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) devices(w http.ResponseWriter, r *http.Request) {
	p, err := page(r)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	rows, total, err := h.Store.Devices(r.Context(), p, r.URL.Query().Get("compliance_state"))
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out := DeviceList{Items: make([]DeviceItem, len(rows)), Total: total, Limit: p.Limit, Offset: p.Offset}
	for i, d := range rows {
		out.Items[i] = DeviceItem{TenantID: d.TenantID, DeviceID: d.DeviceID, Name: d.Name, UserID: d.UserID, UserPrincipalName: d.UserPrincipalName,
			OperatingSystem: d.OperatingSystem, OSVersion: d.OSVersion, ComplianceState: d.ComplianceState, IsEncrypted: d.IsEncrypted,
			LastSync: timePtr(d.LastSync)}
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) trend(w http.ResponseWriter, r *http.Request) {
	tenants, err := sdk.TenantScope(r, "tenant_ids")
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	from := h.now().AddDate(0, 0, 1-intQuery(r, "days")).Format(time.DateOnly)
	rows, err := h.Store.Trend(r.Context(), tenants, from)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	out := make([]TrendDay, len(rows))
	for i, d := range rows {
		out[i] = TrendDay{Date: d.Day, Tenants: d.Tenants, TotalUsers: d.TotalUsers, MFAUsers: d.MFAUsers, AdminUsers: d.AdminUsers,
			MFACoverage: percent(d.MFAUsers, d.TotalUsers), AdminMFA: percent(d.AdminMFAUsers, d.AdminUsers)}
	}
	sdk.WriteJSON(w, http.StatusOK, out)
}
