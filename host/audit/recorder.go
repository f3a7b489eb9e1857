package audit

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/host/api"
)

// Recorder appends the audit entries of the host's operations, filling in
// what the request tells: the actor from its principal, its client address
// and request id.
type Recorder struct {
	store  *Store
	logger hclog.Logger
}

// NewRecorder records into store and logs what it fails to record.
func NewRecorder(store *Store, logger hclog.Logger) *Recorder {
	return &Recorder{store: store, logger: logger}
}

// Record appends an audit entry for the request's principal; an actor the
// entry names itself is kept. A failure to audit is logged, not returned:
// the operation already happened, and answering 500 would invite a retry
// that does it twice.
func (r *Recorder) Record(ctx context.Context, e Entry) {
	m := api.MetaFrom(ctx)
	if p := api.PrincipalFrom(ctx); p != nil {
		if e.ActorID == "" {
			e.ActorID = p.ActorID()
		}
		if e.ActorEmail == "" {
			e.ActorEmail = p.Email
		}
	}
	e.ClientAddr, e.RequestID = m.ClientAddr, m.RequestID
	if err := r.store.Append(ctx, e); err != nil {
		r.logger.Error("audit append failed", "action", e.Action, "error", err)
	}
}
