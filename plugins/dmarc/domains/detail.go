package domains

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/plugins/dmarc/posture"
	"github.com/stewardhq/steward/sdk"
	sdkui "github.com/stewardhq/steward/sdk/ui"
)

// DomainFragmentPath is a domain's latest check on the DMARC page: each
// part's state and every finding with its fix, opened from the domains
// table under it.
const DomainFragmentPath = DomainsFragmentPath + "/{domain_id}"

// domainFragmentIn names a domain of the page's tenant.
type domainFragmentIn struct {
	DomainPath
	Tenant sdk.TenantID `query:"tenant_id" doc:"The page's tenant; without it, any tenant the caller may see"`
}

// domainHTML is a domain's detail as the route answers it.
type domainHTML struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

// DetailRoutes are the routes of the DMARC page's domain detail.
func (h *Handlers) DetailRoutes() []sdk.Route {
	op := sdk.Op{ID: "dmarc-domain-fragment", Tags: []string{tag}, Summary: "A domain's latest check, for the DMARC page",
		Description: "What GET " + domainsAPI + "/{domain_id} answers, as HTML: the state of DMARC, SPF, DKIM, MX, MTA-STS, TLS-RPT, BIMI and DNSSEC, " +
			"then every finding with its severity and fix. A domain of a tenant the caller may not see, or of another tenant than tenant_id, is 404.",
		Errors: []int{http.StatusNotFound}, Responses: map[string]*huma.Response{"200": {Description: "The domain's latest check",
			Content: map[string]*huma.MediaType{"text/html": {Schema: &huma.Schema{Type: huma.TypeString}}}}}}
	return []sdk.Route{sdk.Get(DomainFragmentPath, op, h.domainFragment)}
}

func (h *Handlers) domainFragment(ctx context.Context, in *domainFragmentIn) (*domainHTML, error) {
	tenants := sdk.PrincipalFrom(ctx).TenantIDs
	if in.Tenant != "" {
		tenants = []string{string(in.Tenant)}
	}
	d, err := h.Store.Get(ctx, in.DomainID, tenants)
	if err == nil && d == nil {
		err = sdk.NotFound("no such domain")
	}
	if err != nil {
		return nil, err
	}
	detail, err := h.detail(ctx, &in.DomainPath)
	if err != nil {
		return nil, err
	}
	return &domainHTML{ContentType: "text/html; charset=utf-8", Body: []byte(domainView(detail))}, nil
}

// domainAt is the path of a domain's detail, with the page's tenant.
func (v view) domainAt(id string) string {
	path := strings.Replace(DomainFragmentPath, "{domain_id}", url.PathEscape(id), 1)
	if !v.scoped {
		return path
	}
	return path + "?" + url.Values{"tenant_id": {v.tenants[0]}}.Encode()
}

// part is one row of a domain's detail: a part of the check, its state
// as a badge and what was read.
type part struct {
	name  string
	state template.HTML
	read  string
}

// domainView is a domain's latest check: its parts, then its findings
// with their fixes.
func domainView(d *DomainDetail) template.HTML {
	if d.Posture == nil {
		return render("domain-detail", struct {
			Domain         string
			Parts, Finding template.HTML
		}{d.Domain, sdkui.Empty("Not checked yet: the next DMARC posture sync checks it."), ""})
	}
	res := d.Posture
	rows := make([][]any, 0, 8)
	for _, p := range parts(res) {
		rows = append(rows, []any{p.name, p.state, p.read})
	}
	table := sdkui.Table([]string{"Part", "State", "What was read"}, rows, "The check of "+d.Domain+" by part")
	findingRows := make([][]any, 0, len(d.Findings))
	for _, f := range d.Findings {
		findingRows = append(findingRows, []any{sdkui.Badge(f.Severity, severityHealth(f.Severity)), strings.ReplaceAll(f.Code, "_", " "), f.Message, or(f.Fix, "–")})
	}
	findingsTable := sdkui.Badge("No findings", sdkui.OK)
	if len(findingRows) > 0 {
		findingsTable = sdkui.Table([]string{"Severity", "Finding", "What it means", "Fix"}, findingRows, "Findings of "+d.Domain+", most severe first")
	}
	return render("domain-detail", struct {
		Domain         string
		Parts, Finding template.HTML
	}{d.Domain, table, findingsTable})
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// state is a part's badge: unknown when DNS failed, else ok, warning or
// critical.
func state(dnsErr string, h sdkui.Health, text string) template.HTML {
	if dnsErr != "" {
		return sdkui.Badge("DNS failed", sdkui.Unknown)
	}
	return sdkui.Badge(text, h)
}

// parts are the rows of a check's parts.
func parts(res *posture.Result) []part {
	var out []part
	dmarc := part{name: "DMARC", state: state(res.DMARC.Error, sdkui.Critical, "missing"), read: "no record"}
	if r := res.DMARC.Record; r != nil {
		h := sdkui.Warning
		if res.DMARC.Policy() == "reject" || res.DMARC.Policy() == "quarantine" {
			h = sdkui.OK
		}
		dmarc.state, dmarc.read = state(res.DMARC.Error, h, "p="+or(res.DMARC.Policy(), "none valid")), r.Raw
	}
	out = append(out, dmarc)
	spf := part{name: "SPF", state: state(res.SPF.Error, sdkui.Critical, "missing"), read: "no record"}
	if r := res.SPF.Record; r != nil {
		h := sdkui.OK
		if res.SPF.Evaluation.All != "-" || res.SPF.Evaluation.Permerror() {
			h = sdkui.Warning
		}
		spf.state, spf.read = state(res.SPF.Error, h, strconv.Itoa(res.SPF.Evaluation.Lookups)+" lookups"), r.Raw
	}
	out = append(out, spf)
	usable, selectors := 0, make([]string, 0, len(res.DKIM))
	for _, k := range res.DKIM {
		selectors = append(selectors, k.Selector)
		if k.Key != nil && k.Key.Usable() {
			usable++
		}
	}
	dkimHealth := sdkui.Critical
	if usable > 0 {
		dkimHealth = sdkui.OK
	}
	out = append(out, part{"DKIM", sdkui.Badge(fmt.Sprintf("%d usable", usable), dkimHealth), "selectors " + strings.Join(selectors, ", ")})
	mx := part{name: "MX", state: state(res.MX.Error, sdkui.Warning, "none"), read: "no MX records"}
	switch {
	case res.MX.Null:
		mx.state, mx.read = sdkui.Badge("null MX", sdkui.OK), "takes no mail"
	case res.MX.Present:
		mx.state, mx.read = state(res.MX.Error, sdkui.OK, strconv.Itoa(len(res.MX.Hosts))+" hosts"), strings.Join(res.MX.Hosts, ", ")
	}
	out = append(out, mx)
	sts := part{name: "MTA-STS", state: state(res.MTASTS.Error, sdkui.Warning, "missing"), read: "no _mta-sts record"}
	switch m := res.MTASTS; {
	case res.MX.Null && !m.Present:
		sts.state, sts.read = sdkui.Badge("not needed", sdkui.OK), "the domain takes no mail"
	case m.Policy != nil:
		h := sdkui.Warning
		if m.Enforced() {
			h = sdkui.OK
		}
		sts.state = state(m.Error, h, "mode "+or(m.Policy.Mode, "invalid"))
		sts.read = fmt.Sprintf("mx %s, max_age %d s", strings.Join(m.Policy.MX, ", "), m.Policy.MaxAge)
	case m.Present:
		sts.state, sts.read = state(m.Error, sdkui.Critical, "no policy"), or(m.PolicyError, "the record is not valid")
	}
	out = append(out, sts)
	tls := part{name: "TLS-RPT", state: state(res.TLSRPT.Error, sdkui.Warning, "missing"), read: "no _smtp._tls record"}
	switch t := res.TLSRPT; {
	case res.MX.Null && !t.Present:
		tls.state, tls.read = sdkui.Badge("not needed", sdkui.OK), "the domain takes no mail"
	case t.Record != nil && len(t.Record.RUA) > 0:
		tls.state, tls.read = state(t.Error, sdkui.OK, "reports"), strings.Join(t.Record.RUA, ", ")
	case t.Present:
		tls.state, tls.read = state(t.Error, sdkui.Critical, "invalid"), "no valid report address"
	}
	out = append(out, tls)
	bimi := part{name: "BIMI", state: state(res.BIMI.Error, sdkui.Unknown, "none"), read: "no default._bimi record"}
	switch b := res.BIMI; {
	case b.Effective:
		bimi.state, bimi.read = state(b.Error, sdkui.OK, "shown"), b.Record.Logo
	case b.Record != nil:
		bimi.state, bimi.read = state(b.Error, sdkui.Warning, "not shown"), or(b.Record.Logo, "no logo")
	case b.Present:
		bimi.state, bimi.read = state(b.Error, sdkui.Warning, "invalid"), "several records"
	}
	out = append(out, bimi)
	dnssec := part{name: "DNSSEC", state: state(res.DNSSEC.Error, sdkui.Warning, "not validated"), read: "the resolver's answers carry no AD bit"}
	if res.DNSSEC.Validated {
		dnssec.state, dnssec.read = sdkui.Badge("validated", sdkui.OK), "the resolver authenticated the answers (AD)"
	}
	return append(out, dnssec)
}
