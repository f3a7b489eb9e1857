// Package stat holds what the benchmarks and the load tool measure with:
// nearest-rank percentiles of latencies, and the CPU time of processes and
// of the whole machine as Linux reports it under /proc.
package stat

import (
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Percentile reads the nearest-rank percentile of sorted latencies: the
// smallest latency that at least q of them do not exceed.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's CPU times; Linux
// exports 100 to user space on every architecture Go supports.
const clockTick = 10 * time.Millisecond

// Proc is a process as /proc/<pid>/stat describes it.
type Proc struct {
	PID, PPID int
	// Comm is the command name, at most 15 bytes.
	Comm string
	// CPU is the user plus system time of every thread so far.
	CPU time.Duration
}

// ReadProc reads one process's stat line; ok is false when the process is
// gone or the line does not parse.
func ReadProc(pid int) (p Proc, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return p, false
	}
	// The command name is in parentheses and may hold spaces; the fields
	// after it are fixed: state is field 3, ppid 4, utime 14 and stime 15.
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return p, false
	}
	fields := strings.Fields(s[closing+1:])
	if len(fields) < 13 {
		return p, false
	}
	ppid, _ := strconv.Atoi(fields[1])
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return Proc{PID: pid, PPID: ppid, Comm: s[open+1 : closing], CPU: time.Duration(utime+stime) * clockTick}, true
}

// ProcessCPU is the user plus system CPU time of every thread of pid so
// far, or 0 when it cannot be read.
func ProcessCPU(pid int) time.Duration {
	p, _ := ReadProc(pid)
	return p.CPU
}

// Procs reads every process on the machine.
func Procs() []Proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := ReadProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// MachineCPU is the user and system time of all CPUs so far, from the
// first line of /proc/stat ("cpu user nice system idle …"), or 0 when
// unreadable. Interrupt time is left out: it is charged to no process.
func MachineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 4 || fields[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, f := range fields[1:4] {
		n, _ := strconv.ParseInt(f, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * clockTick
}
