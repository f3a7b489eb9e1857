// Command steward is the Steward host: it serves the API and web UI, runs
// the plugins declared in plugins.hcl and schedules their jobs.
//
//	steward serve                 serve on STEWARD_HTTP_ADDR
//	steward migrate up|down|status
//	steward plugins list
//	steward plugins reload NAME
//	steward apikey create|list|revoke
//	steward version
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/stack"
	"github.com/stewardhq/steward/core/config"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/host/apikeys"
	"github.com/stewardhq/steward/host/app"
	"github.com/stewardhq/steward/host/audit"
	"github.com/stewardhq/steward/host/authcache"
	"github.com/stewardhq/steward/host/plugins"
	"github.com/stewardhq/steward/host/redisconn"
	"github.com/stewardhq/steward/host/server"
	"github.com/stewardhq/steward/host/tenancy"
	"github.com/stewardhq/steward/migrations"
)

const usage = `usage: steward <command>

commands:
  serve                    serve the API, UI and plugins
  migrate up|down|status   apply, roll back (last group) or list host migrations
  plugins list             list the plugins plugins.hcl declares
  plugins reload NAME      upgrade a plugin of the running host in place
  apikey create|list|revoke
                           manage API keys (steward apikey help)
  sim [--world FILE]       run the simulated cloud alone and print its addresses
  version                  print the version

Configuration comes from STEWARD_* environment variables (see README).
`

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		// A config block a plugin's schema refuses is told the way a
		// compiler tells a mistake, a line per problem that starts with
		// where it is in plugins.hcl.
		var config *plugins.ConfigError
		if errors.As(err, &config) {
			fmt.Fprintln(os.Stderr, config)
		} else {
			fmt.Fprintln(os.Stderr, "steward:", err)
		}
		os.Exit(1)
	}
}

// commandUsage is each command's help, printed for --help (or -h, or
// help) anywhere among its arguments: asking for help is not an error.
var commandUsage = map[string]string{
	"serve":   "usage: steward serve [--addr HOST:PORT]\n\nServe the API, UI and plugins. Configuration comes from STEWARD_* environment\nvariables (see README); --addr overrides STEWARD_HTTP_ADDR.\n",
	"migrate": "usage: steward migrate up|down|status\n\n  up      apply every pending host migration\n  down    roll back the last group applied\n  status  list host migrations and whether each is applied\n",
	"plugins": pluginsUsage,
	"apikey":  apiKeyUsage,
	"sim":     "usage: steward sim [--world FILE]\n\nRun the simulated cloud alone and print its addresses. --world (or\nSTEWARD_SIM_WORLD) names a world file; the default is the built-in demo world.\n",
	"version": "usage: steward version\n\nPrint the version.\n",
}

func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help", "help":
			return true
		}
	}
	return false
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(out, usage)
		return errors.New("no command given")
	}
	if help, ok := commandUsage[args[0]]; ok && wantsHelp(args[1:]) {
		fmt.Fprint(out, help)
		return nil
	}
	switch args[0] {
	case "serve":
		return serve(args[1:])
	case "migrate":
		return migrate(args[1:], out)
	case "plugins":
		return pluginsCommand(args[1:], out)
	case "apikey":
		return apiKey(args[1:], out)
	case "sim":
		return runSim(args[1:])
	case "version":
		fmt.Fprintln(out, "steward", app.Version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(out, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

func loadConfig(fs *flag.FlagSet, args []string) (config.Config, error) {
	addr := fs.String("addr", "", "listen address (overrides STEWARD_HTTP_ADDR)")
	if err := fs.Parse(args); err != nil {
		return config.Config{}, err
	}
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return cfg, err
	}
	if *addr != "" {
		cfg.HTTPAddr = *addr
	}
	return cfg, nil
}

func newLogger(cfg config.Config) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "steward", Level: hclog.LevelFromString(cfg.LogLevel), Output: os.Stderr, JSONFormat: cfg.Env != config.Development})
}

func serve(args []string) error {
	cfg, err := loadConfig(flag.NewFlagSet("serve", flag.ContinueOnError), args)
	if err != nil {
		return err
	}
	logger := newLogger(cfg)
	// The signal ends serving, not the host: plugins and the scheduler keep
	// running while in-flight requests finish, and stop after them
	// (h.Close). A signal during start-up is acted on once start-up is done.
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Last of all, after the supervisor's own Stop: no plugin process
	// go-plugin started outlives the host, whatever state it was in.
	defer plugin.CleanupClients()
	// Bound before anything starts, so that port 0 picks a free port that
	// is ours from the start, and what is derived from the address (the
	// development sign-in's return URL) and the ready line name the port
	// actually served.
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
	}
	defer ln.Close()
	cfg.HTTPAddr = ln.Addr().String()
	served, scheme := server.Lingering(ln), "http"
	if cfg.TLS() {
		tlsCfg, err := server.TLSConfig(cfg.TLSCertFile, cfg.TLSKeyFile, func(err error) {
			logger.Error("the TLS key pair changed on disk but does not load; still serving the previous one", "error", err)
		})
		if err != nil {
			return err
		}
		served, scheme = tls.NewListener(served, tlsCfg), "https"
	}
	if cfg.DebugAddr != "" {
		debug, err := serveDebug(cfg.DebugAddr)
		if err != nil {
			return err
		}
		defer debug.Close()
		logger.Info("serving runtime profiles", "addr", "http://"+debug.Addr+"/debug/pprof/")
	}
	h, err := app.Start(context.Background(), cfg, app.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer h.Close()
	errc := make(chan error, 1)
	go func() { errc <- h.Server.App.Listener(served) }()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	logger.Info("steward ready", "addr", scheme+"://"+cfg.HTTPAddr, "env", cfg.Env, "database", redact(cfg.DatabaseURL),
		"plugins", len(h.Plugins.Statuses()), "ready_ms", h.ReadyTook.Milliseconds())
	for {
		select {
		case <-sig.Done():
			// A second signal stops the process at once.
			stop()
			drain(h, cfg, logger)
			return nil
		case err := <-errc:
			return err
		case <-hup:
			logger.Info("SIGHUP: re-reading plugins.hcl", "file", cfg.PluginsFile)
			// Beside the serving loop: a drain may take drain_timeout, and
			// a SIGTERM meanwhile still stops the host.
			go func() { _, _ = h.ReloadPluginsFile(context.Background()) }()
		}
	}
}

// serveDebug serves Go's runtime profiles (net/http/pprof) on addr, a
// loopback address (config refuses others), apart from the API so that
// nothing of it is reachable through the service's own port.
func serveDebug(addr string) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("STEWARD_DEBUG_ADDR: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: ln.Addr().String(), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

// drain stops serving gracefully: readiness fails at once, the listener
// keeps accepting for the drain delay (load balancers take a few probes to
// notice), then closes, and requests and streams in flight get up to the
// shutdown grace to finish. The deferred Close then stops the scheduler,
// whose runs are cancelled and recorded, and the plugins.
func drain(h *app.Host, cfg config.Config, logger hclog.Logger) {
	logger.Info("stopping: readiness now fails", "drain_delay", cfg.DrainDelay.String(), "shutdown_grace", cfg.ShutdownGrace.String())
	h.Server.Drain()
	time.Sleep(cfg.DrainDelay)
	t0 := time.Now()
	if err := h.Server.App.ShutdownWithTimeout(cfg.ShutdownGrace); err != nil {
		logger.Warn("requests still in flight at the end of the shutdown grace were cut off", "error", err)
	}
	logger.Info("stopped serving", "drained_ms", time.Since(t0).Milliseconds())
}

// runSim serves the simulated cloud on its own, for pointing a host or a
// test at it from outside.
func runSim(args []string) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	worldFile := fs.String("world", os.Getenv("STEWARD_SIM_WORLD"), "world file (default: the built-in demo world)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "steward-sim", Level: hclog.Info, Output: os.Stderr})
	w, err := stack.LoadWorld(*worldFile, time.Now())
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := stack.Start(ctx, w, cloudsim.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer st.Sim.Close()
	if *worldFile == "" {
		st.FollowDemo(ctx, time.Minute)
	}
	st.Log(logger)
	logger.Info("trust this CA to reach the simulator", "ca_pem", string(st.Sim.CAPEM))
	<-ctx.Done()
	return nil
}

func redact(url string) string {
	if len(url) > 9 && url[:9] == "sqlite://" {
		return url
	}
	return "postgres"
}

func migrate(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("migrate needs up, down or status")
	}
	cfg, err := loadConfig(flag.NewFlagSet("migrate", flag.ContinueOnError), args[1:])
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return err
	}
	db, err := store.Open(ctx, cfg.DatabaseURL, store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	switch args[0] {
	case "up":
		names, err := store.Migrate(ctx, db, migrations.FS, migrations.Table)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			fmt.Fprintln(out, "database is up to date")
		}
		for _, n := range names {
			fmt.Fprintln(out, "applied", n)
		}
	case "down":
		names, err := store.Rollback(ctx, db, migrations.FS, migrations.Table)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			fmt.Fprintln(out, "nothing to roll back")
		}
		for _, n := range names {
			fmt.Fprintln(out, "rolled back", n)
		}
	case "status":
		st, err := store.Status(ctx, db, migrations.FS, migrations.Table)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "MIGRATION\tSTATE")
		for _, m := range st {
			state := "pending"
			if m.Applied {
				state = "applied"
			}
			fmt.Fprintf(w, "%s\t%s\n", m.Name, state)
		}
		return w.Flush()
	default:
		return fmt.Errorf("migrate: unknown subcommand %q (want up, down or status)", args[0])
	}
	return nil
}

const pluginsUsage = `usage:
  steward plugins list
  steward plugins reload NAME

list names the plugins STEWARD_PLUGINS_FILE declares, with their binaries
and checksums. reload asks the host serving on STEWARD_HTTP_ADDR to upgrade
the plugin NAME in place (POST /api/v1/plugins/NAME/reload) with the admin
API key in STEWARD_API_KEY, and prints the old and new version.
`

func pluginsCommand(args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "reload" {
		if len(args) != 2 {
			return errors.New("usage: steward plugins reload NAME")
		}
		return reloadPlugin(os.Getenv("STEWARD_HTTP_ADDR"), os.Getenv("STEWARD_API_KEY"), args[1], out)
	}
	if len(args) == 0 || args[0] != "list" {
		return errors.New("plugins needs the subcommand list or reload")
	}
	cfg, err := loadConfig(flag.NewFlagSet("plugins", flag.ContinueOnError), args[1:])
	if err != nil {
		return err
	}
	decls, err := plugins.LoadFile(cfg.PluginsFile, "")
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tENABLED\tBINARY\tDATA PLANE\tFOUND")
	for _, d := range decls {
		_, statErr := os.Stat(d.Binary)
		fmt.Fprintf(w, "%s\t%t\t%s\t%s\t%t\n", d.Name, d.Enabled, d.Binary, d.DataPlane, statErr == nil)
	}
	return w.Flush()
}

// reloadPlugin asks the host at addr (STEWARD_HTTP_ADDR's form: host:port,
// :port, or a URL) to reload a plugin, and prints its answer.
func reloadPlugin(addr, key, name string, out io.Writer) error {
	if key == "" {
		return errors.New("plugins reload needs an admin API key in STEWARD_API_KEY")
	}
	base := addr
	switch {
	case base == "":
		base = "http://127.0.0.1:8000"
	case strings.HasPrefix(base, ":"):
		base = "http://127.0.0.1" + base
	case !strings.Contains(base, "://"):
		base = "http://" + base
	}
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(base, "/")+"/api/v1/plugins/"+url.PathEscape(name)+"/reload", nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", key)
	// A reload starts the new process and then waits for the old one to
	// drain, each bounded by the plugin's own timeouts, which the command
	// line does not know.
	client := &http.Client{Timeout: 10 * time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("reload %s: %w", name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reload %s: %w", name, err)
	}
	if resp.StatusCode != http.StatusOK {
		var problem struct {
			Detail string `json:"detail"`
		}
		if json.Unmarshal(body, &problem) == nil && problem.Detail != "" {
			return fmt.Errorf("reload %s: %s: %s", name, resp.Status, problem.Detail)
		}
		return fmt.Errorf("reload %s: %s", name, resp.Status)
	}
	var done plugins.Reloaded
	if err := json.Unmarshal(body, &done); err != nil {
		return fmt.Errorf("reload %s: %w", name, err)
	}
	fmt.Fprintf(out, "%s reloaded: %s (pid %d) -> %s (pid %d)\n", name, done.OldVersion, done.OldPID, done.NewVersion, done.NewPID)
	return nil
}

const apiKeyUsage = `usage:
  steward apikey create --name NAME --role admin|standard [--tenant ID ...] [--expires 720h]
  steward apikey list
  steward apikey revoke ID

A standard key needs at least one --tenant (the internal tenant id); an admin
key sees every tenant. The key is printed once and cannot be shown again.
`

// cliActor is the audit actor of changes made from the command line, which
// has no signed-in user.
const cliActor = "cli"

// stringList collects a flag given several times.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// apiKey manages API keys directly in the database, so that the first admin
// key of a deployment without a development sign-in can be made.
func apiKey(args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("apikey needs create, list or revoke\n%s", apiKeyUsage)
	}
	sub := args[0]
	fs := flag.NewFlagSet("apikey "+sub, flag.ContinueOnError)
	var (
		name    = fs.String("name", "", "what the key is for")
		role    = fs.String("role", "", "admin or standard")
		expires = fs.Duration("expires", 0, "lifetime, e.g. 720h (default: until revoked)")
		tenants stringList
	)
	fs.Var(&tenants, "tenant", "internal tenant id a standard key may see (repeatable)")
	cfg, err := loadConfig(fs, args[1:])
	if err != nil {
		return err
	}
	ctx := context.Background()
	db, err := app.OpenDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	keys := apikeys.New(db, tenancy.New(db))
	aud := audit.NewStore(db)
	switch sub {
	case "create":
		n := apikeys.NewKey{Name: *name, Role: *role, TenantIDs: tenants, CreatedBy: cliActor}
		if *expires != 0 {
			at := time.Now().Add(*expires)
			n.ExpiresAt = &at
		}
		k, token, err := keys.Create(ctx, n)
		if err != nil {
			return err
		}
		if err := aud.Append(ctx, audit.Entry{Action: "apikey.create.success", Status: audit.StatusSuccess, ActorID: cliActor,
			ResourceType: "api_key", ResourceID: k.ID, Details: map[string]any{"name": k.Name, "role": k.Role, "tenant_ids": k.TenantIDs, "expires_at": k.ExpiresAt}}); err != nil {
			return err
		}
		fmt.Fprintf(out, "created API key %s (%s, %s); it is shown only now:\n%s\n", k.ID, k.Name, k.Role, token)
	case "list":
		list, err := keys.List(ctx)
		if err != nil {
			return err
		}
		now := time.Now()
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tNAME\tROLE\tTENANTS\tCREATED\tEXPIRES\tLAST USED\tSTATE")
		for _, k := range list {
			scope := "all"
			if k.Role != apikeys.RoleAdmin {
				scope = strings.Join(k.TenantIDs, ",")
			}
			state := "active"
			switch {
			case k.RevokedAt != nil:
				state = "revoked"
			case !k.Active(now):
				state = "expired"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Role, scope,
				k.CreatedAt.Format(time.RFC3339), orNever(k.ExpiresAt), orNever(k.LastUsedAt), state)
		}
		return w.Flush()
	case "revoke":
		if fs.NArg() != 1 {
			return errors.New("apikey revoke needs the key id")
		}
		id := fs.Arg(0)
		if err := keys.Revoke(ctx, id); err != nil {
			return err
		}
		// Running hosts cache keys that authenticated. With Redis they are
		// told; without it their entries expire within authcache.LocalTTL.
		if cfg.RedisURL != "" {
			if err := announceChange(ctx, cfg); err != nil {
				fmt.Fprintf(out, "warning: running hosts were not told of the revocation (%v); they stop accepting the key within %s\n", err, authcache.SharedTTL)
			}
		}
		if err := aud.Append(ctx, audit.Entry{Action: "apikey.revoke.success", Status: audit.StatusSuccess, ActorID: cliActor,
			ResourceType: "api_key", ResourceID: id}); err != nil {
			return err
		}
		fmt.Fprintln(out, "revoked API key", id)
	default:
		return fmt.Errorf("apikey: unknown subcommand %q\n%s", sub, apiKeyUsage)
	}
	return nil
}

// announceChange tells running hosts sharing Redis that something
// authentication reads changed, on a connection of its own: the CLI serves
// nothing, so an outage is its one error to report.
func announceChange(ctx context.Context, cfg config.Config) error {
	conn, err := redisconn.Open(ctx, cfg.RedisURL, hclog.NewNullLogger())
	if err != nil {
		return err
	}
	defer conn.Close()
	return authcache.Announce(ctx, conn.Client(), cfg.RedisPrefix)
}

func orNever(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
