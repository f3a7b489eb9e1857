// Command compliance is the compliance domain plugin: it syncs each
// tenant's latest policy states from Policy Insights into its own tables,
// keeps a daily snapshot of each tenant's figures, and serves the
// compliance summary, scores, non-compliant policies, trends and sync
// status, the compliance dataset, the dashboard's compliance gauge and
// the compliance page.
package main

import (
	"context"
	"encoding/json"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/compliance/states"
	"github.com/stewardhq/steward/plugins/compliance/views"
	"github.com/stewardhq/steward/sdk"
)

// config is the plugin's config {} block in plugins.hcl; it has no
// settings yet.
type config struct{}

const configSchema = `{"type": "object", "properties": {}, "additionalProperties": false}`

func main() { sdk.Serve(New()) }

// New builds the plugin.
func New() *sdk.Plugin {
	syncer := &states.Syncer{}
	reads := &states.Handlers{}
	complianceViews := &views.Handlers{}
	fragments, pages, nav := complianceViews.Views()
	return &sdk.Plugin{
		Name:         "compliance",
		Version:      "0.1.0",
		Routes:       reads.Routes(),
		Datasets:     []sdk.Dataset{reads.Dataset()},
		Fragments:    fragments,
		Pages:        pages,
		Nav:          nav,
		Migrations:   states.Migrations(),
		ConfigSchema: json.RawMessage(configSchema),
		// Azure evaluates policies about daily and on changes; the host
		// counts compliance stale after five hours.
		Jobs: []sdk.Job{{Name: "compliance", JobType: states.Domain, DataDomain: states.Domain, Schedule: "@every 4h",
			Run: func(ctx context.Context, run *sdk.JobRun) (int64, error) { return syncer.Run(ctx, run) }}},
		Configure: func(ctx context.Context, env *sdk.Env) error {
			var cfg config
			clients, db, err := pluginenv.Open(ctx, env, &cfg)
			if err != nil {
				return err
			}
			st := &states.Store{DB: db}
			*syncer = states.Syncer{Cloud: clients, Store: st, Host: env.Host}
			*reads = states.Handlers{Store: st, Host: env.Host}
			*complianceViews = views.Handlers{States: st, Findings: reads.Findings, Host: env.Host}
			return nil
		},
	}
}
