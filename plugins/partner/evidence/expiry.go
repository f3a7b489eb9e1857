package evidence

import (
	"context"
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
// expires_at as expired, each change audited. It keeps no data domain
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
	return int64(len(expired)), nil
}
