package store

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// UnavailableRetryAfter is the Retry-After, in seconds, of an answer given
// while the database cannot be reached.
const UnavailableRetryAfter = "5"

// FullRetryAfter is the Retry-After, in seconds, of an answer given while
// the database's storage is full: freeing space takes an operator, not a
// reconnect.
const FullRetryAfter = "60"

// Full reports whether err says the database's storage is full: SQLite's
// SQLITE_FULL (the disk, or the size cap of a sqlite:// URL) or
// PostgreSQL's disk_full. The write that met it changed nothing — SQLite
// and PostgreSQL roll the statement back, and its transaction with it —
// reads keep working, and writes succeed again once space is freed.
func Full(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqlite3.SQLITE_FULL
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "53100"
}

// Unavailable reports whether err says the database cannot be reached — a
// refused, reset or timed-out connection, a server shutting down or out of
// connections — or cannot store more (Full), rather than that a statement
// was wrong: the request that met it should be answered 503 and retried
// later, not 500.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if Full(err) {
		return true
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; admin_shutdown, crash_shutdown,
		// cannot_connect_now; too_many_connections.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03" || pgErr.Code == "53300"
	}
	// pgx reports a connection that broke mid-statement as an unexpected
	// EOF or a closed connection, not always wrapped.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "unexpected EOF")
}
