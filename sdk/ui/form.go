package ui

import (
	"fmt"

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
