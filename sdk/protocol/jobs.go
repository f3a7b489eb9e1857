package protocol

import (
	"errors"
	"io"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// ErrJobWithoutResult is a RunJob stream that ended cleanly before the
// plugin sent the job's result.
var ErrJobWithoutResult = errors.New("job ended without a result")

// RecvJob reads a RunJob stream to its end: it hands each progress report
// to progress, which may be nil, and returns the records the job processed
// once its result arrives. A job that fails ends the stream with the gRPC
// status error carrying its message, which RecvJob returns. The host's
// scheduler and the test harness both run jobs with it.
func RecvJob(stream pluginv1.Plugin_RunJobClient, progress func(*pluginv1.JobProgress)) (int64, error) {
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return 0, ErrJobWithoutResult
		}
		if err != nil {
			return 0, err
		}
		if p := ev.GetProgress(); p != nil && progress != nil {
			progress(p)
		}
		if r := ev.GetResult(); r != nil {
			return r.RecordsProcessed, nil
		}
	}
}
