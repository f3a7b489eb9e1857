package protocol

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// Params are the query and path parameters a route's OpenAPI operation
// declares, ready to check a request against. The host checks every request
// to a plugin route with them before the plugin sees it, and the test
// harness does the same, so a plugin's tests meet the host's 422s.
type Params []*huma.Param

// OperationParams collects the query and path parameters of an operation
// as DecodeOperation returns it; op may be nil. It refuses a parameter
// whose schema holds a pattern that does not compile, on which huma's
// validation would panic.
func OperationParams(op *huma.Operation) (Params, error) {
	if op == nil {
		return nil, nil
	}
	var out Params
	for _, p := range op.Parameters {
		if p == nil || p.Schema == nil || (p.In != "query" && p.In != "path") {
			continue
		}
		if err := checkPatterns(p.Schema); err != nil {
			return nil, fmt.Errorf("parameter %s.%s: %w", p.In, p.Name, err)
		}
		p.Schema.PrecomputeMessages()
		out = append(out, p)
	}
	return out, nil
}

// checkPatterns compiles the pattern of s and of every schema huma
// precomputes with it.
func checkPatterns(s *huma.Schema) error {
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			return fmt.Errorf("pattern %q: %w", s.Pattern, err)
		}
	}
	subs := slices.Concat(s.OneOf, s.AnyOf, s.AllOf, []*huma.Schema{s.Items, s.Not})
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		subs = append(subs, s.Properties[name])
	}
	for _, sub := range subs {
		if sub == nil {
			continue
		}
		if err := checkPatterns(sub); err != nil {
			return err
		}
	}
	return nil
}

var validationRegistry = huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)

// Validate checks a request's query and path parameters against the
// declarations, the same way the host's own operations are checked, and
// returns each problem with its location (e.g. "query.limit"). query
// returns every value of a query parameter. A parameter given more than
// once is checked in each of its values but the empty ones (a list in all
// its items together), for a plugin may read any of them: huma and
// url.Values.Get read the first.
func (ps Params) Validate(query func(string) []string, pathParams map[string]string) []*huma.ErrorDetail {
	var res huma.ValidateResult
	for _, p := range ps {
		var raw []string
		if p.In == "path" {
			if v, ok := pathParams[p.Name]; ok {
				raw = []string{v}
			}
		} else {
			raw = query(p.Name)
		}
		loc := p.In + "." + p.Name
		pb := huma.NewPathBuffer([]byte(loc), len(loc))
		if len(raw) == 0 || (len(raw) == 1 && raw[0] == "") {
			if p.Required {
				res.Add(pb, nil, "required "+p.In+" parameter is missing")
			}
			continue
		}
		if p.Schema.Type == huma.TypeArray {
			items, err := parseList(p.Schema, raw)
			validate(p.Schema, pb, strings.Join(raw, ","), items, err, &res)
			continue
		}
		for _, v := range raw {
			if v == "" {
				continue
			}
			if parsed, err := parseScalar(p.Schema, v); !validate(p.Schema, pb, v, parsed, err, &res) {
				break
			}
		}
	}
	out := make([]*huma.ErrorDetail, 0, len(res.Errors))
	for _, e := range res.Errors {
		if d, ok := e.(*huma.ErrorDetail); ok {
			out = append(out, d)
		}
	}
	return out
}

// validate adds to res what is wrong with one value of a parameter — the
// error it was parsed with, or what s declares that its parsed form is
// not — and reports whether nothing was.
func validate(s *huma.Schema, pb *huma.PathBuffer, sent string, parsed any, err error, res *huma.ValidateResult) bool {
	n := len(res.Errors)
	if err != nil {
		res.Add(pb, sent, err.Error())
	} else {
		huma.Validate(validationRegistry, s, pb, huma.ModeWriteToServer, parsed, res)
	}
	return len(res.Errors) == n
}

// parseList reads a list parameter's values, each comma-separated, into
// its items.
func parseList(s *huma.Schema, raw []string) (any, error) {
	var items []any
	for _, v := range raw {
		for item := range strings.SplitSeq(v, ",") {
			if item == "" {
				continue
			}
			if s.Items == nil {
				items = append(items, item)
				continue
			}
			pv, err := parseScalar(s.Items, item)
			if err != nil {
				return nil, err
			}
			items = append(items, pv)
		}
	}
	return items, nil
}

func parseScalar(s *huma.Schema, v string) (any, error) {
	switch s.Type {
	case huma.TypeInteger:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("expected integer")
		}
		// A float64, like the numbers of the JSON-decoded schema it is
		// checked against: enum holds float64 values.
		return float64(n), nil
	case huma.TypeNumber:
		// NaN and the infinities parse, but are no JSON number, and NaN
		// would pass any minimum and maximum.
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("expected number")
		}
		return f, nil
	case huma.TypeBoolean:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("expected boolean")
		}
		return b, nil
	default:
		return v, nil
	}
}
