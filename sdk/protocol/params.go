package protocol

import (
	"fmt"
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
// as DecodeOperation returns it; op may be nil.
func OperationParams(op *huma.Operation) Params {
	if op == nil {
		return nil
	}
	var out Params
	for _, p := range op.Parameters {
		if p.Schema != nil && (p.In == "query" || p.In == "path") {
			p.Schema.PrecomputeMessages()
			out = append(out, p)
		}
	}
	return out
}

var validationRegistry = huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)

// Validate checks a request's query and path parameters against the
// declarations, the same way the host's own operations are checked, and
// returns each problem with its location (e.g. "query.limit"). query
// returns every value of a query parameter.
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
		v, err := parseParam(p.Schema, raw)
		if err != nil {
			res.Add(pb, strings.Join(raw, ","), err.Error())
			continue
		}
		huma.Validate(validationRegistry, p.Schema, pb, huma.ModeWriteToServer, v, &res)
	}
	out := make([]*huma.ErrorDetail, 0, len(res.Errors))
	for _, e := range res.Errors {
		if d, ok := e.(*huma.ErrorDetail); ok {
			out = append(out, d)
		}
	}
	return out
}

func parseParam(s *huma.Schema, raw []string) (any, error) {
	if s.Type == huma.TypeArray {
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
	return parseScalar(s, raw[len(raw)-1])
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
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
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
