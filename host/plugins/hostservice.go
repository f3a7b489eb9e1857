package plugins

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// Backend is what the Host service needs from the rest of the host.
type Backend interface {
	ListTenants(ctx context.Context, ids []string, includeInactive bool) ([]*pluginv1.Tenant, error)
	// AppendAudit records an entry a plugin reports.
	AppendAudit(ctx context.Context, plugin string, req *pluginv1.AppendAuditRequest) error
	// MarkFresh records a successful sync of a tenant's data domain, or,
	// with a failure, a sync of it that failed and why.
	MarkFresh(ctx context.Context, tenantID, domain string, at time.Time, failure string) error
	// RaiseEvent keeps an event the plugin raised, of a kind it declared,
	// once per kind and dedupe key; at is when it occurred, zero for now.
	RaiseEvent(ctx context.Context, plugin string, req *pluginv1.RaiseEventRequest, at time.Time) (eventID string, duplicate bool, err error)
}

// ErrInvalid marks a Backend error caused by the plugin's request.
var ErrInvalid = errors.New("invalid request")

// hostService serves one plugin's calls to the host.
type hostService struct {
	pluginv1.UnimplementedHostServer
	sup    *Supervisor
	plugin string
	// desc is the description of the process the service serves, once
	// the host has accepted it: the event types it may raise.
	desc atomic.Pointer[pluginv1.DescribeResponse]
}

func (h *hostService) backend() (Backend, error) {
	if h.sup.opts.Backend == nil {
		return nil, status.Error(codes.Unavailable, "host backend not configured")
	}
	return h.sup.opts.Backend, nil
}

func (h *hostService) ListTenants(ctx context.Context, req *pluginv1.ListTenantsRequest) (*pluginv1.ListTenantsResponse, error) {
	b, err := h.backend()
	if err != nil {
		return nil, err
	}
	tenants, err := b.ListTenants(ctx, req.Ids, req.IncludeInactive)
	if err != nil {
		return nil, grpcError(err)
	}
	return &pluginv1.ListTenantsResponse{Tenants: tenants}, nil
}

func (h *hostService) AppendAudit(ctx context.Context, req *pluginv1.AppendAuditRequest) (*pluginv1.AppendAuditResponse, error) {
	b, err := h.backend()
	if err != nil {
		return nil, err
	}
	if err := b.AppendAudit(ctx, h.plugin, req); err != nil {
		return nil, grpcError(err)
	}
	return &pluginv1.AppendAuditResponse{}, nil
}

func (h *hostService) MarkFresh(ctx context.Context, req *pluginv1.MarkFreshRequest) (*pluginv1.MarkFreshResponse, error) {
	b, err := h.backend()
	if err != nil {
		return nil, err
	}
	if err := protocol.CheckMarkFresh(req); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := b.MarkFresh(ctx, req.TenantId, req.Domain, time.UnixMilli(req.SyncedAtUnixMs).UTC(), req.Failure); err != nil {
		return nil, grpcError(err)
	}
	return &pluginv1.MarkFreshResponse{}, nil
}

// ReadDataset finds the plugin that publishes the dataset and relays its
// stream, so no plugin ever reads another's tables. A read made for a
// request sees only the tenants of the request's caller.
func (h *hostService) ReadDataset(req *pluginv1.ReadDatasetRequest, out pluginv1.Host_ReadDatasetServer) error {
	owner := h.sup.datasetOwner(req.Dataset)
	if owner == nil {
		return status.Errorf(codes.NotFound, "no plugin publishes dataset %q", req.Dataset)
	}
	if !h.sup.calls.Narrow(req) {
		return nil
	}
	rpc, _, err := owner.running()
	if err != nil {
		return status.Error(codes.Unavailable, err.Error())
	}
	return protocol.RelayDataset(rpc, req, out)
}

func (s *Supervisor) datasetOwner(name string) *Instance {
	for _, inst := range s.instances() {
		desc := inst.Description()
		if desc == nil {
			continue
		}
		for _, d := range desc.Datasets {
			if d.Name == name {
				return inst
			}
		}
	}
	return nil
}

func grpcError(err error) error {
	if errors.Is(err, ErrInvalid) {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}
