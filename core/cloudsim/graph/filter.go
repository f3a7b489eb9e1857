package graph

import (
	"fmt"
	"strings"
)

// filter is a parsed $filter of the forms the simulator supports:
// equality of a property with a string or boolean literal, such as
// userType eq 'Guest' or accountEnabled eq false, joined by "and". Graph
// compares directory strings case-insensitively, and so does the filter.
type filter []clause

type clause struct {
	prop  string
	value any // string or bool
}

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
		if len(toks) < i+3 || !strings.EqualFold(toks[i+1].text, "eq") {
			return nil, badQuery("Invalid filter clause: only property eq literal comparisons joined by 'and' are supported, not '%s'.", raw)
		}
		name, lit := toks[i].text, toks[i+2]
		prop, known := lookup(props, name)
		if !known || toks[i].quoted {
			return nil, badQuery("Unsupported or invalid query filter clause specified for property '%s'.", name)
		}
		value, err := literal(lit, props[prop])
		if err != nil {
			return nil, err
		}
		f = append(f, clause{prop: prop, value: value})
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
			return nil, badQuery("Invalid filter clause: '%s' is not a supported literal; quote strings.", lit.text)
		}
	}
	propType := "Edm.String"
	if _, ok := sample.(bool); ok {
		propType = "Edm.Boolean"
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
		}
	}
	return true
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
