package graph

import (
	"fmt"
	"strings"
	"time"
)

// filter is a parsed $filter of the forms the simulator supports:
// equality of a property with a string or boolean literal, such as
// userType eq 'Guest' or accountEnabled eq false, and comparisons of a
// DateTimeOffset property with an unquoted RFC 3339 time, such as
// receivedDateTime ge 2026-11-20T00:00:00Z, joined by "and". Graph
// compares directory strings case-insensitively, and so does the filter.
type filter []clause

type clause struct {
	prop  string
	op    string // eq, or gt, ge, lt or le for a time
	value any    // string, bool or time.Time
}

// timeOps are the comparisons a DateTimeOffset property allows besides
// eq.
var timeOps = map[string]bool{"gt": true, "ge": true, "lt": true, "le": true}

// parseFilter parses raw against the filterable properties of a listing,
// given as an item's property values so each literal's type can be checked
// as Graph checks it.
func parseFilter(raw string, props map[string]any) (filter, error) {
	toks, err := tokens(raw)
	if err != nil {
		return nil, err
	}
	var f filter
	for i := 0; ; i += 4 {
		if len(toks) < i+3 {
			return nil, badQuery("Invalid filter clause: only property eq literal comparisons joined by 'and' are supported, not '%s'.", raw)
		}
		name, op, lit := toks[i].text, strings.ToLower(toks[i+1].text), toks[i+2]
		prop, known := lookup(props, name)
		_, isTime := props[prop].(time.Time)
		if op != "eq" && !(isTime && timeOps[op]) || toks[i+1].quoted {
			return nil, badQuery("Invalid filter clause: only property eq literal comparisons, and gt, ge, lt and le of dates, joined by 'and' are supported, not '%s'.", raw)
		}
		if !known || toks[i].quoted {
			return nil, badQuery("Unsupported or invalid query filter clause specified for property '%s'.", name)
		}
		value, err := literal(lit, props[prop])
		if err != nil {
			return nil, err
		}
		f = append(f, clause{prop: prop, op: op, value: value})
		if len(toks) == i+3 {
			return f, nil
		}
		if !strings.EqualFold(toks[i+3].text, "and") || toks[i+3].quoted {
			return nil, badQuery("Invalid filter clause: expected 'and' after '%s eq %s'.", name, lit.text)
		}
	}
}

// lookup finds a property by name regardless of case, returning its
// canonical name.
func lookup(props map[string]any, name string) (string, bool) {
	for p := range props {
		if strings.EqualFold(p, name) {
			return p, true
		}
	}
	return "", false
}

// literal reads a literal for a property whose values look like sample.
func literal(lit token, sample any) (any, error) {
	var value any = lit.text
	litType := "Edm.String"
	if !lit.quoted {
		switch strings.ToLower(lit.text) {
		case "true", "false":
			value, litType = strings.EqualFold(lit.text, "true"), "Edm.Boolean"
		default:
			t, err := time.Parse(time.RFC3339, lit.text)
			if err != nil {
				return nil, badQuery("Invalid filter clause: '%s' is not a supported literal; quote strings.", lit.text)
			}
			value, litType = t, "Edm.DateTimeOffset"
		}
	}
	propType := "Edm.String"
	switch sample.(type) {
	case bool:
		propType = "Edm.Boolean"
	case time.Time:
		propType = "Edm.DateTimeOffset"
	}
	if propType != litType {
		return nil, badQuery("A binary operator with incompatible types was detected. Found operand types '%s' and '%s' for operator kind 'Equal'.", propType, litType)
	}
	return value, nil
}

func (f filter) matches(props map[string]any) bool {
	for _, c := range f {
		switch want := c.value.(type) {
		case string:
			if got, _ := props[c.prop].(string); !strings.EqualFold(got, want) {
				return false
			}
		case bool:
			if got, _ := props[c.prop].(bool); got != want {
				return false
			}
		case time.Time:
			got, _ := props[c.prop].(time.Time)
			if !compareTime(got, c.op, want) {
				return false
			}
		}
	}
	return true
}

// compareTime is got op want.
func compareTime(got time.Time, op string, want time.Time) bool {
	switch op {
	case "gt":
		return got.After(want)
	case "ge":
		return !got.Before(want)
	case "lt":
		return got.Before(want)
	case "le":
		return !got.After(want)
	}
	return got.Equal(want)
}

// queryError is a rejected $filter; its text is the message Graph answers
// with, written as Graph writes it.
type queryError string

func (e queryError) Error() string { return string(e) }

func badQuery(format string, args ...any) error { return queryError(fmt.Sprintf(format, args...)) }

// token is a word of a $filter, or a quoted string with its quotes removed.
type token struct {
	text   string
	quoted bool
}

// tokens splits a $filter into words and OData string literals, in which a
// doubled quote stands for one.
func tokens(raw string) ([]token, error) {
	var toks []token
	for i := 0; i < len(raw); {
		switch {
		case raw[i] == ' ':
			i++
		case raw[i] == '\'':
			var b strings.Builder
			j := i + 1
			for ; ; j++ {
				if j >= len(raw) {
					return nil, badQuery("Invalid filter clause: unterminated string literal at position %d in '%s'.", i, raw)
				}
				if raw[j] == '\'' {
					if j+1 < len(raw) && raw[j+1] == '\'' {
						b.WriteByte('\'')
						j++
						continue
					}
					break
				}
				b.WriteByte(raw[j])
			}
			toks = append(toks, token{text: b.String(), quoted: true})
			i = j + 1
		default:
			j := i
			for j < len(raw) && raw[j] != ' ' && raw[j] != '\'' {
				j++
			}
			toks = append(toks, token{text: raw[i:j]})
			i = j
		}
	}
	return toks, nil
}
