package pages

import (
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/stewardhq/steward/host/notifications"
	"github.com/stewardhq/steward/host/websession"
	sdkui "github.com/stewardhq/steward/sdk/ui"
	"github.com/stewardhq/steward/ui"
)

// The Notifications page and the forms it posts; each form answers 303 to
// the page once done, or the page again (422) saying what to change.
const (
	NotificationsPath            = "/notifications"
	NotificationChannelsFormPath = "/notifications/channels"
	NotificationSubsFormPath     = "/notifications/subscriptions"
)

// NotificationRetryPath is where a dead delivery's Retry form posts.
func NotificationRetryPath(id int64) string {
	return "/notifications/deliveries/" + strconv.FormatInt(id, 10) + "/retry"
}

// notificationRows is how many recent deliveries, and dead ones, the page
// lists.
const notificationRows = 20

// maxNotificationForm bounds a notification form's body.
const maxNotificationForm = 16 << 10

// notificationScope is what the caller may see of notifications.
func notificationScope(caller Caller) notifications.Scope {
	return notifications.Scope{All: caller.Admin, TenantIDs: caller.TenantIDs}
}

// notificationForm is a refused form shown again: which form, why, and
// what was sent (never a secret).
type notificationForm struct {
	form, problem string
	input         url.Values
}

func (p *Pages) notificationsPage(c *fiber.Ctx, caller Caller) error {
	return p.showNotifications(c, caller, notificationForm{})
}

// showNotifications renders the page, with a refused form's problem; the
// answer is then a 422.
func (p *Pages) showNotifications(c *fiber.Ctx, caller Caller, refused notificationForm) error {
	d, done, err := p.prepare(c, caller, "Notifications")
	if done {
		return err
	}
	ctx := c.UserContext()
	// The page shows the picked tenant's or brand's channels, or all the
	// caller's, the installation's among them for an admin.
	sc := notificationScope(caller)
	switch {
	case d.TenantID != "":
		sc = notifications.Scope{TenantIDs: []string{d.TenantID}}
	case d.BrandID != "":
		ids, err := p.d.Tenancy.BrandScope(ctx, d.BrandID, caller.TenantIDs, caller.Admin)
		if err != nil {
			return err
		}
		sc = notifications.Scope{TenantIDs: ids}
	}
	channels, err := p.d.Notifications.Channels(ctx, sc, "")
	if err != nil {
		return err
	}
	subs, err := p.d.Notifications.Subscriptions(ctx, sc, "")
	if err != nil {
		return err
	}
	recent, _, err := p.d.Notifications.Deliveries(ctx, sc, notifications.DeliveryFilter{Limit: notificationRows})
	if err != nil {
		return err
	}
	dead, deadTotal, err := p.d.Notifications.Deliveries(ctx, sc, notifications.DeliveryFilter{Status: notifications.StatusDead, Limit: notificationRows})
	if err != nil {
		return err
	}
	var eventIDs []string
	for _, dl := range slices.Concat(recent, dead) {
		eventIDs = append(eventIDs, dl.EventID)
	}
	titles, err := p.d.Notifications.EventTitles(ctx, eventIDs)
	if err != nil {
		return err
	}
	var tenants []ui.Tenant
	for _, t := range d.Tenants {
		if sc.All || slices.Contains(sc.TenantIDs, t.ID) {
			tenants = append(tenants, t)
		}
	}
	v := notificationsView{installation: sc.All, tenants: tenants, channels: channels, subs: subs, recent: recent, dead: dead, deadTotal: deadTotal,
		titles: titles, types: p.d.Notifications.EventTypes(), csrf: d.CSRFToken, refused: refused}
	d.Description = "Where Steward sends what happened, what each channel hears, and how its deliveries went."
	d.Content = v.body()
	if err := render(c, func(w http.ResponseWriter) error { return p.d.UI.Page(w, d) }); err != nil {
		return err
	}
	if refused.form != "" {
		c.Status(http.StatusUnprocessableEntity)
	}
	return nil
}

// notificationError is a store error as the page says it; ok is false
// for an error that is no caller's mistake.
func notificationError(err error) (msg string, status int, ok bool) {
	var ve *notifications.ValidationError
	var ce *notifications.ConflictError
	switch {
	case errors.As(err, &ve):
		return ve.Field + ": " + ve.Reason, http.StatusUnprocessableEntity, true
	case errors.As(err, &ce):
		return ce.Reason, http.StatusConflict, true
	case errors.Is(err, notifications.ErrForbidden):
		return "you may add channels only for your own tenants; an installation channel is an administrator's", http.StatusForbidden, true
	case errors.Is(err, notifications.ErrNotFound):
		return "no such channel or delivery", http.StatusNotFound, true
	}
	return "", 0, false
}

// formValues reads a form's body; a body too long or malformed is nil.
func formValues(c *fiber.Ctx) url.Values {
	form, err := sdkui.ParseForm(c.Body(), maxNotificationForm)
	if err != nil {
		return nil
	}
	return form
}

func (p *Pages) addChannel(c *fiber.Ctx, caller Caller) error {
	form := formValues(c)
	if form == nil {
		return p.d.Invalid(c, "body", fmt.Sprintf("must be a form of at most %d bytes", maxNotificationForm))
	}
	get := func(k string) string { return strings.TrimSpace(form.Get(k)) }
	n := notifications.NewChannel{Name: get("name"), Kind: get("kind"), CreatedBy: caller.ID,
		Settings: notifications.Settings{SMTPHost: get("smtp_host"), TLS: get("tls"), Username: get("username"), From: get("from")},
		Secrets:  notifications.Secrets{Password: form.Get("password"), URL: get("url"), SigningSecret: form.Get("signing_secret")}}
	if t := get("tenant_id"); t != "" {
		n.TenantID = &t
	}
	if port := get("smtp_port"); port != "" {
		v, err := strconv.Atoi(port)
		if err != nil {
			return p.refuseForm(c, caller, "channel", "settings.smtp_port: must be a number from 1 to 65535", form)
		}
		n.Settings.SMTPPort = v
	}
	for to := range strings.SplitSeq(get("to"), ",") {
		if to = strings.TrimSpace(to); to != "" {
			n.Settings.To = append(n.Settings.To, to)
		}
	}
	ch, err := p.d.Notifications.CreateChannel(c.UserContext(), notificationScope(caller), n)
	if err != nil {
		msg, _, ok := notificationError(err)
		if !ok {
			return err
		}
		return p.refuseForm(c, caller, "channel", msg, form)
	}
	p.d.Audit(c, "notification_channel.create.success", "notification_channel", ch.ID)
	return c.Redirect(NotificationsPath, http.StatusSeeOther)
}

func (p *Pages) addSubscription(c *fiber.Ctx, caller Caller) error {
	form := formValues(c)
	if form == nil {
		return p.d.Invalid(c, "body", fmt.Sprintf("must be a form of at most %d bytes", maxNotificationForm))
	}
	sub, err := p.d.Notifications.CreateSubscription(c.UserContext(), notificationScope(caller), notifications.NewSubscription{
		ChannelID: form.Get("channel_id"), EventTypes: form["event_types"], MinSeverity: form.Get("min_severity"), Digest: form.Get("digest"), CreatedBy: caller.ID})
	if err != nil {
		msg, _, ok := notificationError(err)
		if !ok {
			return err
		}
		return p.refuseForm(c, caller, "subscription", msg, form)
	}
	p.d.Audit(c, "notification_subscription.create.success", "notification_subscription", sub.ID)
	return c.Redirect(NotificationsPath, http.StatusSeeOther)
}

func (p *Pages) retryDelivery(c *fiber.Ctx, caller Caller) error {
	id, err := strconv.ParseInt(c.Params("delivery_id"), 10, 64)
	if err != nil || id < 1 {
		return p.d.Invalid(c, "path.delivery_id", "must be a positive integer")
	}
	d, err := p.d.Notifications.RetryDelivery(c.UserContext(), notificationScope(caller), id)
	if err != nil {
		msg, status, ok := notificationError(err)
		if !ok {
			return err
		}
		return p.refuse(c, fiber.NewError(status, msg))
	}
	p.d.Audit(c, "notification_delivery.retry.success", "notification_delivery", strconv.FormatInt(d.ID, 10))
	return c.Redirect(NotificationsPath, http.StatusSeeOther)
}

// refuseForm shows the page again with the form's problem and its input,
// its secrets left out.
func (p *Pages) refuseForm(c *fiber.Ctx, caller Caller, form, problem string, input url.Values) error {
	input = maps.Clone(input)
	for _, secret := range []string{"password", "url", "signing_secret", websession.FormCSRF} {
		input.Del(secret)
	}
	return p.showNotifications(c, caller, notificationForm{form: form, problem: problem, input: input})
}

// notificationsView is what the page shows.
type notificationsView struct {
	// installation is set when the page shows the installation's
	// channels: an admin's, with no tenant or brand picked.
	installation bool
	// tenants are the tenants the page shows, by name.
	tenants   []ui.Tenant
	channels  []notifications.Channel
	subs      []notifications.Subscription
	recent    []notifications.Delivery
	dead      []notifications.Delivery
	deadTotal int
	titles    map[string]string
	types     []notifications.EventType
	csrf      string
	refused   notificationForm
}

func (v notificationsView) tenantName(id *string) string {
	if id == nil {
		return "Installation"
	}
	for _, t := range v.tenants {
		if t.ID == *id {
			return t.Name
		}
	}
	return *id
}

func (v notificationsView) channelName(id string) string {
	for _, c := range v.channels {
		if c.ID == id {
			return c.Name
		}
	}
	return id
}

var kindLabels = map[string]string{notifications.KindEmail: "E-mail", notifications.KindSlack: "Slack", notifications.KindTeams: "Microsoft Teams", notifications.KindWebhook: "Webhook"}

func (v notificationsView) body() template.HTML {
	return stack(v.channelsCard(), v.deadCard(), v.recentCard(), v.channelForm(), v.subscriptionForm())
}

func (v notificationsView) channelsCard() template.HTML {
	rows := make([][]any, 0, len(v.channels))
	for _, c := range v.channels {
		dest := c.Settings.URLHost
		if c.Kind == notifications.KindEmail {
			dest = c.Settings.SMTPHost + " → " + strings.Join(c.Settings.To, ", ")
			if c.Contacts {
				dest += " (and an event's contacts)"
			}
		}
		enabled := sdkui.Badge("Enabled", sdkui.OK)
		if !c.Enabled {
			enabled = sdkui.Badge("Disabled", sdkui.Unknown)
		}
		var heard []any
		for _, s := range v.subs {
			if s.ChannelID != c.ID {
				continue
			}
			types := "every event"
			if len(s.EventTypes) > 0 {
				types = strings.Join(s.EventTypes, ", ")
			}
			line := types + ", " + s.MinSeverity + " and above"
			if s.Digest != notifications.DigestNone {
				line += ", " + s.Digest + " digest"
			}
			heard = append(heard, line)
		}
		if len(heard) == 0 {
			heard = []any{muted("Nothing yet: add a subscription")}
		}
		rows = append(rows, []any{strong(c.Name), kindLabels[c.Kind], v.tenantName(c.TenantID), dest, enabled, lines(heard...)})
	}
	if len(rows) == 0 {
		return sdkui.Card("Channels", sdkui.Empty("No channels yet. Add one below, then a subscription saying what it hears."))
	}
	return sdkui.Card("Channels", sdkui.Table([]string{"Channel", "Kind", "Scope", "Destination", "State", "Hears"}, rows, "Notification channels"))
}

func (v notificationsView) deadCard() template.HTML {
	if len(v.dead) == 0 {
		return sdkui.Card("Dead letters", sdkui.Empty("No delivery has run out of attempts."))
	}
	rows := make([][]any, 0, len(v.dead))
	for _, d := range v.dead {
		retry := execNotification("retry", struct {
			Path, CSRFField, CSRF, Label string
		}{NotificationRetryPath(d.ID), websession.FormCSRF, v.csrf, "the delivery of " + v.titles[d.EventID] + " to " + v.channelName(d.ChannelID)})
		rows = append(rows, []any{v.titles[d.EventID], v.channelName(d.ChannelID), strconv.Itoa(d.Attempts), d.LastError, sdkui.Time(d.CreatedAt), retry})
	}
	body := sdkui.Table([]string{"Event", "Channel", "Attempts", "Last error", "Raised", "Retry"}, rows, "Dead letters")
	if v.deadTotal > len(v.dead) {
		body = stack(body, execFragment("paragraph", fmt.Sprintf("%d of %d shown, newest first; GET /api/v1/notifications/deliveries?status=dead lists them all.", len(v.dead), v.deadTotal)))
	}
	return sdkui.Card("Dead letters", body)
}

func (v notificationsView) recentCard() template.HTML {
	rows := make([][]any, 0, len(v.recent))
	for _, d := range v.recent {
		status := sdkui.Badge("Pending", sdkui.Unknown)
		switch d.Status {
		case notifications.StatusDelivered:
			status = sdkui.Badge("Delivered", sdkui.OK)
		case notifications.StatusDead:
			status = sdkui.Badge("Dead", sdkui.Critical)
		}
		to := v.channelName(d.ChannelID)
		if d.Recipient != "" {
			to += " → " + d.Recipient
		}
		rows = append(rows, []any{v.titles[d.EventID], to, status, strconv.Itoa(d.Attempts), d.LastError, sdkui.Time(d.CreatedAt)})
	}
	if len(rows) == 0 {
		return sdkui.Card("Recent deliveries", sdkui.Empty("Nothing delivered yet."))
	}
	return sdkui.Card("Recent deliveries", sdkui.Table([]string{"Event", "To", "Status", "Attempts", "Last error", "Raised"}, rows, "Recent deliveries"))
}

// option is a select's choice.
type option struct {
	Value, Label string
	Selected     bool
}

func options(values, labels []string, selected ...string) []option {
	out := make([]option, len(values))
	for i, val := range values {
		out[i] = option{Value: val, Label: labels[i], Selected: slices.Contains(selected, val)}
	}
	return out
}

// problem is the refused form's problem, shown above the form.
func (v notificationsView) problem(form string) template.HTML {
	if v.refused.form == form {
		return sdkui.ErrorState("Not added: " + v.refused.problem)
	}
	return ""
}

func (v notificationsView) input(form, field string) string {
	if v.refused.form == form {
		return v.refused.input.Get(field)
	}
	return ""
}

func (v notificationsView) channelForm() template.HTML {
	var scopes, labels []string
	if v.installation {
		scopes, labels = append(scopes, ""), append(labels, "Installation (every tenant's events)")
	}
	for _, t := range v.tenants {
		scopes, labels = append(scopes, t.ID), append(labels, t.Name)
	}
	in := func(f string) string { return v.input("channel", f) }
	kinds := []string{notifications.KindEmail, notifications.KindSlack, notifications.KindTeams, notifications.KindWebhook}
	kindNames := make([]string, len(kinds))
	for i, k := range kinds {
		kindNames[i] = kindLabels[k]
	}
	return sdkui.Card("Add a channel", execNotification("channel", map[string]any{
		"Path": NotificationChannelsFormPath, "CSRFField": websession.FormCSRF, "CSRF": v.csrf, "Problem": v.problem("channel"),
		"Name": in("name"), "Kinds": options(kinds, kindNames, in("kind")), "Scopes": options(scopes, labels, in("tenant_id")),
		"SMTPHost": in("smtp_host"), "SMTPPort": in("smtp_port"), "TLS": options([]string{"starttls", "tls", "none"}, []string{"STARTTLS", "Implicit TLS", "None (trusted relay)"}, in("tls")),
		"Username": in("username"), "From": in("from"), "To": in("to"),
	}))
}

func (v notificationsView) subscriptionForm() template.HTML {
	if len(v.channels) == 0 {
		return ""
	}
	ids, names := make([]string, len(v.channels)), make([]string, len(v.channels))
	for i, c := range v.channels {
		ids[i], names[i] = c.ID, c.Name+" ("+v.tenantName(c.TenantID)+")"
	}
	types, typeNames := make([]string, len(v.types)), make([]string, len(v.types))
	for i, t := range v.types {
		types[i], typeNames[i] = t.Name, t.Name
	}
	var picked []string
	if v.refused.form == "subscription" {
		picked = v.refused.input["event_types"]
	}
	in := func(f string) string { return v.input("subscription", f) }
	return sdkui.Card("Add a subscription", execNotification("subscription", map[string]any{
		"Path": NotificationSubsFormPath, "CSRFField": websession.FormCSRF, "CSRF": v.csrf, "Problem": v.problem("subscription"),
		"Channels": options(ids, names, in("channel_id")), "Types": options(types, typeNames, picked...),
		"Severities": options(notifications.Severities, notifications.Severities, in("min_severity")),
		"Digests":    options(notifications.Digests, []string{"Each event on its own", "Hourly digest", "Daily digest"}, in("digest")),
	}))
}

var notificationTemplates = template.Must(template.New("notifications").Parse(`
{{- define "retry" -}}
<form method="post" action="{{.Path}}"><input type="hidden" name="{{.CSRFField}}" value="{{.CSRF}}"><button class="btn btn-small" type="submit">Retry<span class="visually-hidden"> {{.Label}}</span></button></form>
{{- end}}

{{- define "options"}}{{range .}}<option value="{{.Value}}"{{if .Selected}} selected{{end}}>{{.Label}}</option>{{end}}{{end}}

{{- define "channel" -}}
<form method="post" action="{{.Path}}" aria-describedby="nc-hint">
<input type="hidden" name="{{.CSRFField}}" value="{{.CSRF}}">
{{.Problem}}
<p class="muted" id="nc-hint">E-mail needs the SMTP fields; Slack and Teams their webhook URL; a webhook its URL and a signing secret of at least 32 characters. Secrets are stored sealed and never shown again.</p>
<div class="field"><label for="nc-name">Name</label><input id="nc-name" name="name" maxlength="200" required value="{{.Name}}"></div>
<div class="field"><label for="nc-kind">Kind</label><select id="nc-kind" name="kind">{{template "options" .Kinds}}</select></div>
<div class="field"><label for="nc-scope">Scope</label><select id="nc-scope" name="tenant_id">{{template "options" .Scopes}}</select></div>
<fieldset><legend>E-mail</legend>
<div class="field"><label for="nc-smtp-host">SMTP host</label><input id="nc-smtp-host" name="smtp_host" maxlength="253" value="{{.SMTPHost}}"></div>
<div class="field"><label for="nc-smtp-port">SMTP port (default 587, 465 or 25 after TLS)</label><input id="nc-smtp-port" name="smtp_port" inputmode="numeric" value="{{.SMTPPort}}"></div>
<div class="field"><label for="nc-tls">TLS</label><select id="nc-tls" name="tls">{{template "options" .TLS}}</select></div>
<div class="field"><label for="nc-username">Username (optional)</label><input id="nc-username" name="username" maxlength="200" autocomplete="off" value="{{.Username}}"></div>
<div class="field"><label for="nc-password">Password</label><input id="nc-password" name="password" type="password" autocomplete="new-password"></div>
<div class="field"><label for="nc-from">From</label><input id="nc-from" name="from" type="email" value="{{.From}}"></div>
<div class="field"><label for="nc-to">To (addresses separated by commas)</label><input id="nc-to" name="to" value="{{.To}}"></div>
</fieldset>
<fieldset><legend>Slack, Teams and webhook</legend>
<div class="field"><label for="nc-url">Webhook URL</label><input id="nc-url" name="url" type="url" autocomplete="off"></div>
<div class="field"><label for="nc-signing">Signing secret (webhook)</label><input id="nc-signing" name="signing_secret" type="password" autocomplete="new-password"></div>
</fieldset>
<button class="btn btn-primary" type="submit">Add channel</button>
</form>
{{- end}}

{{- define "subscription" -}}
<form method="post" action="{{.Path}}">
<input type="hidden" name="{{.CSRFField}}" value="{{.CSRF}}">
{{.Problem}}
<div class="field"><label for="ns-channel">Channel</label><select id="ns-channel" name="channel_id">{{template "options" .Channels}}</select></div>
<div class="field"><label for="ns-types">Event types (none picked: every type)</label><select id="ns-types" name="event_types" multiple>{{template "options" .Types}}</select></div>
<div class="field"><label for="ns-severity">Minimum severity</label><select id="ns-severity" name="min_severity">{{template "options" .Severities}}</select></div>
<div class="field"><label for="ns-digest">Delivery</label><select id="ns-digest" name="digest">{{template "options" .Digests}}</select></div>
<button class="btn btn-primary" type="submit">Add subscription</button>
</form>
{{- end}}
`))

// execNotification executes one of notificationTemplates, on data of this
// file's own, so an error is a bug here.
func execNotification(name string, data any) template.HTML {
	var b strings.Builder
	if err := notificationTemplates.ExecuteTemplate(&b, name, data); err != nil {
		panic("pages: notification template " + name + ": " + err.Error())
	}
	return template.HTML(b.String())
}
