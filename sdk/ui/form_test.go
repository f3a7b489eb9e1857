package ui_test

import (
	"fmt"
	"testing"

	"github.com/danielgtaylor/huma/v2/validation"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/ui"
)

func TestFieldMessage(t *testing.T) {
	for _, tc := range []struct{ message, want string }{
		{fmt.Sprintf(validation.MsgExpectedRequiredProperty, "name"), "is required"},
		{"expected length <= 20", "expected length <= 20"},
		{"expected required property", "expected required property"},
		{"", ""},
	} {
		if got := ui.FieldMessage(sdk.ErrorDetail{Location: "body.name", Message: tc.message}); got != tc.want {
			t.Errorf("FieldMessage(%q) = %q, want %q", tc.message, got, tc.want)
		}
	}
}
