// Package bench measures what running a domain plugin out of process costs
// the host. It compares a plugin-proxied route with the same handler mounted
// in the host, on both data planes, and times the real binary's start-up.
//
// Every load run is one fixed-duration measurement, so `make bench` runs each
// sub-benchmark once (-benchtime 1x); -args -window=10s lengthens the runs.
package bench

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var window = flag.Duration("window", 3*time.Second, "measured length of each load run, after a warm-up")

func TestMain(m *testing.M) {
	// The load generator is this test binary started again: running it in
	// its own process keeps its CPU out of the host's accounting.
	if spec := os.Getenv(loadgenEnv); spec != "" {
		os.Exit(loadgenMain(spec))
	}
	code := m.Run()
	closeHosts()
	printSummary(os.Stdout)
	printPaired(os.Stdout)
	bins.cleanup()
	os.Exit(code)
}

// bins holds bin/steward and bin/plugins/*: `make bench` builds them and
// passes STEWARD_TEST_BIN; a bare `go test -bench` builds them once here.
var bins binaries

type binaries struct {
	once sync.Once
	dir  string
	tmp  string
	err  error
}

func binDir(tb testing.TB) string {
	tb.Helper()
	bins.once.Do(func() {
		if bins.dir = os.Getenv("STEWARD_TEST_BIN"); bins.dir != "" {
			return
		}
		if bins.tmp, bins.err = os.MkdirTemp("", "steward-bench-bin-"); bins.err != nil {
			return
		}
		bins.dir = bins.tmp
		// As `make build`: the host and every plugin.
		targets := map[string]string{"steward": "./host/cmd/steward"}
		mains, _ := filepath.Glob(filepath.Join("..", "plugins", "*", "main.go"))
		for _, m := range mains {
			name := filepath.Base(filepath.Dir(m))
			targets[filepath.Join("plugins", name)] = "./plugins/" + name
		}
		for target, pkg := range targets {
			cmd := exec.Command("go", "build", "-o", filepath.Join(bins.dir, target), pkg)
			cmd.Dir = ".."
			if out, err := cmd.CombinedOutput(); err != nil {
				bins.err = fmt.Errorf("build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if bins.err != nil {
		tb.Fatal(bins.err)
	}
	return bins.dir
}

func (b *binaries) cleanup() {
	if b.tmp != "" {
		_ = os.RemoveAll(b.tmp)
	}
}
