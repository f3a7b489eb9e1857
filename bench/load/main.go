// Command load drives a realistic mix of Steward's traffic against the
// built binaries in each deployment the issue names (SQLite with one
// replica; PostgreSQL and Redis with one replica, and with two behind a
// round-robin balancer the tool serves) on the demo world and on a world of
// many tenants, and prints, per class of traffic and overall, throughput,
// latency percentiles, errors, each class's throughput against anonymous
// /health's in the same run, and the PostgreSQL backends forked during the
// measured window. `make load` builds bin/ and runs it from the
// repository's root; LOADFLAGS passes flags (see -h).
//
// Every class has connections of its own (its weight is its share of
// them), each sending the class's next request as soon as the last one is
// answered. A class's throughput per connection is then 1 / its mean
// latency, and its ratio to /health's compares what one request of it and
// one of /health take under the same load.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
)

type options struct {
	binDir, pluginsFile   string
	conns                 []int
	warmup, window        time.Duration
	setups, worlds        []string
	tenants, costDays     int
	mix                   []class
	postgresURL, redisURL string
	syncTimeout           time.Duration
	profileDir            string
	hostProfileDir        string
	prefill               bool
	logDir                string
}

func (o *options) maxConns() int {
	n := 0
	for _, c := range o.conns {
		n = max(n, c)
	}
	return n
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		stop()
		os.Exit(1)
	}
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	o := &options{}
	fs.StringVar(&o.binDir, "bin", "bin", "folder of the built steward and plugins/")
	fs.StringVar(&o.pluginsFile, "plugins", "plugins.hcl", "plugin declarations, copied beside a link to -bin, whose binaries they name as bin/plugins/…")
	conns := fs.String("conns", "64", "concurrent connections; a comma-separated list runs each in turn on the same hosts")
	fs.DurationVar(&o.warmup, "warmup", 10*time.Second, "least load before the window opens; on PostgreSQL it goes on until the pools have stopped growing (no backend forked for 10 s, at most 90 s), so the window measures them full")
	fs.DurationVar(&o.window, "duration", 20*time.Second, "measured window")
	setupNames := fs.String("setups", "sqlite,pg,pg2", "deployments: sqlite (one replica), pg (PostgreSQL + Redis, one replica), pg2 (two replicas behind a balancer)")
	worlds := fs.String("worlds", "demo,scaled", "worlds: demo (the built-in demo world) and scaled (-tenants copies of the demo's tenants)")
	fs.IntVar(&o.tenants, "tenants", 100, "tenants of the scaled world")
	fs.IntVar(&o.costDays, "cost-days", 31, "days of costs in the scaled world")
	mix := fs.String("mix", "", "class weights over the defaults, e.g. health=8,quotas=0 (classes: "+classNames()+")")
	fs.StringVar(&o.postgresURL, "postgres", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"PostgreSQL server (a database on it to connect to) where each run creates and drops a database")
	fs.StringVar(&o.redisURL, "redis", "redis://127.0.0.1:6379/0", "Redis; each run uses and then deletes a key prefix of its own")
	fs.DurationVar(&o.syncTimeout, "sync-timeout", 5*time.Minute, "longest wait for the start-up syncs")
	fs.StringVar(&o.profileDir, "plugin-profiles", "", "folder where every plugin writes a CPU profile of its whole run")
	fs.BoolVar(&o.prefill, "prefill", true, "open every PostgreSQL pool whole at start (pool_min_conns); false for a build from before it, to compare builds alike")
	fs.StringVar(&o.hostProfileDir, "host-profiles", "", "folder where each measured window's CPU profile of every host is written (<setup>-<world>-<conns>c-r<replica>.cpu.pprof), taken through STEWARD_DEBUG_ADDR")
	fs.StringVar(&o.logDir, "logs", "", "folder to keep the hosts' logs in (<setup>-<world>-r<replica>.log); by default they go with the run's folder")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: load [flags]\n\nClasses of the mix (default weights are shares of the connections):")
		for _, c := range classes {
			fmt.Fprintf(fs.Output(), "  %-20s %2d  %s\n", c.name, c.weight, c.about)
		}
		fmt.Fprintln(fs.Output())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for s := range strings.SplitSeq(*conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-conns: %q is not a number of connections", s)
		}
		o.conns = append(o.conns, n)
	}
	var err error
	if o.mix, err = parseMix(*mix); err != nil {
		return nil, err
	}
	o.setups = strings.Split(*setupNames, ",")
	for _, s := range o.setups {
		if _, ok := setupNamed(s); !ok {
			return nil, fmt.Errorf("-setups: no setup %q", s)
		}
	}
	o.worlds = strings.Split(*worlds, ",")
	for _, w := range o.worlds {
		if w != "demo" && w != "scaled" {
			return nil, fmt.Errorf("-worlds: no world %q", w)
		}
	}
	if o.tenants < 1 || o.costDays < 1 {
		return nil, errors.New("-tenants and -cost-days must be positive")
	}
	for _, dir := range []*string{&o.profileDir, &o.hostProfileDir, &o.logDir} {
		if *dir != "" {
			if *dir, err = absDir(*dir); err != nil {
				return nil, err
			}
		}
	}
	return o, nil
}

func setupNamed(name string) (setup, bool) {
	for _, s := range setups {
		if s.name == name {
			return s, true
		}
	}
	return setup{}, false
}

// absDir makes dir and returns its absolute path, which the hosts, run
// from elsewhere, can use.
func absDir(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Abs(dir)
}

func run(ctx context.Context, o *options) error {
	for _, f := range []string{o.binDir + "/steward", o.pluginsFile} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%v (run it from the repository's root after make build)", err)
		}
	}
	printHeader(o)
	var scaledFile string
	for _, w := range o.worlds {
		if w != "scaled" {
			continue
		}
		dir, err := os.MkdirTemp("", "steward-load-world-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		sw, err := scaledWorld(o.tenants, o.costDays, time.Now())
		if err != nil {
			return fmt.Errorf("scaled world: %w", err)
		}
		if scaledFile, err = writeWorld(sw, dir); err != nil {
			return err
		}
		fmt.Printf("Scaled world: %s\n\n", describeWorld(sw))
	}
	var summary []summaryRow
	for _, w := range o.worlds {
		file := ""
		if w == "scaled" {
			file = scaledFile
		}
		for _, name := range o.setups {
			s, _ := setupNamed(name)
			rows, err := runSetup(ctx, o, s, w, file)
			summary = append(summary, rows...)
			if err != nil {
				printSummary(o, summary)
				return fmt.Errorf("%s on the %s world: %w", s.name, w, err)
			}
		}
	}
	printSummary(o, summary)
	return nil
}

func describeWorld(w *world.World) string {
	subs := 0
	for _, t := range w.Tenants {
		subs += len(t.Subscriptions)
	}
	return fmt.Sprintf("%d tenants, %d subscriptions, %d resources, %d quotas, %d policy states, %d users, %d cost rows",
		len(w.Tenants), subs, len(w.Resources), len(w.Quotas), len(w.PolicyStates), len(w.Users), len(w.Costs))
}

func printHeader(o *options) {
	fmt.Println("# Steward under load")
	fmt.Println()
	fmt.Printf("Machine: %s, %d cores; %s; commit %s\n", cpuModel(), runtime.NumCPU(), time.Now().UTC().Format("2006-01-02 15:04 UTC"), commit())
	fmt.Printf("Window: %s after a warm-up of at least %s (on PostgreSQL, until the pools stop growing), at %s connections\n", o.window, o.warmup, joinInts(o.conns))
	fmt.Println()
	fmt.Println("| class | weight | requests |")
	fmt.Println("|---|---:|---|")
	for _, c := range o.mix {
		fmt.Printf("| %s | %d | %s |\n", c.name, c.weight, c.about)
	}
	fmt.Println()
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func commit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
