package jobs

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Spec describes one job a plugin offers. The host builds specs from plugin
// manifests and hands the full set to Scheduler.SetSpecs.
type Spec struct {
	Plugin string `json:"plugin"`
	Name   string `json:"name"`
	// JobType is the word operators trigger and filter by: a data domain
	// or a word of the plugin's own. It defaults to DataDomain.
	JobType    string `json:"job_type"`
	DataDomain string `json:"data_domain,omitempty"`
	// Schedule is a standard five-field cron expression or a descriptor
	// such as "@hourly" or "@every 1h", evaluated in UTC unless it starts
	// with CRON_TZ=. Empty means the job only runs when triggered.
	Schedule string `json:"schedule,omitempty"`
	// StaleAfter is how old a tenant's last sync of DataDomain may be before
	// the tenant counts as stale: the plugin's declaration or plugins.hcl's
	// override; zero leaves it to the schedule (see DataDomains).
	StaleAfter time.Duration `json:"-"`
	// Reads are the datasets the job reads, and Produces those its runs
	// keep current (its plugin's, for a job that keeps a data domain): a
	// job runs after the jobs producing what it reads (see FirstSync).
	Reads    []string `json:"-"`
	Produces []string `json:"-"`
	// PerTenant says the job's work is one independent piece per tenant:
	// with a Spreader, a run's tenants are run as pieces of their own, on
	// whichever replicas have room.
	PerTenant bool `json:"-"`
}

// Key identifies a job across plugins; it is stored with every run.
func (s Spec) Key() string { return s.Plugin + "/" + s.Name }

// job is a validated Spec plus the scheduling state of this replica.
type job struct {
	spec  Spec
	sched cron.Schedule // nil for manual-only jobs
	next  time.Time     // next slot to claim; zero for manual-only jobs
}

func compile(spec Spec) (*job, error) {
	if spec.Plugin == "" || spec.Name == "" {
		return nil, fmt.Errorf("jobs: job %q: plugin and name are required", spec.Key())
	}
	// The key joins plugin and name with a slash, so a slash in the plugin
	// name would make two different jobs share one key.
	if strings.Contains(spec.Plugin, "/") {
		return nil, fmt.Errorf("jobs: job %q: plugin name must not contain '/'", spec.Key())
	}
	if spec.JobType == "" {
		spec.JobType = spec.DataDomain
	}
	if spec.JobType == "" {
		return nil, fmt.Errorf("jobs: job %q: job type or data domain is required", spec.Key())
	}
	j := &job{spec: spec}
	if spec.Schedule == "" {
		return j, nil
	}
	sched, err := parseSchedule(spec.Schedule)
	if err != nil {
		return nil, fmt.Errorf("jobs: job %q: invalid schedule %q: %w", spec.Key(), spec.Schedule, err)
	}
	j.sched = sched
	return j, nil
}

func parseSchedule(expr string) (cron.Schedule, error) {
	sched, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, err
	}
	if every, ok := sched.(cron.ConstantDelaySchedule); ok {
		return alignedEvery{every: every.Delay}, nil
	}
	return sched, nil
}

// alignedEvery replaces cron's "@every" schedule, which counts from whenever
// the process started. Replicas started at different moments would then
// compute different slots and each run the job; aligning slots to multiples
// of the interval gives every replica the same slot times to claim.
type alignedEvery struct {
	every time.Duration
}

func (a alignedEvery) Next(t time.Time) time.Time {
	return t.Truncate(a.every).Add(a.every)
}

// DataDomains reports each data domain the registered jobs keep current,
// with how old a tenant's last sync of it may be before the tenant counts
// as stale: the longest StaleAfter its jobs declare, or else twice the
// longest gap between two scheduled runs of those jobs, so that one missed
// run makes the tenant stale; zero when they only run when triggered and
// declare nothing, and such a domain is not judged. The gap is the largest
// of the next eight intervals after now, which covers cron expressions
// whose runs are not evenly spaced (weekdays only, say).
func (s *Scheduler) DataDomains() map[string]time.Duration {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	gaps, declared := map[string]time.Duration{}, map[string]time.Duration{}
	for _, j := range s.jobs {
		d := j.spec.DataDomain
		if d == "" {
			continue
		}
		if j.spec.StaleAfter > 0 {
			declared[d] = max(declared[d], j.spec.StaleAfter)
		}
		gap := gaps[d]
		if j.sched != nil {
			at := j.sched.Next(now)
			for range 8 {
				next := j.sched.Next(at)
				if next.IsZero() {
					break
				}
				gap = max(gap, next.Sub(at))
				at = next
			}
		}
		gaps[d] = gap
	}
	out := make(map[string]time.Duration, len(gaps))
	for d, gap := range gaps {
		if t, ok := declared[d]; ok {
			out[d] = t
		} else {
			out[d] = 2 * gap
		}
	}
	return out
}
