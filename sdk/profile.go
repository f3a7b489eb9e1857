package sdk

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/hashicorp/go-hclog"
)

// startProfiling profiles the plugin process when the host's environment
// names a directory in protocol.EnvProfileDir: a CPU profile of the whole
// run in <dir>/<plugin>-<pid>.cpu.pprof and, when the run ends, an
// allocation profile in <dir>/<plugin>-<pid>.allocs.pprof. The returned
// function ends the run's profiling; Serve calls it once the host has
// stopped the plugin (a plugin the host kills writes an incomplete CPU
// profile and no allocation profile). Without the variable it does nothing.
func startProfiling(name, dir string, logger hclog.Logger) (stop func()) {
	if dir == "" {
		return func() {}
	}
	base := filepath.Join(dir, fmt.Sprintf("%s-%d", name, os.Getpid()))
	cpu, err := os.Create(base + ".cpu.pprof")
	if err != nil {
		logger.Error("cpu profile not written", "error", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		logger.Error("cpu profile not written", "error", err)
		_ = cpu.Close()
		return func() {}
	}
	logger.Info("profiling the plugin", "cpu_profile", cpu.Name())
	return func() {
		pprof.StopCPUProfile()
		if err := cpu.Close(); err != nil {
			logger.Error("cpu profile", "error", err)
		}
		if err := writeProfile("allocs", base+".allocs.pprof"); err != nil {
			logger.Error("allocation profile not written", "error", err)
		}
	}
}

func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
