package jobs

import (
	"time"

	"context"
	"slices"

	"github.com/uptrace/bun"
)

// producersOf links each job that reads a dataset (Spec.Reads) to the
// other jobs that produce it (Spec.Produces), by key. A job in a cycle of
// such links — two plugins each reading the other's data — is left
// unordered rather than re-run forever, and logged.
func (s *Scheduler) producersOf(jobs []*job) map[string][]string {
	producers := map[string][]string{}
	for _, j := range jobs {
		for _, p := range jobs {
			if p != j && slices.ContainsFunc(j.spec.Reads, func(d string) bool { return slices.Contains(p.spec.Produces, d) }) {
				producers[j.spec.Key()] = append(producers[j.spec.Key()], p.spec.Key())
			}
		}
	}
	var cyclic []string
	for key := range producers {
		if reaches(producers, key, key, map[string]bool{}) {
			cyclic = append(cyclic, key)
		}
	}
	for _, key := range cyclic {
		s.log.Warn("job reads data that its own runs lead to; its runs are not ordered after its producers'", "job", key)
		delete(producers, key)
	}
	return producers
}

// reaches reports whether from's producers lead, through theirs, to key.
func reaches(producers map[string][]string, from, key string, seen map[string]bool) bool {
	for _, p := range producers[from] {
		if p == key {
			return true
		}
		if !seen[p] {
			seen[p] = true
			if reaches(producers, p, key, seen) {
				return true
			}
		}
	}
	return false
}

// FirstSync queues one run of every job that keeps a data domain current
// and reads nothing another such job produces; the readers follow as
// their producers finish (runDependents), so a start-up never reads a
// dataset before its first sync.
func (s *Scheduler) FirstSync(ctx context.Context, triggeredBy string) ([]Run, error) {
	var specs []Spec
	s.mu.Lock()
	for _, j := range s.jobs {
		if j.spec.DataDomain != "" && len(s.producers[j.spec.Key()]) == 0 {
			specs = append(specs, j.spec)
		}
	}
	s.mu.Unlock()
	return s.queue(ctx, specs, triggeredBy)
}

// runDependents queues a run of each job that reads what the job of key
// produces, once none of that job's producers is queued or running (the
// last of them to finish queues it), unless a run of it is queued already
// and so has yet to read, or was queued since the finished run completed
// (at completedAt) and so reads its data: the check of a producer that
// finished first may come after a later producer's queued the reader, and
// that reader's run reads both. Checked in the database after the
// finished run was recorded, so replicas finishing producers at once queue
// it at least once.
func (s *Scheduler) runDependents(ctx context.Context, key string, completedAt time.Time) {
	var due []Spec
	s.mu.Lock()
	for _, j := range s.jobs {
		if producers := s.producers[j.spec.Key()]; slices.Contains(producers, key) {
			due = append(due, j.spec)
		}
	}
	producers := s.producers
	s.mu.Unlock()
	for _, spec := range due {
		busy, err := s.db.NewSelect().Model((*Run)(nil)).
			WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
				return q.Where("job_key IN (?) AND status IN (?)", bun.List(producers[spec.Key()]), bun.List(activeStatuses)).
					WhereOr("job_key = ? AND status = ?", spec.Key(), StatusQueued).
					WhereOr("job_key = ? AND queued_at >= ?", spec.Key(), completedAt)
			}).Exists(ctx)
		if err != nil {
			s.log.Error("checking a reader's producers failed; it runs on its schedule", "job", spec.Key(), "error", err)
			continue
		}
		if busy {
			continue
		}
		if _, err := s.queue(ctx, []Spec{spec}, "system"); err != nil {
			s.log.Warn("reader not queued after its producers", "job", spec.Key(), "error", err)
		}
	}
}
