package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

// Host is the plugin's view of the host: the tenant directory, the audit log,
// freshness marks, the datasets other plugins publish and the events
// people are notified of.
type Host struct {
	client pluginv1.HostClient
	// failures is whether the host records failed syncs (MarkFailed).
	failures bool
	// events is whether the host takes events (RaiseEvent).
	events bool
}

// Tenant is an entry of the host's tenant directory.
type Tenant struct {
	ID                string `json:"id"`
	Name              string `json:"name"`
	Description       string `json:"description"`
	DirectoryTenantID string `json:"directory_tenant_id"`
	SubscriptionID    string `json:"subscription_id"`
	UseDelegation     bool   `json:"use_delegation"`
	BillingAccountID  string `json:"billing_account_id"`
	IsActive          bool   `json:"is_active"`
}

// Tenants lists active tenants, all of them when ids is empty.
func (h *Host) Tenants(ctx context.Context, ids ...string) ([]Tenant, error) {
	resp, err := h.client.ListTenants(ctx, &pluginv1.ListTenantsRequest{Ids: ids})
	if err != nil {
		return nil, err
	}
	out := make([]Tenant, 0, len(resp.Tenants))
	for _, t := range resp.Tenants {
		out = append(out, Tenant{ID: t.Id, Name: t.Name, Description: t.Description, DirectoryTenantID: t.DirectoryTenantId,
			SubscriptionID: t.SubscriptionId, UseDelegation: t.UseDelegation, BillingAccountID: t.BillingAccountId, IsActive: t.IsActive})
	}
	return out, nil
}

// AuditEntry is a sensitive operation the plugin performed.
type AuditEntry struct {
	// Action is <category>.<name>.<outcome>, e.g. "budget.create.success".
	Action string
	// Status is success, failure or warning.
	Status       string
	TenantID     string
	ResourceType string
	ResourceID   string
	Details      map[string]any
}

// Audit appends an entry for the request's principal (ctx from the request;
// a job's context has none).
func (h *Host) Audit(ctx context.Context, e AuditEntry) error {
	var details []byte
	if e.Details != nil {
		var err error
		if details, err = json.Marshal(e.Details); err != nil {
			return err
		}
	}
	info := Info(ctx)
	var principal *pluginv1.Principal
	if !info.Principal.Anonymous() {
		principal = principalProto(info.Principal)
	}
	_, err := h.client.AppendAudit(ctx, &pluginv1.AppendAuditRequest{
		Principal: principal, Action: e.Action, Status: e.Status, TenantId: e.TenantID,
		ResourceType: e.ResourceType, ResourceId: e.ResourceID, RequestId: info.RequestID, Details: details,
	})
	return err
}

// MarkFresh records that a tenant's data domain was synced at a time.
func (h *Host) MarkFresh(ctx context.Context, tenantID, domain string, at time.Time) error {
	_, err := h.client.MarkFresh(ctx, &pluginv1.MarkFreshRequest{TenantId: tenantID, Domain: domain, SyncedAtUnixMs: at.UnixMilli()})
	return err
}

// MarkFailed records that a sync of a tenant's data domain, started at at,
// failed, and why: the host keeps the reason beside the domain's last
// success, which stays as it was, and shows it with the tenant's
// freshness until a later success. Say what an operator should do where
// the plugin knows it ("grant admin consent in the tenant's directory").
// The reason is cut to protocol.MaxFailure bytes. A host too old to record
// failures is not told (a run's error still reaches it).
func (h *Host) MarkFailed(ctx context.Context, tenantID, domain string, at time.Time, reason string) error {
	if !h.failures {
		return nil
	}
	reason = strings.ToValidUTF8(reason, "")
	if len(reason) > protocol.MaxFailure {
		reason = strings.ToValidUTF8(reason[:protocol.MaxFailure], "")
	}
	if reason == "" {
		reason = "failed"
	}
	_, err := h.client.MarkFresh(ctx, &pluginv1.MarkFreshRequest{TenantId: tenantID, Domain: domain, SyncedAtUnixMs: at.UnixMilli(), Failure: reason})
	return err
}

// Event is something that happened that people subscribed to its kind
// are told of.
type Event struct {
	// Kind is one of the plugin's Events.
	Kind string
	// Severity is info, warning, error or critical.
	Severity string
	// TenantID is the tenant the event concerns; empty for none.
	TenantID string
	Title    string
	Message  string
	// Link is the path in Steward that shows what happened, such as
	// "/cost/budgets?tenant_id=t1".
	Link    string
	Details map[string]any
	// Recipients are e-mail addresses the event names, such as a budget
	// threshold's contacts: the installation's contacts channel delivers
	// to each.
	Recipients []string
	// DedupeKey identifies what happened: the host keeps the first event of
	// a kind and key and drops the later ones, so a re-run sync that finds
	// the same thing raises it again harmlessly.
	DedupeKey string
	// OccurredAt is when it happened; zero for now.
	OccurredAt time.Time
}

// RaiseEvent hands the host an event to notify subscribers of. duplicate
// says the host already had one of the kind and dedupe key, and dropped
// this one. The host refuses an event whose kind the plugin did not
// declare, or whose fields are out of bounds (protocol.CheckRaiseEvent),
// with codes.InvalidArgument. A host too old to take events is not told:
// RaiseEvent returns false and nil. A sync should log a failure to raise
// and go on.
func (h *Host) RaiseEvent(ctx context.Context, e Event) (duplicate bool, err error) {
	if !h.events {
		return false, nil
	}
	var details []byte
	if e.Details != nil {
		if details, err = json.Marshal(e.Details); err != nil {
			return false, err
		}
	}
	var at int64
	if !e.OccurredAt.IsZero() {
		at = e.OccurredAt.UnixMilli()
	}
	resp, err := h.client.RaiseEvent(ctx, &pluginv1.RaiseEventRequest{
		Kind: e.Kind, Severity: e.Severity, TenantId: e.TenantID, Title: e.Title, Message: e.Message, Link: e.Link,
		Details: details, Recipients: e.Recipients, DedupeKey: e.DedupeKey, OccurredAtUnixMs: at,
	})
	if err != nil {
		return false, fmt.Errorf("raise event %s: %w", e.Kind, err)
	}
	return resp.Duplicate, nil
}

// ErrDatasetUnavailable is what ReadDataset's error wraps when no plugin
// publishes the dataset (none is installed that does) or the one that does
// is not running: a plugin that can do without the data tells this apart
// from a failing read with errors.Is.
var ErrDatasetUnavailable = errors.New("dataset unavailable")

// ReadDataset streams a dataset another plugin publishes, calling fn for
// each record of the given tenants (every tenant when none are given).
//
// Read from a handler's context, it reads on the request's behalf: the
// host keeps to the tenants the request's caller may see, so a tenant
// outside them yields no record, and a read after the response is done
// yields none. A job's context reads what the job asks for.
func (h *Host) ReadDataset(ctx context.Context, name string, tenantIDs []string, params map[string]string, fn func(json.RawMessage) error) error {
	req := &pluginv1.ReadDatasetRequest{Dataset: name, TenantIds: tenantIDs, Params: params, RequestId: Info(ctx).RequestID}
	stream, err := h.client.ReadDataset(ctx, req)
	if err != nil {
		return datasetError(name, err)
	}
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return datasetError(name, err)
		}
		for _, r := range chunk.Records {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
}

// datasetError wraps ErrDatasetUnavailable around the host's answer that
// no plugin publishes the dataset or its publisher is down.
func datasetError(name string, err error) error {
	switch status.Code(err) {
	case codes.NotFound, codes.Unavailable:
		return fmt.Errorf("dataset %s: %w: %s", name, ErrDatasetUnavailable, status.Convert(err).Message())
	}
	return err
}
