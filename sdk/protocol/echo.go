package protocol

import (
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	humavalidation "github.com/danielgtaylor/huma/v2/validation"
)

// secretFields are the last segments of locations whose values a 422 must
// not repeat.
var secretFields = []string{"password", "secret", "client_secret", "token", "refresh_token", "access_token", "code", "code_verifier", "client_assertion"}

// Echoable reports whether a 422 may repeat the value found at location:
// never a whole object or list (huma reports an unexpected property with
// the entire body as its value, a password included), nor the value of a
// field named like a credential. The host's refusals and a typed route's
// follow it alike.
func Echoable(location string, value any) bool {
	switch value.(type) {
	case map[string]any, []any:
		return false
	}
	if i := strings.LastIndexByte(location, '.'); i >= 0 {
		location = location[i+1:]
	}
	return !slices.Contains(secretFields, strings.ToLower(location))
}

// missingMember is huma's message for a required member an object lacks,
// which it reports at the object's location.
var missingMember = strings.Split(humavalidation.MsgExpectedRequiredProperty, "%s")

// NameMissingMember moves huma's report of a missing required member from
// the object to the member (body.name, not body), as every other input
// problem names its field, without a value (huma's is the whole object).
// The host's refusals and a typed route's follow it alike.
func NameMissingMember(d *huma.ErrorDetail) {
	rest, ok := strings.CutPrefix(d.Message, missingMember[0])
	if name, ok2 := strings.CutSuffix(rest, missingMember[1]); ok && ok2 && d.Location != "" {
		d.Location += "." + name
		d.Value = nil
	}
}
