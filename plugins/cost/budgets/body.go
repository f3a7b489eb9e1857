package budgets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/plugins/cost/ledger"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/jsonbody"
)

// Bounds of a budget's fields.
const (
	maxNameLen       = 100
	maxThresholds    = 5 // as Azure allows notifications on a budget
	minPercentage    = 1
	maxPercentage    = 1000 // as Azure allows
	maxContactEmails = 50
	maxEmailLen      = 254
	maxContacts      = 10
	defaultCurrency  = "USD"
)

// maxAmount is the largest budget amount, 10 billion units of its currency.
const maxAmount = ledger.Amount(10_000_000_000_00)

var (
	currencyRE     = regexp.MustCompile(`^[A-Z]{3}$`)
	subscriptionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,63}$`)
	actionGroupRE  = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/microsoft\.insights/actionGroups/[^/]+$`)
	contactRoles   = []string{"Owner", "Contributor", "Reader"}
	minStart       = mustDay("2000-01-01")
	maxDay         = mustDay("2099-12-31")
)

func mustDay(s string) ledger.Day {
	d, err := ledger.ParseDay(s)
	if err != nil {
		panic(err)
	}
	return d
}

// fields is a JSON object body by member, so a member that is absent can
// be told from one that is null.
type fields map[string]json.RawMessage

// createBody is the body of POST /api/v1/budgets. huma checks it against
// the schema its fields declare, and apply reads its members as sent.
type createBody struct {
	TenantID       sdk.TenantID       `json:"tenant_id" doc:"The tenant, one the caller may see"`
	SubscriptionID *string            `json:"subscription_id,omitempty" required:"false" nullable:"true" doc:"A subscription of the tenant; omitted or null for a budget of the whole tenant"`
	Name           string             `json:"name" minLength:"1" maxLength:"100" doc:"Unique in the tenant and scope, case-insensitively; a name holding markup (< or >) is refused"`
	Amount         float64            `json:"amount" exclusiveMinimum:"0" maximum:"10000000000" doc:"Per period, at most two decimals"`
	Currency       string             `json:"currency,omitempty" required:"false" pattern:"^[A-Z]{3}$" default:"USD" doc:"ISO 4217; only costs in this currency count"`
	TimeGrain      string             `json:"time_grain" enum:"Monthly,Quarterly,Annually"`
	StartDate      string             `json:"start_date" format:"date" doc:"The first day of a month, 2000-01-01 through 2099-12-01"`
	EndDate        *string            `json:"end_date,omitempty" required:"false" nullable:"true" format:"date" doc:"After start_date; omitted or null for no end"`
	Thresholds     []thresholdBody    `json:"thresholds" nullable:"false" minItems:"1" maxItems:"5"`
	Notifications  *notificationsBody `json:"notifications,omitempty" required:"false"`
	members        fields
}

// UnmarshalJSON keeps the members as sent, for apply.
func (b *createBody) UnmarshalJSON(raw []byte) error { return json.Unmarshal(raw, &b.members) }

// thresholdBody is a threshold as a body gives it.
type thresholdBody struct {
	Percentage    int      `json:"percentage" minimum:"1" maximum:"1000" doc:"Percent of the amount, 1 to 1000"`
	ContactEmails []string `json:"contact_emails,omitempty" required:"false" maxItems:"50" doc:"Whom the provider e-mails when the threshold is reached, once a subscription's budget is pushed; optional, as the alert is recorded in Steward either way. None when omitted or null"`
	ThresholdType string   `json:"threshold_type,omitempty" required:"false" enum:"Actual,Forecasted" default:"Actual" doc:"Actual compares the spend, Forecasted the forecast; Actual when omitted"`
}

// notificationsBody is the notification settings as a body gives them.
type notificationsBody struct {
	Enabled       *bool    `json:"enabled,omitempty" required:"false" default:"true" doc:"Whether the provider sends the thresholds' e-mails; true when omitted"`
	ContactRoles  []string `json:"contact_roles,omitempty" required:"false" maxItems:"10" enum:"Owner,Contributor,Reader" default:"[]" doc:"Roles on the subscription also told; none when omitted"`
	ContactGroups []string `json:"contact_groups,omitempty" required:"false" maxItems:"10" default:"[]" doc:"Action group resource ids also told; none when omitted"`
}

// patchBody is the body of PATCH /api/v1/budgets/{budget_id}: the create
// body's members, none required.
type patchBody struct{ members fields }

// Schema is the create body's schema without its required members.
func (patchBody) Schema(huma.Registry) *huma.Schema {
	s := sdk.SchemaOf(createBody{})
	s.Required = nil
	return s
}

// UnmarshalJSON keeps the members as sent, for apply.
func (b *patchBody) UnmarshalJSON(raw []byte) error { return json.Unmarshal(raw, &b.members) }

// ackFields are the members of an acknowledgement's body.
type ackFields struct {
	ResolutionNote *string `json:"resolution_note,omitempty" required:"false" nullable:"true" maxLength:"1000"`
}

// ackBody is an acknowledgement's optional body, which may be null.
type ackBody struct{ ackFields }

// Schema is ackFields' schema, null allowed.
func (ackBody) Schema(huma.Registry) *huma.Schema {
	s := sdk.SchemaOf(ackFields{})
	s.Nullable = true
	return s
}

type bulkBody struct {
	AlertIDs       []int64 `json:"alert_ids" nullable:"false" minItems:"1" maxItems:"500" minimum:"1" maximum:"9007199254740991" doc:"Alerts to acknowledge; all or none are"`
	ResolutionNote *string `json:"resolution_note,omitempty" required:"false" nullable:"true" maxLength:"1000"`
}

// syncBody is the optional body of a sync of all budgets, which may be
// null; its tenants are the route's tenant input.
type syncBody struct {
	TenantIDs sdk.TenantIDs `json:"tenant_ids,omitempty"`
}

// Schema documents the body: tenant_ids, optional.
func (syncBody) Schema(r huma.Registry) *huma.Schema {
	ids := sdk.TenantIDs{}.Schema(r)
	ids.Description = "Only these tenants; all the caller's when omitted"
	return &huma.Schema{Type: huma.TypeObject, Nullable: true, AdditionalProperties: false, Properties: map[string]*huma.Schema{"tenant_ids": ids}}
}

// noteOf is a resolution note trimmed, nil when empty.
func noteOf(s *string) *string {
	if s == nil {
		return nil
	}
	if t := strings.TrimSpace(*s); t != "" {
		return &t
	}
	return nil
}

// problems collects the invalid members of a body, with this package's
// readers of its members beside jsonbody's.
type problems struct{ jsonbody.Problems }

// name checks a budget's name: 1 to 100 characters once trimmed, no
// control characters, and no markup: a name holding < or > is refused
// rather than altered, so what is stored is what the caller sent.
func (p *problems) name(raw json.RawMessage) string {
	s, ok := p.String("body.name", raw)
	if !ok {
		return ""
	}
	s = strings.TrimSpace(s)
	switch n := len([]rune(s)); {
	case n == 0:
		p.Add("body.name", "must not be empty")
	case n > maxNameLen:
		p.Add("body.name", "must be at most %d characters", maxNameLen)
	case strings.ContainsAny(s, "<>"):
		p.Add("body.name", "must not contain markup (< or >)")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		p.Add("body.name", "must not contain control characters")
	}
	return s
}

// amount reads a JSON number of at most two decimals, more than 0 and at
// most maxAmount, exactly.
func (p *problems) amount(raw json.RawMessage) ledger.Amount {
	var num json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	// A JSON string holding a number decodes into a json.Number too.
	if err := d.Decode(&num); err != nil || bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) {
		p.Add("body.amount", "must be a number")
		return 0
	}
	r, ok := new(big.Rat).SetString(num.String())
	if !ok {
		p.Add("body.amount", "must be a number")
		return 0
	}
	cents := new(big.Rat).Mul(r, big.NewRat(100, 1))
	switch {
	case !cents.IsInt():
		p.Add("body.amount", "must have at most two decimals")
	case cents.Sign() <= 0:
		p.Add("body.amount", "must be more than 0")
	case cents.Cmp(new(big.Rat).SetInt64(int64(maxAmount))) > 0:
		p.Add("body.amount", "must be at most %s", maxAmount)
	default:
		return ledger.Amount(cents.Num().Int64())
	}
	return 0
}

func (p *problems) currency(raw json.RawMessage) string {
	s, ok := p.String("body.currency", raw)
	if ok && !currencyRE.MatchString(s) {
		p.Add("body.currency", "must be an ISO 4217 code of three capital letters, such as USD")
	}
	return s
}

func (p *problems) timeGrain(raw json.RawMessage) string {
	s, ok := p.String("body.time_grain", raw)
	if ok && grainMonths[s] == 0 {
		p.Add("body.time_grain", "must be one of Monthly, Quarterly, Annually")
	}
	return s
}

// day reads a YYYY-MM-DD date from 2000-01-01 through 2099-12-31.
func (p *problems) day(loc string, raw json.RawMessage) (ledger.Day, bool) {
	s, ok := p.String(loc, raw)
	if !ok {
		return 0, false
	}
	d, err := ledger.ParseDay(s)
	switch {
	case err != nil:
		p.Add(loc, "must be a date, YYYY-MM-DD")
	case d < minStart || d > maxDay:
		p.Add(loc, "must be from %s through %s", minStart, maxDay)
	default:
		return d, true
	}
	return 0, false
}

func (p *problems) startDate(raw json.RawMessage) ledger.Day {
	d, ok := p.day("body.start_date", raw)
	if ok && d.Time().Day() != 1 {
		p.Add("body.start_date", "must be the first day of a month")
	}
	return d
}

func (p *problems) subscription(raw json.RawMessage) string {
	s, ok := p.String("body.subscription_id", raw)
	if ok && !subscriptionRE.MatchString(s) {
		p.Add("body.subscription_id", "must be a subscription id: letters, digits and hyphens, at most 64")
	}
	return s
}

func (p *problems) email(loc, s string) {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" || len(s) > maxEmailLen || !strings.Contains(s[strings.LastIndex(s, "@")+1:], ".") {
		p.Add(loc, "must be an e-mail address such as finops@example.com")
	}
}

// thresholds reads 1 to 5 thresholds, each a percentage from 1 to 1000
// (unique per threshold type) with up to 50 e-mail addresses.
func (p *problems) thresholds(raw json.RawMessage) []Threshold {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		p.Add("body.thresholds", "must be an array")
		return nil
	}
	if len(items) < 1 || len(items) > maxThresholds {
		p.Add("body.thresholds", "must have 1 to %d thresholds", maxThresholds)
		return nil
	}
	out := make([]Threshold, 0, len(items))
	seen := map[string]bool{}
	for i, item := range items {
		loc := fmt.Sprintf("body.thresholds[%d]", i)
		var m fields
		if err := json.Unmarshal(item, &m); err != nil || m == nil {
			p.Add(loc, "must be an object")
			continue
		}
		t := Threshold{ThresholdType: Actual}
		for k := range m {
			if k != "percentage" && k != "contact_emails" && k != "threshold_type" {
				p.Add(loc+"."+k, "is not a field of a threshold")
			}
		}
		var pct float64
		if err := json.Unmarshal(m["percentage"], &pct); err != nil || m["percentage"] == nil {
			p.Add(loc+".percentage", "must be a whole number")
		} else if pct != float64(int(pct)) {
			p.Add(loc+".percentage", "must be a whole number")
		} else if pct < minPercentage || pct > maxPercentage {
			p.Add(loc+".percentage", "must be from %d to %d", minPercentage, maxPercentage)
		} else {
			t.Percentage = int(pct)
		}
		if raw, ok := m["threshold_type"]; ok {
			if s, ok := p.String(loc+".threshold_type", raw); ok {
				if s != Actual && s != Forecasted {
					p.Add(loc+".threshold_type", "must be Actual or Forecasted")
				}
				t.ThresholdType = s
			}
		}
		key := fmt.Sprint(t.ThresholdType, t.Percentage)
		if t.Percentage > 0 && seen[key] {
			p.Add(loc+".percentage", "repeats another %s threshold of %d%%", t.ThresholdType, t.Percentage)
		}
		seen[key] = true
		t.ContactEmails = p.contactEmails(loc+".contact_emails", m["contact_emails"])
		out = append(out, t)
	}
	return out
}

// contactEmails reads a threshold's optional e-mail addresses: none when
// the member is absent or null, else at most maxContactEmails, each an
// address.
func (p *problems) contactEmails(loc string, raw json.RawMessage) []string {
	out := []string{}
	if raw == nil || jsonbody.IsNull(raw) {
		return out
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		p.Add(loc, "must be an array of e-mail addresses")
		return []string{}
	}
	if len(out) > maxContactEmails {
		p.Add(loc, "must have at most %d addresses", maxContactEmails)
	}
	for j, e := range out {
		p.email(fmt.Sprintf("%s[%d]", loc, j), e)
	}
	return out
}

// notifications reads the optional provider notification settings.
func (p *problems) notifications(raw json.RawMessage) *Notifications {
	var m fields
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		p.Add("body.notifications", "must be an object")
		return nil
	}
	n := &Notifications{Enabled: true, ContactRoles: []string{}, ContactGroups: []string{}}
	for k, v := range m {
		loc := "body.notifications." + k
		if (k == "contact_roles" || k == "contact_groups") && jsonbody.IsNull(v) {
			continue // none, as when omitted
		}
		switch k {
		case "enabled":
			if err := json.Unmarshal(v, &n.Enabled); err != nil || jsonbody.IsNull(v) {
				p.Add(loc, "must be true or false")
			}
		case "contact_roles":
			if err := json.Unmarshal(v, &n.ContactRoles); err != nil || len(n.ContactRoles) > maxContacts {
				p.Add(loc, "must be an array of at most %d roles", maxContacts)
				continue
			}
			for i, r := range n.ContactRoles {
				if !slices.Contains(contactRoles, r) {
					p.Add(fmt.Sprintf("%s[%d]", loc, i), "must be one of %s", strings.Join(contactRoles, ", "))
				}
			}
		case "contact_groups":
			if err := json.Unmarshal(v, &n.ContactGroups); err != nil || len(n.ContactGroups) > maxContacts {
				p.Add(loc, "must be an array of at most %d action group ids", maxContacts)
				continue
			}
			for i, g := range n.ContactGroups {
				if len(g) > 512 || !actionGroupRE.MatchString(g) {
					p.Add(fmt.Sprintf("%s[%d]", loc, i), "must be an action group resource id")
				}
			}
		default:
			p.Add(loc, "is not a field of notifications")
		}
	}
	return n
}

// budgetFields are the members a create body may have; a PATCH body may
// have all but tenant_id and subscription_id changed.
var budgetFields = []string{"tenant_id", "subscription_id", "name", "amount", "currency", "time_grain", "start_date", "end_date", "thresholds", "notifications"}

// required are the members a create body must have, which a PATCH may not
// set to null.
var required = []string{"tenant_id", "name", "amount", "time_grain", "start_date", "thresholds"}

// apply checks the members of f and sets them on b. On create every
// required member must be present; on PATCH a member that is absent leaves
// b's value, null clears an optional one.
func apply(b *Budget, f fields, create bool) error {
	var p problems
	for k := range f {
		if !slices.Contains(budgetFields, k) {
			p.Add("body."+k, "is not a field of a budget")
		}
	}
	for _, k := range required {
		raw, ok := f[k]
		switch {
		case !ok && create:
			p.Add("body."+k, "is required")
		case ok && jsonbody.IsNull(raw):
			p.Add("body."+k, "must not be null")
		}
	}
	get := func(k string) (json.RawMessage, bool) {
		raw, ok := f[k]
		return raw, ok && !jsonbody.IsNull(raw)
	}
	if raw, ok := get("tenant_id"); ok {
		if s, ok := p.String("body.tenant_id", raw); ok && create {
			b.TenantID = s
		} else if ok && s != b.TenantID {
			p.Add("body.tenant_id", "cannot be changed; create a budget in the other tenant")
		}
	}
	if raw, present := f["subscription_id"]; present {
		sub := ""
		if !jsonbody.IsNull(raw) {
			sub = p.subscription(raw)
		}
		if create {
			b.SubscriptionID = sub
		} else if sub != b.SubscriptionID {
			p.Add("body.subscription_id", "cannot be changed; create a budget of the other scope")
		}
	}
	if raw, ok := get("name"); ok {
		b.Name = p.name(raw)
	}
	if raw, ok := get("amount"); ok {
		b.Amount = p.amount(raw)
	}
	if raw, ok := get("currency"); ok {
		b.Currency = p.currency(raw)
	} else if raw, present := f["currency"]; present && jsonbody.IsNull(raw) || create && !present {
		b.Currency = defaultCurrency
	}
	if raw, ok := get("time_grain"); ok {
		b.TimeGrain = p.timeGrain(raw)
	}
	startOK := true
	if raw, ok := get("start_date"); ok {
		n := p.Len()
		b.StartDay = p.startDate(raw)
		startOK = p.Len() == n
	}
	if raw, present := f["end_date"]; present {
		if jsonbody.IsNull(raw) {
			b.EndDay = nil
		} else if d, ok := p.day("body.end_date", raw); ok {
			b.EndDay = &d
		}
	}
	if b.EndDay != nil && startOK && *b.EndDay <= b.StartDay {
		p.Add("body.end_date", "must be after start_date (%s)", b.StartDay)
	}
	if raw, ok := get("thresholds"); ok {
		b.Thresholds = p.thresholds(raw)
	}
	if raw, present := f["notifications"]; present {
		b.Notifications = nil
		if !jsonbody.IsNull(raw) {
			b.Notifications = p.notifications(raw)
		}
	}
	return p.Err()
}
