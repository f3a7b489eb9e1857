package defender

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/sdk"
)

// StaleAfter is how old a tenant's last complete defender sync may be
// before the host counts it stale: a four-hourly schedule and an hour of
// slack, as Defender refreshes assessments a few times a day.
const StaleAfter = 5 * time.Hour

// Syncer runs the defender job.
type Syncer struct {
	// Cloud resolves each tenant's clients and subscriptions;
	// *cloud.Clients is one.
	Cloud pluginenv.Resolver
	Store *Store
	Host  *sdk.Host
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Job is the defender sync as the plugin's per-tenant job.
func (s *Syncer) Job() sdk.Job {
	return sdk.Job{Name: Domain, JobType: Domain, DataDomain: Domain, Schedule: "@every 4h", StaleAfter: StaleAfter, PerTenant: true, Run: s.Run}
}

// Run syncs every active tenant, or those of run.TenantIDs: each
// subscription's assessments, secure score and controls replace those
// stored for it. A failing subscription changes nothing of what is stored
// for it and does not stop the others; its tenant is then not marked
// fresh, and the run fails naming each failure (a subscription where
// Steward lacks the Security Reader role names the role).
func (s *Syncer) Run(ctx context.Context, run *sdk.JobRun) (int64, error) {
	work, err := pluginenv.Plan(ctx, s.Host, s.Cloud, run.TenantIDs)
	if err != nil {
		return 0, err
	}
	p := &pluginenv.Progress{Run: run}
	for _, tw := range work {
		p.Total += int64(len(tw.Subscriptions))
	}
	err = pluginenv.SyncTenants(ctx, s.Host, Domain, work, func(tw pluginenv.TenantWork) error {
		var failures []error
		for _, sub := range tw.Subscriptions {
			if err := s.syncSubscription(ctx, tw, sub, p); err != nil {
				failures = append(failures, fmt.Errorf("subscription %s: %w", sub, err))
			}
		}
		if len(failures) > 0 {
			return errors.Join(failures...)
		}
		if err := s.Host.MarkFresh(ctx, tw.Tenant.ID, Domain, s.now().UTC()); err != nil {
			return fmt.Errorf("mark fresh: %w", err)
		}
		return nil
	})
	return p.Records, err
}

func (s *Syncer) syncSubscription(ctx context.Context, tw pluginenv.TenantWork, sub string, p *pluginenv.Progress) error {
	label := fmt.Sprintf("tenant %s subscription %s", tw.Tenant.Name, sub)
	snap := Snapshot{TenantID: tw.Tenant.ID, SubscriptionID: sub, SyncedAt: s.now()}
	unhealthy := 0
	err := tw.Cloud.SecurityAssessments(ctx, sub, func(a cloud.SecurityAssessment) error {
		if a.Status == StatusUnhealthy {
			unhealthy++
		}
		snap.Assessments = append(snap.Assessments, Assessment{AssessmentID: a.ID, AssessmentName: a.Name, ResourceID: a.ResourceID,
			DisplayName: a.DisplayName, Status: a.Status, Severity: a.Severity, PolicyDefinitionID: a.PolicyDefinitionID,
			Remediation: a.RemediationDescription, Category: strings.Join(a.Categories, ", ")})
		return nil
	})
	if err != nil {
		p.Step(label + ": failed")
		return err
	}
	score, controls, err := tw.Cloud.SecureScore(ctx, sub)
	if err != nil {
		p.Step(label + ": failed")
		return err
	}
	snap.Score = Score{Current: score.Current, Max: int64(score.Max), Percentage: score.Percentage}
	for _, c := range controls {
		snap.Controls = append(snap.Controls, Control{Name: c.Name, DisplayName: c.DisplayName, Current: c.Current, Max: int64(c.Max),
			HealthyResources: int64(c.HealthyResources), UnhealthyResources: int64(c.UnhealthyResources),
			NotApplicableResources: int64(c.NotApplicableResources)})
	}
	if err := s.Store.Replace(ctx, snap); err != nil {
		p.Step(label + ": failed")
		return err
	}
	p.Records += int64(len(snap.Assessments))
	p.Step(fmt.Sprintf("%s: %d assessments (%d unhealthy), secure score %.2f of %d", label, len(snap.Assessments), unhealthy, score.Current, score.Max))
	return nil
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
