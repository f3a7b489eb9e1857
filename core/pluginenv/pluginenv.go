// Package pluginenv opens what a domain plugin built on core needs from the
// environment the host configures it with: the cloud clients and its
// database. It also holds what the plugins' sync jobs
// share: which tenants a run syncs, with the clients and subscriptions
// that read each (Plan, Resolve), the loop over them (SyncTenants) and the
// progress a run reports (Progress); and the tenants' names the plugins'
// routes and pages show (TenantNames).
package pluginenv

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/sdk"
)

// Open builds the cloud clients from the host's cloud settings and returns
// them with the plugin's database, which the SDK opened. The plugin's
// config block reaches its factory already decoded (see sdk.Serve).
func Open(env *sdk.Env) (*cloud.Clients, *bun.DB, error) {
	if env.DB == nil {
		return nil, nil, errors.New("the host gave the plugin no database")
	}
	var cc cloud.Config
	if err := json.Unmarshal(env.Cloud, &cc); err != nil {
		return nil, nil, fmt.Errorf("cloud settings: %w", err)
	}
	clients, err := cloud.New(cc)
	if err != nil {
		return nil, nil, err
	}
	return clients, env.DB, nil
}
