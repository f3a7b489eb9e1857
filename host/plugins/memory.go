package plugins

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-plugin"
)

// The memory limit is enforced from outside the plugin, without privileges:
// the supervisor reads the process's resident set from /proc every
// memoryCheckInterval and kills a plugin over its limit, which then
// restarts as after a crash. RLIMIT_AS would bound address space, which
// the Go runtime reserves far beyond what it uses, and a cgroup needs root
// or a delegated hierarchy. GOMEMLIMIT, set a tenth below the limit, makes
// a Go plugin collect garbage harder as it nears the limit, so that only
// memory it really holds gets it killed.
const memoryCheckInterval = time.Second

// memoryWatched says whether the resident set can be read (from /proc);
// elsewhere only GOMEMLIMIT applies.
const memoryWatched = runtime.GOOS == "linux"

// DefaultMemoryLimit is the memory limit of a plugin whose block sets none.
const DefaultMemoryLimit int64 = 1 << 30

// minMemoryLimit is below what a Go plugin with gRPC needs to start.
const minMemoryLimit int64 = 32 << 20

var sizeRE = regexp.MustCompile(`^([0-9]+)\s*(B|KiB|MiB|GiB|TiB)$`)

var sizeUnits = map[string]int64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}

// parseSize reads a size such as "512MiB".
func parseSize(name, s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%s: %q is not a size such as \"512MiB\" (units B, KiB, MiB, GiB, TiB)", name, s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	unit := sizeUnits[m[2]]
	if err != nil || n > (1<<62)/unit {
		return 0, fmt.Errorf("%s: %q is too large", name, s)
	}
	return n * unit, nil
}

// softMemoryLimit is the GOMEMLIMIT a plugin with the hard limit starts with.
func softMemoryLimit(limit int64) int64 { return limit - limit/10 }

// residentBytes is the resident set of process pid.
func residentBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseVmRSS(f)
}

// parseVmRSS reads the VmRSS line of a /proc/<pid>/status file.
func parseVmRSS(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmRSS line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("unexpected VmRSS line %q", sc.Text())
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no VmRSS line")
}

// watchMemory kills the plugin process started as client once its resident
// set goes over the plugin's memory limit; watch then restarts it with the
// reason as its last error. It ends when the process does or cannot be
// read (no /proc).
func (i *Instance) watchMemory(client *plugin.Client, pid int, limit int64) {
	defer i.sup.wg.Done()
	tick := time.NewTicker(memoryCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-i.sup.ctx.Done():
			return
		}
		rss, err := residentBytes(pid)
		i.mu.Lock()
		if i.client != client || i.state != StateRunning || err != nil {
			i.mu.Unlock()
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				i.log.Warn("plugin memory cannot be read; its memory_limit is not enforced", "error", err)
			}
			return
		}
		if rss <= limit {
			i.mu.Unlock()
			i.sup.metrics.memory.WithLabelValues(i.name).Set(float64(rss))
			continue
		}
		i.exitCause = fmt.Errorf("killed: resident memory %d MiB over its memory_limit of %d MiB", rss>>20, limit>>20)
		i.mu.Unlock()
		i.log.Error("plugin over its memory limit; restarting it", "pid", pid, "rss_bytes", rss, "memory_limit", limit)
		i.sup.metrics.memoryKills.WithLabelValues(i.name).Inc()
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
		return
	}
}
