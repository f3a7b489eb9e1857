package audit

import (
	"context"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/host/api"
	"github.com/stewardhq/steward/sdk"
)

type auditListInput struct {
	ActorID      string       `query:"actor_id"`
	ActorEmail   string       `query:"actor_email"`
	Action       string       `query:"action" doc:"Exact match"`
	ActionPrefix string       `query:"action_prefix" doc:"Prefix match, e.g. auth."`
	TenantID     sdk.TenantID `query:"tenant_id"`
	ResourceType string       `query:"resource_type"`
	Status       string       `query:"status" enum:"success,failure,warning"`
	Since        time.Time    `query:"since" format:"date-time"`
	Until        time.Time    `query:"until" format:"date-time"`
	Limit        int          `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset       int          `query:"offset" minimum:"0" default:"0"`
}

type auditPage struct {
	Items  []Entry `json:"items"`
	Total  int     `json:"total"`
	Limit  int     `json:"limit"`
	Offset int     `json:"offset"`
}

type auditSummaryInput struct {
	TenantID sdk.TenantID `query:"tenant_id"`
	Since    time.Time    `query:"since" format:"date-time"`
}

type auditSummary struct {
	TenantID   *string        `json:"tenant_id"`
	Since      *time.Time     `json:"since"`
	Total      int            `json:"total"`
	ByCategory map[string]int `json:"by_category"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Routes serve the audit log to its readers.
type Routes struct {
	Store *Store
}

// Register adds the audit log's operations to a.
func (r Routes) Register(a huma.API) {
	api.Get(a, "/api/v1/audit-logs", sdk.Op{ID: "audit-logs", Tags: []string{"audit"},
		Summary:     "Audit log entries, newest first",
		Description: "Admins see every entry; a standard user sees only entries whose actor_id is its own."},
		func(ctx context.Context, in *auditListInput) (*auditPage, error) {
			p := api.PrincipalFrom(ctx)
			f := Filter{ActorID: in.ActorID, ActorEmail: in.ActorEmail, Action: in.Action, ActionPrefix: in.ActionPrefix,
				TenantID: string(in.TenantID), ResourceType: in.ResourceType, Status: in.Status, Since: timePtr(in.Since), Until: timePtr(in.Until),
				Limit: in.Limit, Offset: in.Offset}
			if !p.IsAdmin {
				if in.ActorID != "" && in.ActorID != p.ID {
					return nil, huma.Error403Forbidden("standard users may read only their own audit entries")
				}
				f.ActorID = p.ID
			}
			items, total, err := r.Store.List(ctx, f)
			if err != nil {
				return nil, err
			}
			if items == nil {
				items = []Entry{}
			}
			return &auditPage{Items: items, Total: total, Limit: in.Limit, Offset: in.Offset}, nil
		})
	api.Get(a, "/api/v1/audit-logs/summary", sdk.Op{ID: "audit-logs-summary", Tags: []string{"audit"},
		Summary: "Audit entry counts by action category"},
		func(ctx context.Context, in *auditSummaryInput) (*auditSummary, error) {
			p := api.PrincipalFrom(ctx)
			f := SummaryFilter{Since: timePtr(in.Since)}
			if in.TenantID != "" {
				f.TenantIDs = []string{string(in.TenantID)}
			}
			if !p.IsAdmin {
				f.ActorID = p.ID
			}
			counts, err := r.Store.Summary(ctx, f)
			if err != nil {
				return nil, err
			}
			out := auditSummary{Since: f.Since, ByCategory: counts}
			if in.TenantID != "" {
				id := string(in.TenantID)
				out.TenantID = &id
			}
			for _, n := range counts {
				out.Total += n
			}
			return &out, nil
		})
}
