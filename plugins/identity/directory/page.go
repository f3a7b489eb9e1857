package directory

import (
	"bytes"
	"context"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/core/revcache"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// What the page shows.
const (
	// trendDays is how many days, today included, the MFA trend charts.
	trendDays = 30
	// listShown is how many rows each hygiene list shows; the rest are a
	// link to the list's API route away, as a large tenant's lists run to
	// thousands.
	listShown = 10
	// apiPage is the page size of the lists' API links, the routes'
	// largest.
	apiPage = 500
)

// pageIn is the tenant the page is asked for, if one.
type pageIn struct {
	Tenant sdk.TenantID `query:"tenant_id"`
}

// page is the identity page over the tenants the request covers: MFA
// coverage of the enabled members and of the admins as gauges with the figures
// per tenant, the Conditional Access posture, the Global Administrators,
// the daily MFA trend, and the hygiene lists — accounts without MFA
// (admins first), privileged accounts, stale accounts, guests, disabled
// accounts still holding roles, noncompliant devices, users at risk and
// application credentials ended or ending within 30 days.
func (h *Handlers) page(w http.ResponseWriter, r *http.Request, in *pageIn) {
	// The figures, the trend and the lists read the tenants' revision
	// once.
	ctx := revcache.OneRead(r.Context())
	tenants := sdkui.Tenants(r)
	counts, err := h.Store.Counts(ctx, tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	if len(counts) == 0 {
		sdkui.WriteFragment(w, http.StatusOK, sdkui.Empty(noData))
		return
	}
	ids := make([]string, len(counts))
	for i, c := range counts {
		ids[i] = c.TenantID
	}
	names, err := pluginenv.TenantNames(ctx, h.Host, ids)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	l := lists{h: h, ctx: ctx, tenants: tenants, names: names, many: len(counts) > 1, scoped: in.Tenant != ""}
	trend, err := h.trendChart(ctx, tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	postures, err := h.Store.Postures(ctx, tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	admins, err := h.Store.GlobalAdmins(ctx, tenants)
	if err != nil {
		sdk.WriteError(w, err)
		return
	}
	parts := []template.HTML{sdkui.Card("MFA coverage", coverage(counts, names)), sdkui.Card("Conditional Access", accessCard(postures, names)),
		sdkui.Card("Global Administrators", adminsCard(admins, names)),
		sdkui.Card("MFA coverage, last "+strconv.Itoa(trendDays)+" days", trend)}
	for _, list := range []struct {
		title string
		body  func() (template.HTML, error)
	}{
		{"Accounts without MFA, admins first", l.withoutMFA},
		{"Privileged accounts", l.privileged},
		{"Stale accounts", l.stale},
		{"Guests", l.guests},
		{"Disabled accounts holding roles", l.disabledWithRoles},
		{"Device compliance", l.devices},
		{"Privileged accounts approved without MFA", l.reviewFindings},
		{"Overdue access reviews", l.overdueReviews},
		{"Users at risk", l.risky},
		{"Application credentials", l.credentials},
	} {
		body, err := list.body()
		if err != nil {
			sdk.WriteError(w, err)
			return
		}
		parts = append(parts, sdkui.Card(list.title, body))
	}
	sdkui.WriteFragment(w, http.StatusOK, stack(parts...))
}

// coverage is the gauges of MFA coverage, of the enabled members and of the
// admins, the headline figures, and each tenant's figures by name when
// there are several.
func coverage(counts []TenantCounts, names map[string]string) template.HTML {
	sum := sumCounts(counts)
	admins := sdkui.Stat("Admin MFA", "no admins", "no account holds a directory role", sdkui.Unknown)
	if p := percent(sum.AdminMFAUsers, sum.AdminUsers); p != nil {
		admins = sdkui.Gauge(*p, "Admin MFA, "+count(sum.AdminMFAUsers)+" of "+count(sum.AdminUsers)+" admins", sdkui.AtLeast(*p, mfaHealthy, mfaWarning))
	}
	devices := sdkui.Stat("Compliant devices", "none managed", "", sdkui.Unknown)
	if p := percent(sum.CompliantDevices, sum.Devices); p != nil {
		devices = sdkui.Stat("Compliant devices", sdkui.FormatNumber(*p)+" %", count(sum.CompliantDevices)+" of "+count(sum.Devices)+" managed devices", sdkui.AtLeast(*p, mfaHealthy, mfaWarning))
	}
	parts := []template.HTML{
		sdkui.Grid(
			coverageGauge(sum),
			admins,
		),
		sdkui.Grid(
			sdkui.Stat("Accounts without MFA", count(sum.TotalUsers-sum.MFAUsers), "", ""),
			sdkui.Stat("Admins", count(sum.AdminUsers), "holders of a directory role", ""),
			sdkui.Stat("Guests", count(sum.GuestUsers), "", ""),
			sdkui.Stat("Disabled accounts", count(sum.DisabledUsers), "", ""),
			devices,
		),
	}
	if len(counts) > 1 {
		byName := slices.Clone(counts)
		slices.SortStableFunc(byName, func(a, b TenantCounts) int { return strings.Compare(names[a.TenantID], names[b.TenantID]) })
		rows := make([][]any, 0, len(counts))
		for _, c := range byName {
			rows = append(rows, []any{names[c.TenantID], count(c.TotalUsers), percentText(c.MemberMFAUsers, c.MemberUsers),
				percentText(c.AdminMFAUsers, c.AdminUsers), count(c.GuestUsers), percentText(c.CompliantDevices, c.Devices)})
		}
		parts = append(parts, sdkui.Table([]string{"Tenant", "Accounts", "MFA coverage", "Admin MFA", "Guests", "Compliant devices"}, rows,
			"MFA coverage of each tenant"))
	}
	return stack(parts...)
}

// trendChart charts the daily MFA coverage, of the enabled members and of the
// admins, over the trendDays days up to today; a day without a sync has no
// point.
func (h *Handlers) trendChart(ctx context.Context, tenants []string) (template.HTML, error) {
	today := h.now().Truncate(24 * time.Hour)
	from := today.AddDate(0, 0, 1-trendDays)
	rows, err := h.Store.Trend(ctx, tenants, from.Format(time.DateOnly))
	if err != nil {
		return "", err
	}
	labels := make([]string, trendDays)
	all, admins := make([]float64, trendDays), make([]float64, trendDays)
	byDay := map[string]DayFigures{}
	for _, d := range rows {
		byDay[d.Day] = d
	}
	for i := range trendDays {
		day := from.AddDate(0, 0, i).Format(time.DateOnly)
		labels[i], all[i], admins[i] = day, math.NaN(), math.NaN()
		if d, ok := byDay[day]; ok {
			if p := percent(d.MemberMFAUsers, d.MemberUsers); p != nil {
				all[i] = *p
			}
			if p := percent(d.AdminMFAUsers, d.AdminUsers); p != nil {
				admins[i] = *p
			}
		}
	}
	return stack(
		sdkui.LineChart("MFA coverage in percent", labels, []sdkui.Series{{Name: "Enabled members", Values: all}, {Name: "Admins", Values: admins}}, nil),
		render("note", "Each day's coverage is the last sync of that day; a day without a sync has no point."),
	), nil
}

// lists renders the page's hygiene lists: their first listShown rows, how
// many there are, and a link to the whole list on the API.
type lists struct {
	h       *Handlers
	ctx     context.Context
	tenants []string
	names   map[string]string
	// many is set when the page covers several tenants, which adds a
	// tenant column.
	many bool
	// scoped is set when the page is of the one tenant its tenant_id
	// names, which the API links name too.
	scoped bool
}

func (l lists) page(sortBy string, desc bool) Page {
	return Page{TenantIDs: l.tenants, SortBy: sortBy, Desc: desc, Limit: listShown}
}

// columns are the list's columns, with the tenant's after the first when
// the page covers several tenants.
func (l lists) columns(cols ...string) []string {
	if l.many {
		return slices.Insert(cols, 1, "Tenant")
	}
	return cols
}

// row is a list's row, with its tenant's name after the first cell when
// the page covers several tenants.
func (l lists) row(tenantID string, cells ...any) []any {
	if l.many {
		return slices.Insert(cells, 1, any(l.names[tenantID]))
	}
	return cells
}

// table is a list's table, the count it shows of how many there are, and
// the link to all of them on the API route path (with its own query).
func (l lists) table(columns []string, rows [][]any, caption, what string, total int, path, query string) template.HTML {
	if total == 0 {
		return sdkui.Empty("No " + what + ".")
	}
	q, _ := url.ParseQuery(query)
	q.Set("limit", strconv.Itoa(apiPage))
	if l.scoped {
		q.Set("tenant_ids", l.tenants[0])
	}
	return stack(
		sdkui.Table(columns, rows, caption),
		render("more", struct {
			Shown, Total, What, Href string
			Paged                    bool
			PageSize                 int
		}{count(int64(len(rows))), count(int64(total)), what, path + "?" + q.Encode(), total > apiPage, apiPage}),
	)
}

func (l lists) withoutMFA() (template.HTML, error) {
	rows, total, err := l.h.Store.Users(l.ctx, l.page("display_name", false), UserFilter{WithoutMFA: true, AdminsFirst: true})
	if err != nil {
		return "", err
	}
	out := make([][]any, 0, len(rows))
	for _, u := range rows {
		out = append(out, l.row(u.TenantID, account(u.DisplayName, u.UserPrincipalName), kind(u), l.h.signIn(u.LastSignIn)))
	}
	return l.table(l.columns("Account", "Kind", "Last sign-in"), out, "Accounts without an MFA method, admins first",
		"accounts without MFA", total, "/api/v1/identity/users/without-mfa", ""), nil
}

func (l lists) assignments(disabledOnly bool) ([][]any, int, error) {
	rows, total, err := l.h.Store.Assignments(l.ctx, l.page("display_name", false), disabledOnly)
	if err != nil {
		return nil, 0, err
	}
	out := make([][]any, 0, len(rows))
	for _, a := range rows {
		state, mfa := sdkui.Badge("Not a synced user", sdkui.Unknown), sdkui.Badge("Unknown", sdkui.Unknown)
		if a.AccountEnabled != nil {
			state = sdkui.Badge("Enabled", sdkui.OK)
			if !*a.AccountEnabled {
				state = sdkui.Badge("Disabled", sdkui.Warning)
			}
		}
		if a.MFARegistered != nil {
			mfa = yesNo(*a.MFARegistered)
		}
		out = append(out, l.row(a.TenantID, account(a.MemberName, a.MemberUPN), a.RoleName, state, mfa, l.h.signIn(a.LastSignIn)))
	}
	return out, total, nil
}

func (l lists) privileged() (template.HTML, error) {
	rows, total, err := l.assignments(false)
	if err != nil {
		return "", err
	}
	return l.table(l.columns("Holder", "Role", "Account", "MFA", "Last sign-in"), rows, "Directory role assignments by holder",
		"role assignments", total, "/api/v1/identity/privileged", "sort_by=display_name"), nil
}

func (l lists) disabledWithRoles() (template.HTML, error) {
	rows, total, err := l.assignments(true)
	if err != nil {
		return "", err
	}
	return l.table(l.columns("Holder", "Role", "Account", "MFA", "Last sign-in"), rows, "Role assignments of disabled accounts",
		"role assignments of disabled accounts", total, "/api/v1/identity/disabled-with-roles", "sort_by=display_name"), nil
}

func (l lists) stale() (template.HTML, error) {
	rows, total, err := l.h.Store.Users(l.ctx, l.page("last_sign_in", false),
		UserFilter{StaleBefore: l.h.now().AddDate(0, 0, -defaultStaleDays)})
	if err != nil {
		return "", err
	}
	out := make([][]any, 0, len(rows))
	for _, u := range rows {
		out = append(out, l.row(u.TenantID, account(u.DisplayName, u.UserPrincipalName), kind(u), yesNo(u.MFARegistered), l.h.signIn(u.LastSignIn)))
	}
	return l.table(l.columns("Account", "Kind", "MFA", "Last sign-in"), out,
		"Enabled accounts without a sign-in for "+strconv.Itoa(defaultStaleDays)+" days, oldest sign-in first",
		"stale accounts", total, "/api/v1/identity/stale", "sort_by=last_sign_in"), nil
}

func (l lists) guests() (template.HTML, error) {
	rows, total, err := l.h.Store.Users(l.ctx, l.page("created_at", false), UserFilter{Guests: true})
	if err != nil {
		return "", err
	}
	out := make([][]any, 0, len(rows))
	for _, u := range rows {
		age := "unknown"
		if d := days(u.Created, l.h.now()); d != nil {
			age = count(int64(*d)) + " days"
		}
		out = append(out, l.row(u.TenantID, account(u.DisplayName, u.Mail), age, yesNo(u.MFARegistered), l.h.signIn(u.LastSignIn)))
	}
	return l.table(l.columns("Guest", "Age", "MFA", "Last sign-in"), out, "Guest accounts, oldest first",
		"guests", total, "/api/v1/identity/guests", "sort_by=created_at"), nil
}

func (l lists) devices() (template.HTML, error) {
	rows, total, err := l.h.Store.Devices(l.ctx, l.page("last_sync", false), "noncompliant")
	if err != nil {
		return "", err
	}
	out := make([][]any, 0, len(rows))
	for _, d := range rows {
		last := "never"
		if !d.LastSync.IsZero() {
			last = d.LastSync.UTC().Format(time.DateOnly)
		}
		out = append(out, l.row(d.TenantID, account(d.Name, d.UserPrincipalName), d.OperatingSystem+" "+d.OSVersion, yesNo(d.IsEncrypted), last))
	}
	return l.table(l.columns("Device", "System", "Encrypted", "Last sync"), out, "Noncompliant managed devices, longest unsynced first",
		"noncompliant devices", total, "/api/v1/identity/devices", "compliance_state=noncompliant&sort_by=last_sync"), nil
}

// signIn is a last sign-in as a list shows it: its day and how long ago.
func (h *Handlers) signIn(t time.Time) template.HTML {
	if t.IsZero() {
		return twoLines("never", "")
	}
	return twoLines(t.UTC().Format(time.DateOnly), count(int64(*days(t, h.now())))+" days ago")
}

// kind is an account's kind, an admin's in the critical colour.
func kind(u UserRow) template.HTML {
	switch {
	case u.IsAdmin:
		return sdkui.Badge("Admin", sdkui.Critical)
	case u.UserType == "Guest":
		return sdkui.Badge("Guest", sdkui.Unknown)
	}
	return sdkui.Badge("Member", sdkui.Unknown)
}

func yesNo(ok bool) template.HTML {
	if ok {
		return sdkui.Badge("Yes", sdkui.OK)
	}
	return sdkui.Badge("No", sdkui.Critical)
}

// account is a table cell of a name over its sign-in name or address.
func account(name, detail string) template.HTML { return twoLines(name, detail) }

// count is a whole number with its thousands separated.
func count(n int64) string { return sdkui.FormatNumber(float64(n)) }

// percentText is part of whole in percent to two decimals, or a dash.
func percentText(part, whole int64) string {
	if p := percent(part, whole); p != nil {
		return sdkui.FormatNumber(*p) + " %"
	}
	return "–"
}

// markup is the page's own HTML beside the kit's components, on the host's
// CSS classes. No script and no style attribute: the host's
// Content-Security-Policy forbids both.
var markup = template.Must(template.New("views").Parse(`
{{- define "note"}}<p class="muted">{{.}}</p>{{end}}
{{- define "lines"}}{{.Main}}{{if .Detail}}<br><span class="muted">{{.Detail}}</span>{{end}}{{end}}
{{- define "stack"}}<div class="stack">{{range .}}{{.}}{{end}}</div>{{end}}
{{- define "more" -}}
<p class="muted">{{.Shown}} of {{.Total}} {{.What}}. {{if .Paged}}<a href="{{.Href}}">The {{.Total}} {{.What}} as JSON</a>, {{.PageSize}} a page (offset pages on).{{else}}<a href="{{.Href}}">All {{.Total}} {{.What}} as JSON</a>{{end}}</p>
{{- end}}
`))

// twoLines is a table cell of a value over a muted detail.
func twoLines(main, detail string) template.HTML {
	return render("lines", struct{ Main, Detail string }{main, detail})
}

// stack spaces blocks one under the other, as the kit's Join does not.
func stack(parts ...template.HTML) template.HTML { return render("stack", parts) }

// render executes one of markup's templates. Their data are this package's
// own, which they cannot fail on, so an error is a bug here.
func render(name string, data any) template.HTML {
	var b bytes.Buffer
	if err := markup.ExecuteTemplate(&b, name, data); err != nil {
		panic("directory: " + name + ": " + err.Error())
	}
	return template.HTML(b.String())
}
