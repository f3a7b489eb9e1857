package ui

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/danielgtaylor/huma/v2/validation"

	"github.com/stewardhq/steward/sdk"
)

// FieldMessage is an input error's message as a form shows it beside the
// field of the member it names. The API's binding names a missing member
// in its own words ("expected required property name to be present"); the
// field beside which the form shows it is that member, so the form says
// it plainly.
func FieldMessage(d sdk.ErrorDetail) string {
	var missing string
	if n, _ := fmt.Sscanf(d.Message, validation.MsgExpectedRequiredProperty, &missing); n == 1 {
		return "is required"
	}
	return d.Message
}

// ParseForm reads a urlencoded form body of at most maxBytes; a longer or
// malformed one is an input error naming the body (a 422).
func ParseForm(raw []byte, maxBytes int) (url.Values, error) {
	if len(raw) > maxBytes {
		return nil, sdk.Invalid("body", "must be a form of at most %d bytes", maxBytes)
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil {
		return nil, sdk.Invalid("body", "must be a form: %v", err)
	}
	return form, nil
}

// DescribedBy is the aria-describedby of the form field with the id: the
// ids of its hint (id-hint) and of its errors (id-error), for those it
// has; "" for neither.
func DescribedBy(id string, hint, errors bool) string {
	var ids []string
	if hint {
		ids = append(ids, id+"-hint")
	}
	if errors {
		ids = append(ids, id+"-error")
	}
	return strings.Join(ids, " ")
}
