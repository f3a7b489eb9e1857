package plugintest

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/protocol"
)

// AuditEntry is an audit entry the plugin appended through the Host service.
type AuditEntry struct {
	// Principal is the caller the plugin acted for; it is anonymous for
	// entries a job appends.
	Principal    sdk.Principal
	Action       string
	Status       string
	TenantID     string
	ResourceType string
	ResourceID   string
	RequestID    string
	Details      map[string]any
}

// FreshMark is a freshness mark the plugin set through the Host service.
type FreshMark struct {
	TenantID string
	Domain   string
	SyncedAt time.Time
	// Failure is set when the plugin reported that the sync failed, and why.
	Failure string
}

// datasetBatch is how many records go in one chunk of a dataset stream, as
// the SDK batches them.
const datasetBatch = 256

// hostService is the in-memory Host service the harness serves the plugin.
type hostService struct {
	pluginv1.UnimplementedHostServer
	tenants  []sdk.Tenant
	datasets map[string][]json.RawMessage
	// plugin and published let the service relay the plugin's own datasets,
	// which the host finds by asking every plugin's description.
	plugin    pluginv1.PluginClient
	published map[string]bool

	// calls narrow the dataset reads made for a request in flight, as the
	// host's do.
	calls protocol.Calls

	// eventTypes are the event types the plugin declares.
	eventTypes []*pluginv1.EventType

	mu     sync.Mutex
	audits []AuditEntry
	fresh  []FreshMark
	events []sdk.Event
	// raised are the kinds and dedupe keys of events, kept once as the
	// host keeps them.
	raised map[[2]string]bool
}

func newHostService(opts Options, plugin pluginv1.PluginClient) *hostService {
	tenants := slices.Clone(opts.Tenants)
	// The host lists tenants ordered by name, then id.
	slices.SortStableFunc(tenants, func(a, b sdk.Tenant) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return &hostService{tenants: tenants, datasets: opts.Datasets, plugin: plugin, published: map[string]bool{}, raised: map[[2]string]bool{}}
}

// publish notes the datasets and event types the plugin describes. It runs
// before the service is served.
func (h *hostService) publish(desc *pluginv1.DescribeResponse) {
	for _, d := range desc.Datasets {
		h.published[d.Name] = true
	}
	h.eventTypes = desc.EventTypes
}

func (h *hostService) ListTenants(_ context.Context, req *pluginv1.ListTenantsRequest) (*pluginv1.ListTenantsResponse, error) {
	out := &pluginv1.ListTenantsResponse{}
	for _, t := range h.tenants {
		if len(req.Ids) > 0 && !slices.Contains(req.Ids, t.ID) {
			continue
		}
		if !t.IsActive && !req.IncludeInactive {
			continue
		}
		out.Tenants = append(out.Tenants, &pluginv1.Tenant{
			Id: t.ID, Name: t.Name, Description: t.Description, DirectoryTenantId: t.DirectoryTenantID,
			SubscriptionId: t.SubscriptionID, UseDelegation: t.UseDelegation, BillingAccountId: t.BillingAccountID, IsActive: t.IsActive,
		})
	}
	return out, nil
}

func (h *hostService) AppendAudit(_ context.Context, req *pluginv1.AppendAuditRequest) (*pluginv1.AppendAuditResponse, error) {
	if err := protocol.CheckAuditAction(req.Action); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "audit: invalid action: %v", err)
	}
	if err := protocol.CheckAuditStatus(req.Status); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "audit: invalid status: %v", err)
	}
	details, err := protocol.AuditDetails(req.Details)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "audit: %v", err)
	}
	e := AuditEntry{
		Principal: principalFromProto(req.Principal), Action: req.Action, Status: req.Status, TenantID: req.TenantId,
		ResourceType: req.ResourceType, ResourceID: req.ResourceId, RequestID: req.RequestId, Details: details,
	}
	h.mu.Lock()
	h.audits = append(h.audits, e)
	h.mu.Unlock()
	return &pluginv1.AppendAuditResponse{}, nil
}

func (h *hostService) MarkFresh(_ context.Context, req *pluginv1.MarkFreshRequest) (*pluginv1.MarkFreshResponse, error) {
	if err := protocol.CheckMarkFresh(req); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	m := FreshMark{TenantID: req.TenantId, Domain: req.Domain, SyncedAt: time.UnixMilli(req.SyncedAtUnixMs).UTC(), Failure: req.Failure}
	h.mu.Lock()
	h.fresh = append(h.fresh, m)
	h.mu.Unlock()
	return &pluginv1.MarkFreshResponse{}, nil
}

// RaiseEvent checks and records an event as the host does: once per kind
// and dedupe key.
func (h *hostService) RaiseEvent(_ context.Context, req *pluginv1.RaiseEventRequest) (*pluginv1.RaiseEventResponse, error) {
	if err := protocol.CheckRaiseEvent(req, h.eventTypes); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	details, _ := protocol.EventDetails(req.Details)
	e := sdk.Event{Kind: req.Kind, Severity: req.Severity, TenantID: req.TenantId, Title: req.Title, Message: req.Message, Link: req.Link,
		Details: details, Recipients: req.Recipients, DedupeKey: req.DedupeKey}
	if req.OccurredAtUnixMs != 0 {
		e.OccurredAt = time.UnixMilli(req.OccurredAtUnixMs).UTC()
	}
	key := [2]string{req.Kind, req.DedupeKey}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.raised[key] {
		return &pluginv1.RaiseEventResponse{EventId: req.Kind + "/" + req.DedupeKey, Duplicate: true}, nil
	}
	h.raised[key] = true
	h.events = append(h.events, e)
	return &pluginv1.RaiseEventResponse{EventId: req.Kind + "/" + req.DedupeKey}, nil
}

func (h *hostService) ReadDataset(req *pluginv1.ReadDatasetRequest, out pluginv1.Host_ReadDatasetServer) error {
	records, ok := h.datasets[req.Dataset]
	if !ok && !h.published[req.Dataset] {
		return status.Errorf(codes.NotFound, "no plugin publishes dataset %q", req.Dataset)
	}
	if !h.calls.Narrow(req) {
		return nil
	}
	if !ok {
		return h.relay(req, out)
	}
	chunk := &pluginv1.DatasetChunk{}
	for i, r := range records {
		if len(req.TenantIds) > 0 {
			var rec struct {
				TenantID string `json:"tenant_id"`
			}
			if err := json.Unmarshal(r, &rec); err != nil {
				return status.Errorf(codes.Internal, "dataset %s: record %d is not a JSON object: %v", req.Dataset, i, err)
			}
			if !slices.Contains(req.TenantIds, rec.TenantID) {
				continue
			}
		}
		chunk.Records = append(chunk.Records, r)
		if len(chunk.Records) == datasetBatch {
			if err := out.Send(chunk); err != nil {
				return err
			}
			chunk = &pluginv1.DatasetChunk{}
		}
	}
	if len(chunk.Records) > 0 {
		return out.Send(chunk)
	}
	return nil
}

func (h *hostService) relay(req *pluginv1.ReadDatasetRequest, out pluginv1.Host_ReadDatasetServer) error {
	return protocol.RelayDataset(h.plugin, req, out)
}

func (h *hostService) auditEntries() []AuditEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.audits)
}

func (h *hostService) raisedEvents() []sdk.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

func (h *hostService) freshMarks() []FreshMark {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.fresh)
}

// principalProto and principalFromProto convert between the principal a
// test names and its wire form, as the host does on one side and the SDK on
// the other.
func principalProto(p sdk.Principal) *pluginv1.Principal {
	return &pluginv1.Principal{Id: p.ID, Email: p.Email, Name: p.Name, Roles: p.Roles, IsAdmin: p.IsAdmin, Kind: p.Kind, TenantIds: p.TenantIDs}
}

func principalFromProto(p *pluginv1.Principal) sdk.Principal {
	if p == nil {
		return sdk.Principal{}
	}
	return sdk.Principal{ID: p.Id, Email: p.Email, Name: p.Name, Roles: p.Roles, IsAdmin: p.IsAdmin, Kind: p.Kind, TenantIDs: p.TenantIds}
}
