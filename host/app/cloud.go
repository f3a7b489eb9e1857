package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/stack"
	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/config"
	"github.com/stewardhq/steward/host/tenancy"
)

// cloudConfig returns the client configuration plugins use — the simulated
// cloud, started here, or Azure from the environment — and the host's own
// clients built from it (onboarding checks delegations with them).
func (h *Host) cloudConfig(ctx context.Context, cfg config.Config, logger hclog.Logger) (cloud.Config, *cloud.Clients, error) {
	if cfg.Cloud != "sim" {
		az := cfg.Azure
		cc := cloud.Config{Provider: cloud.ProviderAzure, TenantID: az.TenantID, ClientID: az.ClientID, ClientSecret: az.ClientSecret,
			Credential: cloud.CredentialKind(az.Credential), CertificatePath: az.CertificatePath,
			CertificatePassword: az.CertificatePassword, TokenFilePath: az.TokenFile}
		// Building the clients checks the settings (and reads certificate
		// and token files) now, so a misconfigured host stops at start-up
		// with the reason instead of failing every sync.
		clients, err := cloud.New(cc)
		if err != nil {
			return cloud.Config{}, nil, fmt.Errorf("STEWARD_CLOUD=azure: %w (see STEWARD_AZURE_* in the README)", err)
		}
		return cc, clients, nil
	}
	w, err := stack.LoadWorld(cfg.SimWorld, time.Now())
	if err != nil {
		return cloud.Config{}, nil, err
	}
	st, err := stack.Start(ctx, w, cloudsim.Options{Logger: logger.Named("sim")})
	if err != nil {
		return cloud.Config{}, nil, fmt.Errorf("simulated cloud: %w", err)
	}
	h.sim = st
	if cfg.SimWorld == "" {
		st.FollowDemo(ctx, time.Minute)
	}
	st.Log(logger.Named("sim"))
	cc := st.CloudConfig()
	clients, err := cloud.New(cc)
	if err != nil {
		return cloud.Config{}, nil, fmt.Errorf("simulated cloud clients: %w", err)
	}
	return cc, clients, nil
}

// registerWorldTenants makes every tenant of the simulated world a Steward
// tenant, as onboarding would, so a development host has data at once.
// Tenants already registered are left as they are.
func registerWorldTenants(ctx context.Context, ten *tenancy.Store, w *world.World) (int, error) {
	existing, err := ten.Tenants(ctx, nil, true)
	if err != nil {
		return 0, err
	}
	known := map[string]bool{}
	for _, t := range existing {
		known[t.DirectoryTenantID] = true
	}
	added := 0
	// The directories of the tenants registered now, for their brands.
	registered := map[string]bool{}
	for _, wt := range w.Tenants {
		if known[wt.DirectoryTenantID] {
			continue
		}
		t := &tenancy.Tenant{Name: wt.Name, DirectoryTenantID: wt.DirectoryTenantID, UseDelegation: wt.Delegated,
			BillingAccountID: wt.BillingAccountID, AccessGroups: wt.AccessGroups, IsActive: true,
			Description: "Registered from the simulated cloud's world"}
		if len(wt.Subscriptions) > 0 {
			t.SubscriptionID = wt.Subscriptions[0].ID
		}
		if err := ten.CreateTenant(ctx, t); err != nil {
			return added, fmt.Errorf("register %s: %w", wt.Name, err)
		}
		registered[wt.DirectoryTenantID] = true
		added++
	}
	return added, registerWorldBrands(ctx, ten, w, registered)
}

// registerWorldBrands makes every brand the world's tenants name a
// Steward brand. A brand already registered (by name, whatever its case)
// is left as an admin made it but for the tenants registered now, which
// join it; a brand registered now gets every world tenant of its name
// that is in no brand yet.
func registerWorldBrands(ctx context.Context, ten *tenancy.Store, w *world.World, registered map[string]bool) error {
	brands, err := ten.Brands(ctx)
	if err != nil {
		return err
	}
	tenants, err := ten.Tenants(ctx, nil, true)
	if err != nil {
		return err
	}
	var names []string
	for _, wt := range w.Tenants {
		if wt.Brand != "" && !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, wt.Brand) }) {
			names = append(names, wt.Brand)
		}
	}
	for _, name := range names {
		i := slices.IndexFunc(brands, func(b tenancy.Brand) bool { return strings.EqualFold(b.Name, name) })
		var ids []string
		for _, wt := range w.Tenants {
			if !strings.EqualFold(wt.Brand, name) {
				continue
			}
			j := slices.IndexFunc(tenants, func(t tenancy.Tenant) bool { return strings.EqualFold(t.DirectoryTenantID, wt.DirectoryTenantID) })
			if j < 0 || tenants[j].BrandID != nil {
				continue
			}
			if registered[wt.DirectoryTenantID] || i < 0 {
				ids = append(ids, tenants[j].ID)
			}
		}
		if i < 0 {
			b := tenancy.Brand{Name: name, Description: "Registered from the simulated cloud's world"}
			if err := ten.CreateBrand(ctx, &b, ids); err != nil {
				return fmt.Errorf("register brand %s: %w", name, err)
			}
			continue
		}
		if len(ids) == 0 {
			continue
		}
		all := append(slices.Clone(brands[i].TenantIDs), ids...)
		if _, err := ten.UpdateBrand(ctx, brands[i].ID, tenancy.BrandPatch{TenantIDs: &all}); err != nil {
			return fmt.Errorf("register brand %s: %w", name, err)
		}
	}
	return nil
}
