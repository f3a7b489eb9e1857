// Command identity is the identity-governance plugin: it syncs each
// tenant's directory from Microsoft Graph — users and guests, MFA
// registration, directory role holders, managed devices and access reviews
// — and keeps a daily snapshot of the MFA figures.
package main

import (
	"context"
	"encoding/json"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/identity/directory"
	"github.com/stewardhq/steward/sdk"
)

// config is the plugin's config {} block in plugins.hcl; it has no
// settings yet.
type config struct{}

const configSchema = `{"type": "object", "properties": {}, "additionalProperties": false}`

func main() { sdk.Serve(New()) }

// New builds the plugin.
func New() *sdk.Plugin {
	syncer := &directory.Syncer{}
	handlers := &directory.Handlers{}
	fragments, pages, nav := handlers.Views()
	return &sdk.Plugin{
		Name:         "identity",
		Version:      "0.1.0",
		Routes:       handlers.Routes(),
		Datasets:     []sdk.Dataset{handlers.Dataset()},
		Fragments:    fragments,
		Pages:        pages,
		Nav:          nav,
		Migrations:   directory.Migrations(),
		ConfigSchema: json.RawMessage(configSchema),
		Jobs: []sdk.Job{{Name: "identity", JobType: directory.Domain, DataDomain: directory.Domain, Schedule: "@every 6h",
			Run: func(ctx context.Context, run *sdk.JobRun) (int64, error) { return syncer.Run(ctx, run) }}},
		Configure: func(ctx context.Context, env *sdk.Env) error {
			var cfg config
			clients, db, err := pluginenv.Open(ctx, env, &cfg)
			if err != nil {
				return err
			}
			st := &directory.Store{DB: db}
			*syncer = directory.Syncer{Store: st, Host: env.Host,
				Graph: func(dir string) directory.Graph { return clients.Graph(dir) }}
			*handlers = directory.Handlers{Store: st, Host: env.Host}
			return nil
		},
	}
}
