package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// FuzzInputErrors gives the host's input check a path parameter as sent,
// a query field and a form or JSON body. It must name exactly the inputs
// that hold a control character or are not UTF-8 — none that do not, and
// each that does — and every location it names must be printable.
func FuzzInputErrors(f *testing.F) {
	for _, seed := range []struct {
		path, key, value, contentType string
		body                          []byte
	}{
		{"t-1", "q", "café", "application/json", []byte(`{"name":"plain","notes":"a\nb"}`)},
		{"a%00b", "actor_email", "a\x00b", "", nil},
		{"%ff%fe", "q\x07", "ok", "application/x-www-form-urlencoded", []byte("name=a%08b&notes=a%0D%0Ab")},
		{"%zz", "q", "a\u0085b", "application/merge-patch+json", []byte(`{"thresholds":[{"emails":["ok","b\u0000"]}],"k\u0001":1}`)},
		{"ok", "q", "ok", "application/json", []byte("{\"name\":\"a\x7fb\"}")},
		{"ok", "q", "ok", "application/json", []byte("{\"name\":\"a\xc2\x85b\",\"note\":\"\xc2\xa0\"}")},
		{"ok", "q", "ok", "application/json; charset=utf-8", []byte(`{"a":["\b","\f"],"b":{"c":"\u001b[31m"}}`)},
	} {
		f.Add(seed.path, seed.key, seed.value, seed.contentType, seed.body)
	}
	f.Fuzz(func(t *testing.T, rawPath, key, value, contentType string, body []byte) {
		params, errs := DecodePathParams(map[string]string{"id": rawPath})
		decoded, decodeErr := url.PathUnescape(rawPath)
		if (decodeErr != nil) != (len(errs) > 0) {
			t.Fatalf("path %q: errors %v, url.PathUnescape: %v", rawPath, details(errs), decodeErr)
		}
		if len(errs) > 0 {
			if len(errs) != 1 || errs[0].Location != "path.id" || params["id"] != "" {
				t.Fatalf("path %q: %v, %q", rawPath, details(errs), params)
			}
		} else if params["id"] != decoded {
			t.Fatalf("path %q decoded to %q, want %q", rawPath, params["id"], decoded)
		}

		in := Inputs{PathParams: params, Query: [][2]string{{key, value}}, ContentType: contentType, Body: body}
		var form url.Values
		if in.IsForm() {
			form, _ = url.ParseQuery(string(body))
			for k, vs := range form {
				for _, v := range vs {
					in.Form = append(in.Form, [2]string{k, v})
				}
			}
		}
		got := map[string]bool{}
		for _, e := range InputErrors(in) {
			if e.Message != MsgControlChars || ControlChars(e.Location, false) {
				t.Fatalf("error %q at %q", e.Message, e.Location)
			}
			got[e.Location] = true
		}
		want := map[string]bool{}
		if ControlChars(params["id"], false) {
			want["path.id"] = true
		}
		if ControlChars(key, false) || ControlChars(value, false) {
			want["query."+printableName(key)] = true
		}
		for k, vs := range form {
			for _, v := range vs {
				if ControlChars(k, false) || ControlChars(v, true) {
					want["body."+printableName(k)] = true
				}
			}
		}
		ct, _, _ := mime.ParseMediaType(contentType)
		var doc any
		if (ct == "application/json" || strings.HasSuffix(ct, "+json")) && json.Unmarshal(body, &doc) == nil {
			controlStrings(doc, "body", want)
		}
		for loc := range want {
			if !got[loc] {
				t.Fatalf("%q holds a control character but is not named; named %v", loc, keys(got))
			}
		}
		for loc := range got {
			if !want[loc] {
				t.Fatalf("%q is named but holds no control character", loc)
			}
		}
	})
}

// controlStrings adds the location of every string of a decoded JSON
// document that holds a control character (line breaks and tabs
// allowed), and of every member name that does (where the walk stops).
func controlStrings(v any, loc string, out map[string]bool) {
	switch x := v.(type) {
	case string:
		if ControlChars(x, true) {
			out[loc] = true
		}
	case []any:
		for i, e := range x {
			controlStrings(e, fmt.Sprintf("%s[%d]", loc, i), out)
		}
	case map[string]any:
		for k, e := range x {
			if name := strings.Map(printable, k); name != k {
				out[loc+"."+name] = true
				continue
			}
			controlStrings(e, loc+"."+k, out)
		}
	}
}

// fuzzOperation declares the parameters a plugin's typed route commonly
// has, as its Describe sends them: a page, a score, a sort, a date, a
// flag and the tenants.
const fuzzOperation = `{"operationId": "fuzz", "parameters": [
	{"name": "limit", "in": "query", "schema": {"type": "integer", "format": "int64", "minimum": 1, "maximum": 500, "default": 50}},
	{"name": "min_score", "in": "query", "schema": {"type": "number", "minimum": 0, "maximum": 100}},
	{"name": "sort_by", "in": "query", "schema": {"type": "string", "enum": ["score", "domain", "checked_at"], "default": "score"}},
	{"name": "from", "in": "query", "schema": {"type": "string", "format": "date"}},
	{"name": "active", "in": "query", "schema": {"type": "boolean"}},
	{"name": "domain", "in": "query", "schema": {"type": "string", "maxLength": 253}},
	{"name": "tenant_ids", "in": "query", "schema": {"type": "array", "maxItems": 100, "items": {"type": "string", "maxLength": 64}}},
	{"name": "id", "in": "path", "required": true, "schema": {"type": "integer", "format": "int64", "minimum": 1}}
]}`

// FuzzParamsValidate checks a query string and a path parameter against
// declared parameters as the host does before proxying. A parameter it
// lets through must hold only values within its declaration, whichever of
// its values the plugin reads, and one whose every value is within it must
// not be refused.
func FuzzParamsValidate(f *testing.F) {
	op, err := DecodeOperation([]byte(fuzzOperation))
	if err != nil {
		f.Fatal(err)
	}
	params, err := OperationParams(op)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][2]string{
		{"limit=50&sort_by=domain&tenant_ids=t-1,t-2&active=true", "7"},
		{"limit=0", "1"},
		{"limit=5&limit=999", "1"},
		{"limit=999&limit=5", "1"},
		{"min_score=NaN&from=2026-02-30", "9223372036854775807"},
		{"min_score=1e2&from=2026-02-28&domain=example.com", "-1"},
		{"tenant_ids=&tenant_ids=,,t-1&sort_by=", "x"},
		{"sort_by=Score&active=yes", "1.5"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, rawQuery, id string) {
		q, _ := url.ParseQuery(rawQuery)
		errs := params.Validate(func(name string) []string { return q[name] }, map[string]string{"id": id})
		refused := map[string]bool{}
		for _, e := range errs {
			name, ok := strings.CutPrefix(e.Location, "query.")
			if !ok {
				name, ok = strings.CutPrefix(e.Location, "path.")
			}
			// An item of a list is named by its index: tenant_ids[2].
			name, _, _ = strings.Cut(name, "[")
			if !ok || !slices.ContainsFunc(params, func(p *huma.Param) bool { return p.Name == name }) {
				t.Fatalf("error at %q: %s", e.Location, e.Message)
			}
			refused[name] = true
		}
		for _, p := range params {
			values := q[p.Name]
			if p.In == "path" {
				values = []string{id}
			}
			if len(values) == 0 || (len(values) == 1 && values[0] == "") {
				if refused[p.Name] != p.Required {
					t.Fatalf("%s missing: refused %v", p.Name, refused[p.Name])
				}
				continue
			}
			bad := outOfBounds(p.Schema, values)
			if bad != "" && !refused[p.Name] {
				t.Fatalf("%s=%q let through: %s", p.Name, values, bad)
			}
			if bad == "" && refused[p.Name] {
				t.Fatalf("%s=%q refused: %v", p.Name, values, details(errs))
			}
		}
	})
}

// outOfBounds says which of a parameter's values its schema refuses, read
// as the SDK binds them; "" when all are within it. An empty value among
// others stands for none: a plugin reading it takes the default.
func outOfBounds(s *huma.Schema, values []string) string {
	if s.Type == huma.TypeArray {
		var items []string
		for _, v := range values {
			for item := range strings.SplitSeq(v, ",") {
				if item != "" {
					items = append(items, item)
				}
			}
		}
		if s.MaxItems != nil && len(items) > *s.MaxItems {
			return fmt.Sprintf("%d items", len(items))
		}
		for _, item := range items {
			if utf8.RuneCountInString(item) > *s.Items.MaxLength {
				return fmt.Sprintf("item %q too long", item)
			}
		}
		return ""
	}
	for _, v := range values {
		if v == "" {
			continue
		}
		if bad := scalarOutOfBounds(s, v); bad != "" {
			return bad
		}
	}
	return ""
}

func scalarOutOfBounds(s *huma.Schema, v string) string {
	switch s.Type {
	case huma.TypeInteger, huma.TypeNumber:
		var n float64
		if s.Type == huma.TypeInteger {
			i, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Sprintf("%q is no integer", v)
			}
			n = float64(i)
		} else {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Sprintf("%q is no number", v)
			}
			n = f
		}
		if (s.Minimum != nil && n < *s.Minimum) || (s.Maximum != nil && n > *s.Maximum) {
			return fmt.Sprintf("%q is out of range", v)
		}
	case huma.TypeBoolean:
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Sprintf("%q is no boolean", v)
		}
	case huma.TypeString:
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, any(v)) {
			return fmt.Sprintf("%q is not in the enum", v)
		}
		if s.MaxLength != nil && utf8.RuneCountInString(v) > *s.MaxLength {
			return fmt.Sprintf("%q is too long", v)
		}
		if s.Format == "date" {
			if _, err := time.Parse(time.DateOnly, v); err != nil {
				return fmt.Sprintf("%q is no date", v)
			}
		}
	}
	return ""
}

// FuzzCheckTenantBody compares the tenants the host reads from a JSON body
// with those a plugin's handler decodes from it (encoding/json into the
// typed body, as huma binds it): a body the host lets through must not
// name, to the plugin, a tenant the caller may not see.
func FuzzCheckTenantBody(f *testing.F) {
	for _, seed := range []string{
		`{"tenant_id": "t-1", "name": "rule"}`,
		`{"tenant_id": "t-3"}`,
		`{"tenant_id": "t-1", "TENANT_ID": "t-3"}`,
		`{"Tenant_Id": "t-3"}`,
		`{"tenant_id": ["t-1", "t-3"]}`,
		`{"tenant_id": "t-1", "tenant_id": "t-3"}`,
		`{"tenant_\u0069d": "t-3"}`,
		` {"tenant_id": null}`,
		`["t-3"]`,
	} {
		f.Add([]byte(seed))
	}
	principal := &pluginv1.Principal{Id: "u-1", TenantIds: []string{"t-1", "t-2"}}
	one := &Route{Tenant: &Tenant{In: TenantInBody, Name: "tenant_id"}}
	many := &Route{Tenant: &Tenant{In: TenantInBody, Name: "tenant_ids"}}
	noQuery := func(string) []string { return nil }
	f.Fuzz(func(t *testing.T, body []byte) {
		var single struct {
			TenantID TenantID `json:"tenant_id"`
		}
		if one.CheckTenant(principal, noQuery, nil, body) == 0 && json.Unmarshal(body, &single) == nil {
			if id := string(single.TenantID); id != "" && !slices.Contains(principal.TenantIds, id) {
				t.Fatalf("%s: the host let it through; the plugin reads tenant %q", body, id)
			}
		}
		var list struct {
			TenantIDs TenantIDs `json:"tenant_ids"`
		}
		if many.CheckTenant(principal, noQuery, nil, body) == 0 && json.Unmarshal(body, &list) == nil {
			for _, id := range list.TenantIDs {
				if id != "" && !slices.Contains(principal.TenantIds, id) {
					t.Fatalf("%s: the host let it through; the plugin reads tenant %q", body, id)
				}
			}
		}
	})
}

func details(errs []*huma.ErrorDetail) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Location+": "+e.Message)
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// FuzzParseRoute reads a route as a plugin declares it to the host —
// pattern, OpenAPI operation, tenant input — from a plugin the host does
// not trust to be well-formed. ParseRoute answers a route or an error and
// never panics, and a route it answers is routable and checks requests
// without panicking either.
func FuzzParseRoute(f *testing.F) {
	for _, seed := range []struct {
		method, path, in, name, query string
		op                            string
	}{
		{"GET", "/api/v1/acme/items/{id}", "query", "tenant_ids", "tenant_ids=t-1&limit=5", fuzzOperation},
		{"post", "/api/v1/acme/rules", "body", "tenant_id", "", `{"operationId": "rules-create"}`},
		{"GET", "/api/v1/acme/{tenant_id}", "path", "tenant_id", "", `{"parameters": [{"name": "tenant_id", "in": "path", "required": true, "schema": {"type": "string", "maxLength": 64}}]}`},
		{"GET", "/api/v1/acme/x", "", "", "q=a", `{"parameters": [{"name": "q", "in": "query", "schema": {"type": "string", "pattern": "^[a-z]+$"}}]}`},
		{"GET", "/api/v1/acme/x", "", "", "q=(", `{"parameters": [{"name": "q", "in": "query", "schema": {"type": "string", "pattern": "("}}]}`},
		{"GET", "/api/v1/acme/x", "", "", "n=1", `{"parameters": [{"name": "n", "in": "query", "schema": {"type": ["integer", "null"], "minimum": 1}}]}`},
		{"GET", "/api/v1/acme/x", "", "", "", `{"parameters": [{"name": "s", "in": "query", "schema": {"$ref": "#/components/schemas/S"}}]}`},
		{"POST", "/api/v1/sync/acme", "", "", "", `{"x-steward-trigger": {"job_type": "acme"}}`},
		{"GET", "/fragments/acme", "query", "tenant_id", "tenant_id=t-1", `{"x-steward-fragment": {"title": "Acme"}, "parameters": [{"name": "tenant_id", "in": "query", "schema": {"type": "string"}}]}`},
	} {
		f.Add(seed.method, seed.path, []byte(seed.op), seed.in, seed.name, seed.query)
	}
	principal := &pluginv1.Principal{Id: "u-1", TenantIds: []string{"t-1"}}
	f.Fuzz(func(t *testing.T, method, path string, op []byte, in, name, rawQuery string) {
		pr := &pluginv1.Route{Method: method, Path: path, OpenapiOperation: op}
		if in != "" || name != "" {
			pr.TenantInput = &pluginv1.TenantInput{In: in, Name: name}
		}
		r, err := ParseRoute(pr)
		if err != nil {
			return
		}
		if CheckPattern(r.Pattern) != nil || r.Method != strings.ToUpper(method) {
			t.Fatalf("route %s %s accepted", r.Method, r.Pattern)
		}
		if r.TriggerJob != "" && r.Auth != pluginv1.Auth_AUTH_ADMIN {
			t.Fatalf("a %v route queues job %q", r.Auth, r.TriggerJob)
		}
		q, _ := url.ParseQuery(rawQuery)
		params := map[string]string{}
		for _, p := range PathParams(r.Pattern) {
			params[p] = q.Get(p)
		}
		r.Validate(func(name string) []string { return q[name] }, params)
		r.CheckTenant(principal, func(name string) []string { return q[name] }, params, []byte(rawQuery))
	})
}
