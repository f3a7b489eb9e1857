// Package pluginenv opens what a domain plugin built on core needs from the
// environment the host configures it with: its config block, the cloud
// clients and its database.
package pluginenv

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/sdk"
)

// Open decodes the plugin's config block into config (a pointer; an empty
// block leaves it as it is, so defaults set before the call stand), builds
// the cloud clients from the host's cloud settings and opens the database.
func Open(ctx context.Context, env *sdk.Env, config any) (*cloud.Clients, *bun.DB, error) {
	if len(env.Config) > 0 {
		if err := json.Unmarshal(env.Config, config); err != nil {
			return nil, nil, fmt.Errorf("config: %w", err)
		}
	}
	var cc cloud.Config
	if err := json.Unmarshal(env.Cloud, &cc); err != nil {
		return nil, nil, fmt.Errorf("cloud settings: %w", err)
	}
	clients, err := cloud.New(cc)
	if err != nil {
		return nil, nil, err
	}
	db, err := store.Open(ctx, env.DatabaseURL, store.Options{})
	if err != nil {
		return nil, nil, err
	}
	return clients, db, nil
}
