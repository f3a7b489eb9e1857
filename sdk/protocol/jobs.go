package protocol

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// ErrJobWithoutResult is a RunJob stream that ended cleanly before the
// plugin sent the job's result.
var ErrJobWithoutResult = errors.New("job ended without a result")

// JobEvents receive what a running job reports; either may be nil.
type JobEvents struct {
	Progress func(*pluginv1.JobProgress)
	// Alert receives the alerts the job raises, each already checked
	// with CheckAlert; one that fails the check is dropped.
	Alert func(*pluginv1.JobAlert)
}

// RecvJob reads a RunJob stream to its end: it hands each progress report
// and alert to ev, and returns the records the job processed once its
// result arrives. A job that fails ends the stream with the gRPC status
// error carrying its message, which RecvJob returns. The host's scheduler
// and the test harness both run jobs with it.
func RecvJob(stream pluginv1.Plugin_RunJobClient, ev JobEvents) (int64, error) {
	for {
		e, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return 0, ErrJobWithoutResult
		}
		if err != nil {
			return 0, err
		}
		if p := e.GetProgress(); p != nil && ev.Progress != nil {
			ev.Progress(p)
		}
		if a := e.GetAlert(); a != nil && ev.Alert != nil && CheckAlert(a.Severity, a.Title, a.Message) == nil {
			ev.Alert(a)
		}
		if r := e.GetResult(); r != nil {
			return r.RecordsProcessed, nil
		}
	}
}

// Bounds of a job's alert.
const (
	MaxAlertTitle   = 200
	MaxAlertMessage = 4000
)

// AlertSeverities are the severities a job's alert may have, mildest
// first.
var AlertSeverities = []string{"info", "warning", "error", "critical"}

// CheckAlert says what is wrong with an alert a job raises, or nil: a
// known severity, a title of 1 to MaxAlertTitle characters and a message
// of at most MaxAlertMessage, both UTF-8 without control characters but
// the message's tabs and line breaks.
func CheckAlert(severity, title, message string) error {
	switch {
	case !slices.Contains(AlertSeverities, severity):
		return fmt.Errorf("alert severity %q is none of %s", severity, strings.Join(AlertSeverities, ", "))
	case title == "" || utf8.RuneCountInString(title) > MaxAlertTitle:
		return fmt.Errorf("alert title must have 1 to %d characters", MaxAlertTitle)
	case utf8.RuneCountInString(message) > MaxAlertMessage:
		return fmt.Errorf("alert message must have at most %d characters", MaxAlertMessage)
	case ControlChars(title, false) || ControlChars(message, true):
		return errors.New("alert title and message " + MsgControlChars)
	}
	return nil
}
