package sdk

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk/protocol"
)

// HTTPHandler returns the handler that serves the plugin's routes,
// fragments and pages as the host reaches them: it routes by method and
// path pattern, binds a typed route's input (Handle) and sets a plain
// route's declared parameter defaults on the request. Serve
// builds it from a plugin that Validate accepts; a test may mount it, with
// the request info a host would send set by WithRequestInfo.
func (p *Plugin) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	for _, r := range p.Routes {
		if r.register != nil {
			// Each route on an API of its own: huma names a schema after
			// its Go type, and two packages may each have a Summary.
			r.register(huma.NewAPI(apiConfig(), muxAdapter{mux}))
			continue
		}
		mux.Handle(muxPattern(r.Method, r.Path), withDefaults(r.Operation, r.Handler))
	}
	for _, f := range p.Fragments {
		mux.Handle(muxPattern(http.MethodGet, f.Path), f.Handler)
	}
	for _, pg := range p.Pages {
		if pg.Handler != nil {
			mux.Handle(muxPattern(http.MethodGet, pg.Path), pg.Handler)
		}
	}
	return mux
}

// ViewTenant is the tenant a fragment or page is asked for (its tenant_id
// parameter), empty for all the caller's tenants. The host has refused a
// tenant the caller may not see before the view's handler runs.
func ViewTenant(r *http.Request) string { return r.URL.Query().Get(protocol.ParamTenantID) }

// muxPattern is the ServeMux pattern that matches what the host's router
// matches: a pattern ending in a slash matches only itself, not the subtree
// ServeMux would give it.
func muxPattern(method, path string) string {
	if strings.HasSuffix(path, "/") {
		path += "{$}"
	}
	return strings.ToUpper(method) + " " + path
}

// paramDefault is a default a request gets for a parameter it omits.
type paramDefault struct {
	in, name string
	values   []string
}

// withDefaults sets the defaults of op's query and header parameters on a
// request that omits them, in the form a caller would have sent them. A
// parameter that is present but empty counts as omitted, as it does to the
// host's parameter validation.
func withDefaults(op *huma.Operation, h http.Handler) http.Handler {
	var defaults []paramDefault
	if op != nil {
		for _, p := range op.Parameters {
			if p == nil || p.Schema == nil || p.Schema.Default == nil || (p.In != "query" && p.In != "header") {
				continue
			}
			defaults = append(defaults, paramDefault{in: p.In, name: p.Name, values: defaultValues(p.Schema.Default)})
		}
	}
	if len(defaults) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query := r.URL.Query()
		var header http.Header
		queryChanged := false
		for _, d := range defaults {
			switch d.in {
			case "query":
				if omitted(query[d.name]) {
					query[d.name] = d.values
					queryChanged = true
				}
			case "header":
				if omitted(r.Header.Values(d.name)) {
					if header == nil {
						header = r.Header.Clone()
					}
					header[http.CanonicalHeaderKey(d.name)] = d.values
				}
			}
		}
		if !queryChanged && header == nil {
			h.ServeHTTP(w, r)
			return
		}
		r2 := *r
		if queryChanged {
			u := *r.URL
			u.RawQuery = query.Encode()
			r2.URL = &u
		}
		if header != nil {
			r2.Header = header
		}
		h.ServeHTTP(w, &r2)
	})
}

func omitted(values []string) bool {
	return len(values) == 0 || (len(values) == 1 && values[0] == "")
}

// defaultValues writes a schema default as the parameter's values: a list
// as repeated values, a number without a trailing ".0".
func defaultValues(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case float64:
		return []string{strconv.FormatFloat(v, 'f', -1, 64)}
	case float32:
		return []string{strconv.FormatFloat(float64(v), 'f', -1, 32)}
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			out = append(out, defaultValues(e)...)
		}
		return out
	default:
		return []string{fmt.Sprint(v)}
	}
}
