package store_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stewardhq/steward/core/store"
)

func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"no rows", sql.ErrNoRows, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"unique violation", fmt.Errorf("insert: %w", &pgconn.PgError{Code: "23505"}), false},
		{"cancelled by the caller", context.Canceled, false},
		{"bad connection", fmt.Errorf("query: %w", driver.ErrBadConn), true},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, true},
		{"server shutting down", &pgconn.PgError{Code: "57P01"}, true},
		{"connection exception", &pgconn.PgError{Code: "08006"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"broken mid-statement", errors.New("read: unexpected EOF"), true},
	} {
		if got := store.Unavailable(tc.err); got != tc.want {
			t.Errorf("%s: Unavailable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestUnavailableOnARefusedDatabase: what a pool reports for a server that
// does not answer is recognised, as it comes.
func TestUnavailableOnARefusedDatabase(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	db, err := store.Open(context.Background(), "postgres://postgres@"+addr+"/test?sslmode=disable&connect_timeout=2", store.Options{})
	if err == nil {
		defer db.Close()
		err = db.PingContext(context.Background())
	}
	if !store.Unavailable(err) {
		t.Fatalf("Unavailable(%v) = false for a refused connection", err)
	}
}
