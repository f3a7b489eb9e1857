package checks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/partner/catalogue"
	"github.com/stewardhq/steward/sdk"
)

// Runner is the partner sync job: it assesses each active tenant of the
// run against the catalogue and stores the day's assessment.
type Runner struct {
	Catalogue *catalogue.Catalogue
	Store     *Store
	// Host lists the tenants and records freshness.
	Host *sdk.Host
	// Datasets reads the other plugins' datasets; Host does.
	Datasets Datasets
	// Evidence gives a tenant's evidence statuses; nil without evidence.
	Evidence EvidenceStatus
	// Now is the run's clock; nil is time.Now.
	Now func() time.Time
}

// Run assesses every active tenant the run covers and returns the number
// of requirement results stored. The datasets are read once for all the
// tenants; an unavailable one makes its checks unknown, not the run fail.
// A tenant that fails to store keeps its earlier assessment and is not
// marked fresh; the others are stored, and the run then fails naming it.
func (r *Runner) Run(ctx context.Context, run *sdk.JobRun) (int64, error) {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	at := now().UTC()
	tenants, err := r.Host.Tenants(ctx, run.TenantIDs...)
	if err != nil {
		return 0, fmt.Errorf("tenant directory: %w", err)
	}
	var active []sdk.Tenant
	var ids []string
	for _, t := range tenants {
		if t.IsActive {
			active = append(active, t)
			ids = append(ids, t.ID)
		}
	}
	progress := pluginenv.Progress{Run: run, Total: int64(len(active))}
	figures, err := ReadFigures(ctx, r.Datasets, r.Catalogue, ids)
	if err != nil {
		return 0, err
	}
	// Unlike the cloud syncs (pluginenv.SyncTenants), which fail a tenant
	// Steward cannot read, every active tenant is assessed, whether or not
	// its subscriptions are visible: the
	// requirements are about the tenant, and a tenant without data gets
	// unknown checks, which are gaps.
	var failures []error
	for _, t := range active {
		a, err := r.assess(ctx, t.ID, figures)
		if err == nil {
			err = r.store(ctx, t.ID, a, at)
		}
		if err == nil {
			progress.Records += int64(len(a.Results))
			err = r.Host.MarkFresh(ctx, t.ID, Domain, at)
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("tenant %s (%s): %w", t.Name, t.ID, err))
		}
		progress.Step(fmt.Sprintf("tenant %s: maturity %.2f, %d gaps", t.Name, a.Maturity, a.Gaps))
	}
	return progress.Records, errors.Join(failures...)
}

func (r *Runner) assess(ctx context.Context, tenantID string, f *Figures) (Assessment, error) {
	var evidence map[string]string
	if r.Evidence != nil {
		var err error
		if evidence, err = r.Evidence(ctx, tenantID); err != nil {
			return Assessment{}, fmt.Errorf("evidence: %w", err)
		}
	}
	return Assess(r.Catalogue, f.Reader(tenantID), evidence), nil
}

func (r *Runner) store(ctx context.Context, tenantID string, a Assessment, at time.Time) error {
	day := at.Format(time.DateOnly)
	p := r.Catalogue.Programme
	snap := Snapshot{TenantID: tenantID, Day: day, Maturity: a.Maturity, TargetMaturity: p.TargetMaturity,
		Requirements: len(a.Results), Met: a.Met, NotMet: a.NotMet, Unknown: a.Unknown, AwaitingEvidence: a.AwaitingEvidence,
		Gaps: a.Gaps, CriticalGaps: a.CriticalGaps, DaysLeft: DaysLeft(p.Deadline, at), CheckedAt: at}
	if err := r.Store.Replace(ctx, snap, rowsOf(tenantID, day, a)); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}
