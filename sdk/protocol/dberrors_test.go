package protocol_test

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/sdk/protocol"
)

// TestDatabaseUnavailable: a database outage and full storage are each a
// 503 with its own detail and Retry-After; other errors pass unchanged.
func TestDatabaseUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name               string
		err                error
		detail, retryAfter string
	}{
		{"outage", fmt.Errorf("query: %w", driver.ErrBadConn), protocol.MsgDatabaseUnavailable, store.UnavailableRetryAfter},
		{"full", fmt.Errorf("insert: %w", &pgconn.PgError{Code: "53100"}), protocol.MsgStorageFull, store.FullRetryAfter},
	} {
		err := protocol.DatabaseUnavailable(tc.err)
		var se huma.StatusError
		var hh huma.HeadersError
		if !errors.As(err, &se) || se.GetStatus() != http.StatusServiceUnavailable || !errors.As(err, &hh) ||
			hh.GetHeaders().Get("Retry-After") != tc.retryAfter {
			t.Errorf("%s: %v, want a 503 with Retry-After %s", tc.name, err, tc.retryAfter)
			continue
		}
		if m, ok := se.(*huma.ErrorModel); !ok || m.Detail != tc.detail {
			t.Errorf("%s: %+v, want detail %q", tc.name, se, tc.detail)
		}
	}
	other := errors.New("syntax error")
	if err := protocol.DatabaseUnavailable(other); err != other {
		t.Errorf("another error became %v", err)
	}
}
