package jobs

// A run spans every tenant, so its free text — an error, a progress line,
// an alert's message, a resolution note — may name any tenant's
// subscriptions or resources. Redacted copies keep what a standard user
// needs to see that a sync ran, failed or is stuck, and leave the reason to
// administrators.

// RedactedText replaces a run's or alert's free text for a standard user.
const RedactedText = "details are visible to administrators"

func redacted(s *string) *string {
	if s == nil {
		return nil
	}
	r := RedactedText
	return &r
}

// Redacted returns the run without its free text or the actor who asked
// for it.
func (r Run) Redacted() Run {
	r.ErrorMessage = redacted(r.ErrorMessage)
	r.TriggeredBy = nil
	if r.Progress.Message != "" {
		r.Progress.Message = RedactedText
	}
	return r
}

// Redacted returns the summary without its error text.
func (s RunSummary) Redacted() RunSummary {
	s.ErrorMessage = redacted(s.ErrorMessage)
	return s
}

// Redacted returns the alert without its message, its resolver or notes.
func (a Alert) Redacted() Alert {
	if a.Message != "" {
		a.Message = RedactedText
	}
	a.Title = a.JobType + " sync failed"
	a.ResolvedBy = redacted(a.ResolvedBy)
	a.ResolutionNotes = redacted(a.ResolutionNotes)
	return a
}

// Redacted returns the history with every run redacted.
func (h HistoryResponse) Redacted() HistoryResponse {
	out := HistoryResponse{Logs: make([]Run, len(h.Logs))}
	for i, r := range h.Logs {
		out.Logs[i] = r.Redacted()
	}
	return out
}

// Redacted returns the alerts, each redacted.
func (a AlertsResponse) Redacted() AlertsResponse {
	out := AlertsResponse{Alerts: make([]Alert, len(a.Alerts))}
	for i, al := range a.Alerts {
		out.Alerts[i] = al.Redacted()
	}
	return out
}

// Redacted returns the status with each job's last run redacted.
func (s StatusResponse) Redacted() StatusResponse {
	out := StatusResponse{Jobs: make([]JobStatus, len(s.Jobs))}
	for i, j := range s.Jobs {
		if j.LastRun != nil {
			sum := j.LastRun.Redacted()
			j.LastRun = &sum
		}
		out.Jobs[i] = j
	}
	return out
}
