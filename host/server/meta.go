package server

import (
	"context"

	"github.com/stewardhq/steward/host/audit"
)

type requestMetaKey struct{}

// requestMeta is what audit entries need from the HTTP request.
type requestMeta struct {
	ClientAddr string
	RequestID  string
}

func metaFrom(ctx context.Context) requestMeta {
	m, _ := ctx.Value(requestMetaKey{}).(requestMeta)
	return m
}

// record appends an audit entry for the request's principal. A failure to
// audit is logged, not returned: the operation already happened, and
// answering 500 would invite a retry that does it twice.
func (s *Server) record(ctx context.Context, e audit.Entry) {
	m := metaFrom(ctx)
	if p := principalFrom(ctx); p != nil {
		if e.ActorID == "" {
			e.ActorID = p.ID
			if p.Kind == "apikey" {
				e.ActorID = "apikey:" + p.ID
			}
		}
		if e.ActorEmail == "" {
			e.ActorEmail = p.Email
		}
	}
	e.ClientAddr, e.RequestID = m.ClientAddr, m.RequestID
	if err := s.deps.Audit.Append(ctx, e); err != nil {
		s.deps.Logger.Error("audit append failed", "action", e.Action, "error", err)
	}
}
