// Command compliance is the compliance domain plugin: it syncs each
// tenant's latest policy states from Policy Insights into its own tables,
// keeps a daily snapshot of each tenant's figures, and serves the
// compliance summary, scores, non-compliant policies, trends and sync
// status, the compliance dataset, the policy states of named resources
// (the compliance_resource_states dataset), the regulatory frameworks with their
// coverage by the tenants' policies (and per tenant as the
// compliance_frameworks dataset) and the Rego and data that map them,
// the dashboard's compliance gauge and the compliance page. Tenants' own
// custom rules are evaluated after each tenant's sync, and their
// violations count in the summary, the non-compliant list, the gauge and
// the page beside the policies, as findings of source custom_rule.
// Defender for Cloud's assessments and secure score are synced by a job
// of their own (package defender) and served beside them; the framework
// coverage counts the assessments' policy definitions as a second source.
// Steward's own exemptions of findings (package exemptions) hide the
// findings they cover and count their resources as exempted in the
// coverage until they expire; a job records each lapse in the audit log.
package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/plugins/compliance/coverage"
	"github.com/stewardhq/steward/plugins/compliance/defender"
	"github.com/stewardhq/steward/plugins/compliance/exemptions"
	"github.com/stewardhq/steward/plugins/compliance/frameworks"
	"github.com/stewardhq/steward/plugins/compliance/mapping"
	"github.com/stewardhq/steward/plugins/compliance/regressions"
	"github.com/stewardhq/steward/plugins/compliance/rules"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/plugins/compliance/views"
	"github.com/stewardhq/steward/sdk"
)

var definition = sdk.Definition{Name: "compliance", Version: "0.1.0",
	Migrations: store.MergeMigrations(states.Migrations(), rules.Migrations(), defender.Migrations(), exemptions.Migrations())}

// config is the plugin's config {} block in plugins.hcl.
type config struct {
	FrameworksDir string `json:"frameworks_dir,omitempty" doc:"A folder of the deployment's own framework definitions (<id>.json), loaded beside the built-in ones; a relative path is from the host's working directory"`
}

func main() { sdk.Serve(definition, New) }

// New builds the plugin from its config.
func New(ctx context.Context, cfg config, env *sdk.Env) (*sdk.Plugin, error) {
	mapper, err := newMapper(ctx, cfg)
	if err != nil {
		return nil, err
	}
	clients, db, err := pluginenv.Open(env)
	if err != nil {
		return nil, err
	}
	st := &states.Store{DB: db}
	ruleStore := rules.NewStore(db)
	evaluator := &rules.Evaluator{Store: ruleStore, Sources: &rules.Sources{Datasets: env.Host, Scores: latestScore(st)}}
	// Each tenant's rules are evaluated once its states are stored, so
	// compliance_score rules read the snapshot just taken.
	evaluate := func(ctx context.Context, t sdk.Tenant) error {
		if _, err := evaluator.EvaluateTenant(ctx, t.ID); err != nil {
			return fmt.Errorf("custom rules: %w", err)
		}
		return nil
	}
	findings := []states.FindingSource{{Name: states.SourceCustomRule, Select: rules.FindingRows}}
	syncer := &states.Syncer{Cloud: clients, Store: st, Host: env.Host, AfterTenant: []states.Hook{evaluate}}
	reads := &states.Handlers{Store: st, Host: env.Host, Findings: findings}
	defenderStore := &defender.Store{DB: db}
	defenderSync := &defender.Syncer{Cloud: clients, Store: defenderStore, Host: env.Host}
	defenderReads := &defender.Handlers{Store: defenderStore, Host: env.Host}
	exemptionStore := &exemptions.Store{DB: db}
	exemptionRoutes := &exemptions.Handlers{Store: exemptionStore, Frameworks: mapper.Frameworks(), Host: env.Host, Logger: env.Logger}
	cov := &coverage.Service{Mapper: mapper, Store: st, Sources: []coverage.Source{defenderStore.CoverageSource()}, Exemptions: exemptionStore}
	// Each tenant's definitions and evidence are read for the framework
	// coverage at the end of its sync, so the first framework read after a
	// sync reads only what the syncs on other replicas changed. A failure
	// leaves that read to the request.
	syncer.AfterTenant = append(syncer.AfterTenant, func(ctx context.Context, t sdk.Tenant) error {
		if err := cov.Warm(ctx, t.ID); err != nil {
			env.Logger.Warn("warm the framework coverage", "tenant", t.ID, "error", err)
		}
		return nil
	})
	// Then its control results are compared with the last sync's: each
	// control that went from passed to failed raises an event.
	tracker := &regressions.Tracker{DB: db, Coverage: cov, Host: env.Host, Logger: env.Logger}
	syncer.AfterTenant = append(syncer.AfterTenant, tracker.Track)
	customRules := &rules.Handlers{Store: ruleStore, Evaluator: evaluator, Host: env.Host, Logger: env.Logger}
	editor := &views.RuleEditor{Rules: customRules}
	complianceViews := &views.Handlers{States: st, Findings: findings, Coverage: cov, Host: env.Host, Sections: append(defenderReads.Sections(), editor.Section())}
	fragments, pages, nav := complianceViews.Views()
	return &sdk.Plugin{
		Routes:    slices.Concat(reads.Routes(), cov.Routes(), defenderReads.Routes(), customRules.Routes(), editor.Routes(), exemptionRoutes.Routes()),
		Datasets:  []sdk.Dataset{reads.Dataset(), reads.ResourceStatesDataset(), cov.Dataset()},
		Events:    []sdk.EventType{regressions.EventType},
		Fragments: fragments,
		Pages:     pages,
		Nav:       nav,
		// Azure evaluates policies about daily and on changes; the host
		// counts compliance stale after five hours.
		Jobs: []sdk.Job{{Name: "compliance", JobType: states.Domain, DataDomain: states.Domain, Schedule: "@every 4h", StaleAfter: 5 * time.Hour, PerTenant: true, Run: syncer.Run},
			defenderSync.Job(), exemptionRoutes.ExpiryJob()},
	}, nil
}

// latestScore reads a tenant's latest compliance snapshot as the custom
// rules' compliance_score record. A tenant never synced, or whose
// snapshot has no compliant or non-compliant resource (so no percent),
// has none, and its compliance_score rules find nothing.
func latestScore(st *states.Store) rules.ScoreFunc {
	return func(ctx context.Context, tenantID string) (*rules.Score, error) {
		sn, err := st.LatestSnapshot(ctx, tenantID)
		if err != nil || sn == nil || sn.CompliancePercent() == nil {
			return nil, err
		}
		return &rules.Score{TenantID: sn.TenantID, Date: sn.Day, OverallCompliancePercent: *sn.CompliancePercent(),
			CompliantResources: sn.CompliantResources, NonCompliantResources: sn.NonCompliantResources,
			CompliantPolicies: sn.CompliantPolicies, NonCompliantPolicies: sn.NonCompliantPolicies, SyncedAt: sn.TakenAt.UTC()}, nil
	}
}

// newMapper loads the built-in frameworks and those of cfg.FrameworksDir
// and prepares the mapping over them. A deployment framework that does not
// load stops the plugin with the loader's error, which names the file and
// the field.
func newMapper(ctx context.Context, cfg config) (*mapping.Mapper, error) {
	set, err := frameworks.WithDir(cfg.FrameworksDir)
	if err != nil {
		return nil, fmt.Errorf("frameworks_dir: %w", err)
	}
	return mapping.New(ctx, set)
}
