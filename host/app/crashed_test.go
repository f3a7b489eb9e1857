package app

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stewardhq/steward/host/plugins"
)

// TestPluginCrashed: the ends of a call whose plugin process died are a
// crash, to be run again; a plugin's own failure is not.
func TestPluginCrashed(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"transport broken", status.Error(codes.Unavailable, "error reading from server: EOF"), true},
		{"connection closed by the supervisor", status.Error(codes.Canceled, "grpc: the client connection is closing"), true},
		{"wrapped", fmt.Errorf("tenant t1: %w", status.Error(codes.Unavailable, "connection refused")), true},
		{"restarting", &plugins.UnavailableError{Plugin: "cost"}, true},
		{"disabled", &plugins.UnavailableError{Plugin: "cost", Down: "disabled after 3 crashes"}, false},
		{"the plugin's own error", status.Error(codes.Unknown, "subscription s1: 429"), false},
		{"a plain error", errors.New("boom"), false},
		{"a deadline", context.DeadlineExceeded, false},
	} {
		if got := pluginCrashed(tc.err); got != tc.want {
			t.Errorf("%s: pluginCrashed(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
