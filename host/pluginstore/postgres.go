package pluginstore

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
)

// provision makes plugin's role and schema (idempotently, and safely beside
// another replica doing the same), sets the role's password, and returns
// the URL that signs in as it.
func (s *Stores) provision(ctx context.Context, plugin string) (string, error) {
	name := Name(s.database, s.schema, plugin)
	if len(name) > maxIdentifier {
		return "", refused(plugin, "the name is too long for a PostgreSQL role (%s)", name)
	}
	password := s.password(name)
	s.provisioning.Lock()
	defer s.provisioning.Unlock()
	err := s.opts.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// Replicas starting together take turns; roles and grants are
		// transactional, so a failed start leaves nothing half made.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext(?))", "steward plugin storage "+name); err != nil {
			return err
		}
		var exists bool
		if err := tx.NewRaw("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ?)", name).Scan(ctx, &exists); err != nil {
			return err
		}
		if !exists {
			// The defaults are what the role must be: no superuser, no
			// role or database creation, no replication, no bypassing
			// row security.
			if _, err := tx.ExecContext(ctx, "CREATE ROLE ? LOGIN", bun.Ident(name)); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, "COMMENT ON ROLE ? IS ?", bun.Ident(name), s.comment()); err != nil {
			return err
		}
		// A verifier, not the password, so the password is in no
		// statement the server may log.
		if _, err := tx.ExecContext(ctx, "ALTER ROLE ? WITH LOGIN PASSWORD ?", bun.Ident(name), scramVerifier(password)); err != nil {
			return err
		}
		// The host owns the schema and the role may use it and create in
		// it; nobody else may.
		if _, err := tx.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS ?", bun.Ident(name)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "REVOKE ALL ON SCHEMA ? FROM PUBLIC", bun.Ident(name)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "GRANT USAGE, CREATE ON SCHEMA ? TO ?", bun.Ident(name), bun.Ident(name)); err != nil {
			return err
		}
		var connect, createInHost bool
		if err := tx.NewRaw("SELECT has_database_privilege(?, current_database(), 'CONNECT'), has_schema_privilege(?, current_schema(), 'CREATE')",
			name, name).Scan(ctx, &connect, &createInHost); err != nil {
			return err
		}
		if !connect {
			if _, err := tx.ExecContext(ctx, "GRANT CONNECT ON DATABASE ? TO ?", bun.Ident(s.database), bun.Ident(name)); err != nil {
				return err
			}
		}
		if createInHost {
			// Before PostgreSQL 15 everyone may create in public.
			if _, err := tx.ExecContext(ctx, "REVOKE CREATE ON SCHEMA ? FROM PUBLIC", bun.Ident(s.schema)); err != nil {
				return err
			}
		}
		return nil
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" { // insufficient_privilege
		return "", refused(plugin, "the host's database user may not create its role and schema (%s); grant it CREATEROLE, or name a database_url in the plugin's block",
			pgErr.Message)
	}
	if err != nil {
		return "", fmt.Errorf("plugin %q: provision role and schema %s: %w", plugin, name, err)
	}
	if err := s.checkRole(ctx, plugin, name, "role"); err != nil {
		return "", err
	}
	return s.postgresURL(name, password, name)
}

// comment marks the roles of this installation, which Drop finds by it.
func (s *Stores) comment() string {
	return "Steward plugin storage of " + s.database + "." + s.schema
}

// Drop removes every plugin role of the installation whose host's tables
// are in db, with its schema and everything in it: tearing down an
// installation, as a test does when it ends, since roles outlive a
// database's schemas.
func Drop(ctx context.Context, db *bun.DB) error {
	if store.DialectName(db) != store.DialectPostgres {
		return nil
	}
	s, err := New(ctx, Options{DB: db})
	if err != nil {
		return err
	}
	var roles []string
	if err := db.NewRaw("SELECT rolname FROM pg_roles WHERE shobj_description(oid, 'pg_authid') = ? ORDER BY rolname", s.comment()).Scan(ctx, &roles); err != nil {
		return err
	}
	for _, r := range roles {
		for _, q := range []string{"DROP SCHEMA IF EXISTS ? CASCADE", "DROP OWNED BY ?", "DROP ROLE ?"} {
			if _, err := db.ExecContext(ctx, q, bun.Ident(r)); err != nil {
				return fmt.Errorf("pluginstore: drop %s: %w", r, err)
			}
		}
	}
	return nil
}

// password is role's password: an HMAC of the role's name under the
// deployment's signing secret. Every replica derives the same one, so one
// replica's start does not lock out another's plugins, and it is never
// stored; rotating the secret changes it at the next start of each replica.
func (s *Stores) password(role string) string {
	mac := hmac.New(sha256.New, s.opts.Secret)
	mac.Write([]byte("steward plugin database role\x00" + role))
	return hex.EncodeToString(mac.Sum(nil))
}

// scramIterations is PostgreSQL's own default.
const scramIterations = 4096

// scramVerifier is PostgreSQL's SCRAM-SHA-256 secret for password (RFC
// 5802, RFC 7677), in the form pg_authid keeps it.
func scramVerifier(password string) string {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt) // never fails; it aborts the program instead
	salted, err := pbkdf2.Key(sha256.New, password, salt, scramIterations, sha256.Size)
	if err != nil {
		panic(err) // only for a key length FIPS mode refuses; ours is fixed
	}
	clientKey := hmacSHA256(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	serverKey := hmacSHA256(salted, "Server Key")
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", scramIterations, b64(salt), b64(storedKey[:]), b64(serverKey))
}

func hmacSHA256(key []byte, msg string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msg))
	return mac.Sum(nil)
}
