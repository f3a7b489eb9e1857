// Package pluginstore gives each plugin a database of its own, so that a
// plugin can read neither the host's tables (users, tokens, API keys, the
// audit log) nor another plugin's.
//
// On PostgreSQL the host creates, once, a login role and a schema per plugin
// (see [Name]), lets the role use and create in that schema only, and hands
// the plugin a URL that signs in as the role with a password derived from the
// deployment's signing secret and set again at every start. On SQLite each
// plugin gets a file of its own under the data directory. A plugins.hcl block
// may name a database_url instead (for a deployment whose database user may
// not create roles); [Stores.Prepare] refuses one that reaches the host's
// tables.
//
// Hosts before this kept each plugin's tables beside their own; [Stores.Migrate]
// moves them, rows and all, on the plugin's first start.
package pluginstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/store"
)

// ErrRefused marks a storage the host will not hand a plugin: a restart does
// not cure it, a change to plugins.hcl or to the database's rights does.
var ErrRefused = errors.New("storage refused")

// refused is a one-line reason wrapping ErrRefused.
func refused(plugin, format string, args ...any) error {
	return fmt.Errorf("%w: plugin %q: %s", ErrRefused, plugin, fmt.Sprintf(format, args...))
}

// Options say where the host's own database is.
type Options struct {
	// DB is the host's database, already migrated.
	DB *bun.DB
	// URL is the host's database URL, which DB was opened from.
	URL string
	// DataDir holds the plugins' SQLite files, under plugins/.
	DataDir string
	// Secret is the deployment's signing secret, from which each plugin
	// role's password is derived, so that every replica sets the same one.
	Secret []byte
	Logger hclog.Logger
}

// Stores hands out the plugins' databases.
type Stores struct {
	opts    Options
	dialect string
	// sqlitePath is the host's SQLite file.
	sqlitePath string
	// database and schema are where the host's tables are on PostgreSQL,
	// which names the plugins' roles and schemas.
	database, schema string
	// provisioning serialises role and schema changes: PostgreSQL fails
	// concurrent GRANTs on one object with "tuple concurrently updated".
	provisioning sync.Mutex
	// moving serialises moves out of a SQLite host's file: each one
	// writes to it, and SQLite lets one writer in at a time.
	moving sync.Mutex
}

// New reads where the host's tables are.
func New(ctx context.Context, opts Options) (*Stores, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	s := &Stores{opts: opts, dialect: store.DialectName(opts.DB)}
	switch s.dialect {
	case store.DialectSQLite:
		path, err := sqlitePath(opts.URL)
		if err != nil {
			return nil, err
		}
		s.sqlitePath = path
	case store.DialectPostgres:
		if err := opts.DB.NewRaw("SELECT current_database(), current_schema()").Scan(ctx, &s.database, &s.schema); err != nil {
			return nil, fmt.Errorf("pluginstore: where the host's tables are: %w", err)
		}
	default:
		return nil, fmt.Errorf("pluginstore: unsupported database %s", s.dialect)
	}
	return s, nil
}

var pluginNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Name is the role and the schema of plugin on PostgreSQL, for a host whose
// tables are in schema of database. Roles are the cluster's, so two
// installations on one cluster (two databases, or two host schemas in one
// database) must not share one: the name carries a digest of where the
// host's tables are, except for the default installation (database
// "steward", schema "public"), whose plugins get plain names such as
// steward_p_cost.
func Name(database, schema, plugin string) string {
	if database == "steward" && schema == "public" {
		return "steward_p_" + plugin
	}
	sum := sha256.Sum256([]byte(database + "\x00" + schema))
	return "steward_p_" + plugin + "_" + hex.EncodeToString(sum[:4])
}

// maxIdentifier is PostgreSQL's longest name, in bytes.
const maxIdentifier = 63

// Prepare returns the database URL plugin and its migrations use: the one
// its block declares (empty when none) once checked, or one the host
// provisions. An error wrapping ErrRefused says in one line why the plugin
// may not start; others (an unreachable database) may pass.
func (s *Stores) Prepare(ctx context.Context, plugin, declared string) (string, error) {
	if !pluginNameRE.MatchString(plugin) {
		return "", refused(plugin, "a plugin name is lower-case letters, digits and underscores")
	}
	if declared != "" {
		return declared, s.checkDeclared(ctx, plugin, declared)
	}
	switch s.dialect {
	case store.DialectSQLite:
		dir, err := filepath.Abs(filepath.Join(s.opts.DataDir, "plugins"))
		if err != nil {
			return "", err
		}
		// store.Open creates the folder 0700 and the file 0600.
		return "sqlite://" + filepath.Join(dir, plugin+".db"), nil
	default:
		return s.provision(ctx, plugin)
	}
}

// checkDeclared refuses a database_url of another kind than the host's, the
// host's own SQLite file, or a PostgreSQL role with rights on the host's
// tables.
func (s *Stores) checkDeclared(ctx context.Context, plugin, declared string) error {
	scheme, _, _ := strings.Cut(declared, "://")
	dialect := strings.ToLower(scheme)
	if dialect == "postgresql" {
		dialect = store.DialectPostgres
	}
	if dialect != s.dialect {
		return refused(plugin, "database_url must be a %s URL, as the host's database is", s.dialect)
	}
	if s.dialect == store.DialectSQLite {
		path, err := sqlitePath(declared)
		if err != nil {
			return refused(plugin, "database_url: %v", err)
		}
		if sameFile(path, s.sqlitePath) {
			return refused(plugin, "database_url names the host's own database file")
		}
		return nil
	}
	db, err := store.Open(ctx, declared, store.Options{MaxOpenConns: 1})
	if err != nil {
		return fmt.Errorf("plugin %q: database_url: %w", plugin, err)
	}
	defer db.Close()
	var role string
	if err := db.NewRaw("SELECT current_user").Scan(ctx, &role); err != nil {
		return fmt.Errorf("plugin %q: database_url: %w", plugin, err)
	}
	return s.checkRole(ctx, plugin, role, "database_url's role")
}

// checkRole refuses role when it holds any right on a table of the host's.
func (s *Stores) checkRole(ctx context.Context, plugin, role, what string) error {
	var exists bool
	if err := s.opts.DB.NewRaw("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ?)", role).Scan(ctx, &exists); err != nil {
		return err
	}
	if !exists {
		// A role of another cluster cannot reach this one's tables.
		return nil
	}
	var tables []string
	err := s.opts.DB.NewRaw(`SELECT c.relname FROM pg_class c
		WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
		  AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
		  AND has_table_privilege(?, c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
		ORDER BY c.relname LIMIT 1`, role).Scan(ctx, &tables)
	if err != nil {
		return err
	}
	if len(tables) > 0 {
		return refused(plugin, "%s %q has rights on the host's table %q; give the plugin a role with rights on its own schema only", what, role, tables[0])
	}
	return nil
}

// sqlitePath is the file of a sqlite:// URL, without its parameters.
func sqlitePath(rawURL string) (string, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	path, _, _ := strings.Cut(rest, "?")
	if !ok || !strings.EqualFold(scheme, "sqlite") || path == "" {
		return "", fmt.Errorf("not a sqlite:// URL with a file path")
	}
	return path, nil
}

// sameFile reports whether a and b name one file, the same path when
// neither exists yet.
func sameFile(a, b string) bool {
	ai, errA := os.Stat(a)
	bi, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(ai, bi)
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}

// postgresURL is the host's URL signing in as role, with schema as its
// search_path.
func (s *Stores) postgresURL(role, password, schema string) (string, error) {
	u, err := url.Parse(s.opts.URL)
	if err != nil {
		return "", errors.New("pluginstore: the host's database URL does not parse")
	}
	u.User = url.UserPassword(role, password)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
