// Command identity is the identity-governance plugin: it syncs each
// tenant's directory from Microsoft Graph — users and guests, MFA
// registration, directory role holders, managed devices, access reviews,
// Conditional Access policies, security defaults, Global Administrators,
// risky users and applications' credentials — and keeps a daily snapshot
// of the MFA figures, the Conditional Access posture, the Global
// Administrator count, the users at risk and the credentials ended or
// ending soon.
package main

import (
	"context"
	"time"

	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/plugins/identity/directory"
	"github.com/stewardhq/steward/sdk"
)

var definition = sdk.Definition{Name: "identity", Version: "0.1.0", Migrations: directory.Migrations()}

// config is the plugin's config {} block in plugins.hcl; it has no
// settings yet.
type config struct{}

func main() { sdk.Serve(definition, New) }

// New builds the plugin from its config.
func New(ctx context.Context, _ config, env *sdk.Env) (*sdk.Plugin, error) {
	clients, db, err := pluginenv.Open(env)
	if err != nil {
		return nil, err
	}
	st := directory.NewStore(db)
	syncer := &directory.Syncer{Store: st, Host: env.Host,
		Graph: func(dir string) directory.Graph { return clients.Graph(dir) }}
	handlers := &directory.Handlers{Store: st, Host: env.Host}
	fragments, pages, nav := handlers.Views()
	return &sdk.Plugin{
		Routes:    handlers.Routes(),
		Datasets:  []sdk.Dataset{handlers.Dataset()},
		Fragments: fragments,
		Pages:     pages,
		Nav:       nav,
		Jobs: []sdk.Job{{Name: "identity", JobType: directory.Domain, DataDomain: directory.Domain, Schedule: "@every 6h", StaleAfter: 25 * time.Hour,
			PerTenant: true, Run: syncer.Run}},
	}, nil
}
