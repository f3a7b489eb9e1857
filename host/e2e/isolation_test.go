package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store/storetest"
)

// scopedOp is an operation of /openapi.json marked x-steward-tenant-scoped.
type scopedOp struct {
	method, path string
	// in is "path", "query" or "body"; name is the parameter (or the JSON
	// body's property) naming the tenant.
	in, name string
	// required holds a valid value of each other required query
	// parameter, so that the call reaches the tenant check.
	required url.Values
	// admin marks an admins' operation, which refuses a standard user
	// whatever tenant it names.
	admin bool
}

// opParam is a parameter of an operation as the document declares it.
type opParam struct {
	Name     string `json:"name"`
	In       string `json:"in"`
	Required bool   `json:"required"`
	Schema   struct {
		Type     string `json:"type"`
		Format   string `json:"format"`
		Enum     []any  `json:"enum"`
		Default  any    `json:"default"`
		Minimum  *int   `json:"minimum"`
		Examples []any  `json:"examples"`
	} `json:"schema"`
}

// sample is a value the parameter's schema accepts.
func (p opParam) sample() string {
	switch {
	case p.Schema.Default != nil:
		return fmt.Sprint(p.Schema.Default)
	case len(p.Schema.Enum) > 0:
		return fmt.Sprint(p.Schema.Enum[0])
	case len(p.Schema.Examples) > 0:
		return fmt.Sprint(p.Schema.Examples[0])
	case p.Schema.Format == "date":
		return time.Now().UTC().Format(time.DateOnly)
	case p.Schema.Format == "date-time":
		return time.Now().UTC().Format(time.RFC3339)
	case p.Schema.Format == "uuid":
		// An id no object has, which the host looks up (and does not
		// find) before the plugin sees the call.
		return "00000000-0000-4000-8000-00000000dead"
	case p.Schema.Type == "integer" && p.Schema.Minimum != nil:
		return strconv.Itoa(*p.Schema.Minimum)
	case p.Schema.Type == "integer" || p.Schema.Type == "number":
		return "1"
	case p.Schema.Type == "boolean":
		return "true"
	}
	return "x"
}

var pathParamRE = regexp.MustCompile(`\{[^}]+\}`)

// tenantScopedOps lists every marked operation, host and plugin alike, so
// a new operation joins the matrix by carrying the mark.
func (f *fixture) tenantScopedOps(t *testing.T) []scopedOp {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	f.h.get("/openapi.json", "").json(t, &doc)
	methods := []string{"get", "put", "post", "delete", "patch"}
	var ops []scopedOp
	for path, item := range doc.Paths {
		for method, raw := range item {
			if !slices.Contains(methods, method) {
				continue
			}
			var op struct {
				Scope      map[string]string `json:"x-steward-tenant-scoped"`
				Admin      bool              `json:"x-steward-admin"`
				Parameters []opParam         `json:"parameters"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			if len(op.Scope) != 1 {
				if op.Scope != nil {
					t.Errorf("%s %s: x-steward-tenant-scoped %v names no single parameter", method, path, op.Scope)
				}
				continue
			}
			for in, name := range op.Scope {
				if in != "path" && in != "query" && in != "body" || in == "path" && !strings.Contains(path, "{"+name+"}") {
					t.Errorf("%s %s: x-steward-tenant-scoped %v names no parameter of the operation", method, path, op.Scope)
					continue
				}
				required := url.Values{}
				for _, p := range op.Parameters {
					if p.In == "query" && p.Required && p.Name != name {
						required.Set(p.Name, p.sample())
					}
				}
				ops = append(ops, scopedOp{method: strings.ToUpper(method), path: path, in: in, name: name, required: required, admin: op.Admin})
			}
		}
	}
	slices.SortFunc(ops, func(a, b scopedOp) int { return strings.Compare(a.method+a.path, b.method+b.path) })
	return ops
}

// url names tenantIDs (joined by commas) in the operation's tenant
// parameter; other path parameters get a value no object has, and which
// an id of any type (a number from 1, a string) accepts.
func (o scopedOp) url(tenantIDs ...string) string {
	named := strings.Join(tenantIDs, ",")
	path := o.path
	if o.in == "path" {
		path = strings.ReplaceAll(path, "{"+o.name+"}", named)
	}
	path = pathParamRE.ReplaceAllString(path, "987654321")
	q := url.Values{}
	for k, v := range o.required {
		q[k] = v
	}
	if o.in == "query" {
		q.Set(o.name, named)
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return path
}

// namesObject reports whether the operation addresses an object below the
// tenant, which a caller outside the tenant must find missing (404): by a
// path parameter, or a required query parameter that is an id (…_id, the
// object's id where it is no path's part, as a policy's id is).
func (o scopedOp) namesObject() bool {
	n := len(pathParamRE.FindAllString(o.path, -1))
	if o.in == "path" {
		n--
	}
	for name := range o.required {
		if strings.HasSuffix(name, "_id") {
			n++
		}
	}
	return n > 0
}

// call calls the operation on path; one naming its tenant in the body
// gets a body of that property alone, naming tenantIDs (joined by
// commas), any other that is not a GET or DELETE the empty object.
func (f *fixture) call(o scopedOp, path string, tenantIDs ...string) response {
	var body *strings.Reader
	switch {
	case o.in == "body":
		raw, _ := json.Marshal(map[string]string{o.name: strings.Join(tenantIDs, ",")})
		body = strings.NewReader(string(raw))
	case o.method == http.MethodGet || o.method == http.MethodDelete:
		body = strings.NewReader("")
	default:
		body = strings.NewReader("{}")
	}
	return f.h.do(o.method, path, f.tokenA, body, "Content-Type", "application/json")
}

// TestIsolationMatrix calls every tenant-scoped operation of the host and
// of the domain plugins as the standard user of tenant A: naming tenant B
// it must be refused without a trace of B; naming A it must be let through,
// unless the operation is an admins', which refuses the user either way.
func TestIsolationMatrix(t *testing.T) {
	plugins := defaultPlugins() + resourcesPlugins() + costPlugins("") + identityPlugins("") + compliancePlugins("") + dmarcPlugins("") + partnerPlugins(examplePartnerCatalogue(t))
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			f := newFixtureOn(t, dialect, hostOpts{pluginsHCL: plugins, env: map[string]string{"STEWARD_RATE_LIMIT_PER_MINUTE": "100000"}})
			ops := f.tenantScopedOps(t)
			a, b := f.tenantA.ID, f.tenantB.ID
			leaks := []string{b, f.tenantB.Name, f.tenantB.DirectoryTenantID}
			checked := map[string]bool{}
			for _, o := range ops {
				t.Run(o.method+" "+o.path, func(t *testing.T) {
					refused := [][]string{{b}}
					if o.name == "tenant_ids" {
						// One foreign tenant among the caller's own is refused too.
						refused = append(refused, []string{a, b})
					}
					for _, ids := range refused {
						r := f.call(o, o.url(ids...), ids...)
						want := []int{http.StatusForbidden}
						if o.namesObject() {
							want = append(want, http.StatusNotFound)
						}
						if !slices.Contains(want, r.status) {
							t.Errorf("naming %v: %d, want one of %v: %s", ids, r.status, want, r.body)
						}
						for _, l := range leaks {
							if strings.Contains(string(r.body), l) {
								t.Errorf("naming %v: the answer carries %q: %s", ids, l, r.body)
							}
						}
					}
					if o.admin {
						if r := f.call(o, o.url(a), a); r.status != http.StatusForbidden {
							t.Errorf("an admins' operation naming the user's own tenant: %d %s, want 403", r.status, r.body)
						}
						return
					}
					// Naming its own tenant is served: a success, or for an
					// object below the tenant that does not exist, 404, or
					// for a body the empty object does not satisfy, 422 —
					// never a refusal and never a failure.
					r := f.call(o, o.url(a), a)
					ok := r.status >= 200 && r.status < 300 ||
						o.namesObject() && r.status == http.StatusNotFound ||
						o.method != http.MethodGet && o.method != http.MethodDelete && r.status == http.StatusUnprocessableEntity
					if !ok {
						t.Errorf("naming its own tenant: %d %s", r.status, r.body)
					}
				})
				checked[o.method+" "+o.path] = true
			}
			// The operations this suite knows to be tenant scoped must be
			// among those checked; a lost mark would drop them silently.
			for _, must := range []string{
				"GET /api/v1/tenants/{tenant_id}",
				"GET /api/v1/audit-logs/summary",
				"GET /api/v1/testplugin/items",
				"GET /api/v1/testplugin/tenants/{tenant_id}/items",
				// Its handler checks nothing: the host must.
				"GET /api/v1/testplugin/careless",
				"GET /api/v1/costs/anomalies",
				"GET /api/v1/costs/summary",
				"GET /api/v1/costs/chargeback/{tenant_id}",
				"GET /api/v1/budgets",
				"GET /api/v1/resources/inventory",
				"GET /api/v1/resources/inventory/counts",
				"GET /api/v1/resources/tags/coverage",
				"GET /api/v1/resources/orphans",
				"GET /api/v1/resources/events",
				"GET /resources",
				"GET /partials/resource-stats",
				"GET /api/v1/identity/summary",
				"GET /api/v1/identity/users/without-mfa",
				"GET /api/v1/identity/privileged",
				"GET /api/v1/identity/disabled-with-roles",
				"GET /api/v1/identity/stale",
				"GET /api/v1/identity/guests",
				"GET /api/v1/identity/access-reviews",
				"GET /api/v1/identity/access-review-findings",
				"GET /api/v1/identity/devices",
				"GET /api/v1/identity/mfa-trend",
				"GET /api/v1/identity/conditional-access",
				"GET /api/v1/identity/global-admins",
				"GET /api/v1/identity/risky-users",
				"GET /api/v1/identity/app-credentials",
				"GET /identity",
				"GET /partials/identity-stats",
				"GET /api/v1/compliance/summary",
				"GET /api/v1/compliance/non-compliant",
				"GET /api/v1/compliance/frameworks",
				"GET /api/v1/compliance/frameworks/{framework_id}",
				"GET /api/v1/compliance/frameworks/{framework_id}/controls/{control_id}",
				"GET /api/v1/compliance/findings",
				"GET /api/v1/compliance/rules",
				"POST /api/v1/compliance/rules",
				"GET /api/v1/compliance/exemptions",
				"POST /api/v1/compliance/exemptions",
				"GET /api/v1/dmarc/domains",
				// An admins' operation: refused to the user either way.
				"POST /api/v1/dmarc/domains",
				"GET /api/v1/dmarc/events",
				"GET /api/v1/dmarc/summary",
				"GET /api/v1/dmarc/reports",
				"POST /api/v1/dmarc/reports",
				"GET /api/v1/dmarc/reports/stats",
				"GET /api/v1/dmarc/reports/mailbox",
				"GET /partials/dmarc-domains/{domain_id}",
				"GET /api/v1/partner/evidence",
				"POST /api/v1/partner/evidence",
				"POST /partials/partner-evidence/{requirement_id}/review",
				"GET /api/v1/notifications/channels",
				"POST /api/v1/notifications/channels",
				"GET /api/v1/notifications/events",
				"GET /notifications",
			} {
				if !checked[must] {
					t.Errorf("%s is not marked x-steward-tenant-scoped", must)
				}
			}
			if len(checked) < 5 {
				t.Fatalf("only %d tenant-scoped operations checked: %v", len(checked), checked)
			}
		})
	}
}
