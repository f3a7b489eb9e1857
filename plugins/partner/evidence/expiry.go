package evidence

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/stewardhq/steward/sdk"
)

const (
	// ExpiryJobType names the expiry job, and its sync route
	// (POST /api/v1/sync/partner_evidence_expiry) for an admin.
	ExpiryJobType = "partner_evidence_expiry"
	// ExpiryActor is the updated_by of evidence the expiry marked.
	ExpiryActor = "job:" + ExpiryJobType
)

// ExpiryJob is the daily job that marks accepted evidence past its
// expires_at as expired, each change audited, and raises
// EventEvidenceExpiring for the evidence it expired and for the accepted
// evidence that expires within ExpiringWithin. It keeps no data domain
// fresh: it reads nothing from the cloud.
func (h *Handlers) ExpiryJob() sdk.Job {
	return sdk.Job{Name: ExpiryJobType, JobType: ExpiryJobType, Schedule: "@daily", Run: h.expire}
}

func (h *Handlers) expire(ctx context.Context, run *sdk.JobRun) (int64, error) {
	expired, err := h.Store.Expire(ctx, h.now(), ExpiryActor, run.TenantIDs)
	if err != nil {
		return 0, err
	}
	for i, e := range expired {
		details := map[string]any{"requirement_id": e.RequirementID, "from_status": StatusAccepted, "status": StatusExpired}
		if e.ExpiresAt != nil {
			details["expires_at"] = e.ExpiresAt.UTC().Format(time.RFC3339)
		}
		h.audit(ctx, "partner_evidence.expire.success", "success", e.TenantID, auditType, e.ID, details)
		run.Progress(int64(i+1), int64(len(expired)), "expired "+e.RequirementID)
	}
	now := h.now()
	for _, e := range expired {
		h.raiseExpiring(ctx, run, e, now)
	}
	soon, err := h.Store.Expiring(ctx, now, now.Add(ExpiringWithin), run.TenantIDs)
	if err != nil {
		return int64(len(expired)), fmt.Errorf("evidence expiring soon: %w", err)
	}
	for _, e := range soon {
		h.raiseExpiring(ctx, run, e, now)
	}
	return int64(len(expired)), nil
}

// EventEvidenceExpiring is the event of accepted evidence that expires
// soon or has expired.
const EventEvidenceExpiring = "partner.evidence_expiring"

// ExpiringWithin is how long before its expiry accepted evidence raises
// EventEvidenceExpiring.
const ExpiringWithin = 30 * 24 * time.Hour

// EventType declares EventEvidenceExpiring.
var EventType = sdk.EventType{Name: EventEvidenceExpiring,
	Description: "Accepted partner evidence expires within 30 days (a warning) or has expired (an error); raised by the daily expiry job, once for each of the two per expiry date."}

// raiseExpiring raises EventEvidenceExpiring for evidence that expires
// after now (a warning) or has expired (an error), once per evidence,
// expiry date and which of the two. A failure is logged, never returned.
func (h *Handlers) raiseExpiring(ctx context.Context, run *sdk.JobRun, e Evidence, now time.Time) {
	if h.Host == nil || e.ExpiresAt == nil {
		return
	}
	at := e.ExpiresAt.UTC()
	severity, stage, title := "warning", "expiring", fmt.Sprintf("Evidence for %s expires on %s", e.RequirementID, at.Format(time.DateOnly))
	message := fmt.Sprintf("The accepted evidence for requirement %s expires at %s; renew it before then to keep the requirement met.", e.RequirementID, at.Format(time.RFC3339))
	occurred := now
	if !at.After(now) {
		severity, stage, title = "error", "expired", fmt.Sprintf("Evidence for %s expired", e.RequirementID)
		message = fmt.Sprintf("The accepted evidence for requirement %s expired at %s and no longer counts; submit it again.", e.RequirementID, at.Format(time.RFC3339))
		occurred = at
	}
	_, err := h.Host.RaiseEvent(ctx, sdk.Event{
		Kind: EventEvidenceExpiring, Severity: severity, TenantID: e.TenantID, Title: title, Message: message,
		Link:       "/partner?tenant_id=" + url.QueryEscape(e.TenantID),
		Details:    map[string]any{"evidence_id": e.ID, "requirement_id": e.RequirementID, "expires_at": at.Format(time.RFC3339), "stage": stage},
		DedupeKey:  e.ID + "/" + at.Format(time.RFC3339) + "/" + stage,
		OccurredAt: occurred,
	})
	if err != nil && run.Logger != nil {
		run.Logger.Error("evidence expiry event not raised", "evidence_id", e.ID, "error", err)
	}
}
