package pluginenv_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/cloud"
	"github.com/stewardhq/steward/core/pluginenv"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// directory is the tenant directory the tests' host serves: a and b with
// subscriptions, c with none visible, d inactive.
var directory = []sdk.Tenant{
	{ID: "a", Name: "Alpha", DirectoryTenantID: "dir-a", IsActive: true},
	{ID: "b", Name: "Beta", DirectoryTenantID: "dir-b", IsActive: true},
	{ID: "c", Name: "Gamma", DirectoryTenantID: "dir-c", IsActive: true},
	{ID: "d", Name: "Delta", DirectoryTenantID: "dir-d"},
}

// listing is the cloud's subscriptions of the directory.
func listing(_ context.Context, fn func(cloud.Subscription) error) error {
	for _, s := range []cloud.Subscription{
		{ID: "s1", TenantID: "dir-b", State: "Enabled"},
		{ID: "s2", TenantID: "dir-a", State: "Enabled"},
		{ID: "s3", TenantID: "dir-d", State: "Enabled"},
		{ID: "s4", TenantID: "dir-a", State: "Enabled"},
	} {
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

// serve starts a plugin with the given jobs against a host serving the
// directory and returns it with the Host service it was configured with.
func serve(t *testing.T, jobs ...sdk.Job) (*plugintest.Harness, *sdk.Host) {
	t.Helper()
	var host *sdk.Host
	h := plugintest.New(t, sdk.Definition{Name: "demo"}, func(_ context.Context, _ struct{}, env *sdk.Env) (*sdk.Plugin, error) {
		host = env.Host
		return &sdk.Plugin{Jobs: jobs}, nil
	}, plugintest.Options{Tenants: directory})
	return h, host
}

// planned renders a plan as tenant:subscriptions pairs.
func planned(work []pluginenv.TenantWork) string {
	var parts []string
	for _, tw := range work {
		parts = append(parts, tw.Tenant.ID+":"+strings.Join(tw.Subscriptions, ","))
	}
	return strings.Join(parts, " ")
}

// TestPlan: the plan holds the active tenants asked for, in the host's
// order, each with the subscriptions of its directory (none for a tenant
// whose directory reports none); a failed listing fails it.
func TestPlan(t *testing.T) {
	ctx := context.Background()
	_, host := serve(t)
	for ids, want := range map[string]string{"": "a:s2,s4 b:s1 c:", "c,a": "a:s2,s4 c:", "d": "", "b,d": "b:s1"} {
		var tenantIDs []string
		if ids != "" {
			tenantIDs = strings.Split(ids, ",")
		}
		work, err := pluginenv.Plan(ctx, host, listing, tenantIDs)
		if err != nil {
			t.Fatal(err)
		}
		if got := planned(work); got != want {
			t.Errorf("plan of %q: %q, want %q", ids, got, want)
		}
	}
	failing := func(context.Context, func(cloud.Subscription) error) error { return errors.New("throttled") }
	if _, err := pluginenv.Plan(ctx, host, failing, nil); err == nil || !strings.Contains(err.Error(), "list subscriptions: throttled") {
		t.Errorf("failed listing: %v", err)
	}
}

// TestSyncTenants: each tenant with subscriptions is synced in order, one
// without is skipped, a failing tenant does not stop the next and the run
// fails naming it; Progress reports each step against the total and
// counts the records.
func TestSyncTenants(t *testing.T) {
	var (
		h      *plugintest.Harness
		host   *sdk.Host
		synced []string
		deny   = "s2"
	)
	h, host = serve(t, sdk.Job{Name: "sync", JobType: "demo", Run: func(ctx context.Context, run *sdk.JobRun) (int64, error) {
		work, err := pluginenv.Plan(ctx, host, listing, run.TenantIDs)
		if err != nil {
			return 0, err
		}
		p := &pluginenv.Progress{Run: run}
		for _, tw := range work {
			p.Total += int64(len(tw.Subscriptions))
		}
		err = pluginenv.SyncTenants(run, work, func(tw pluginenv.TenantWork) error {
			synced = append(synced, tw.Tenant.ID)
			for _, sub := range tw.Subscriptions {
				if sub == deny {
					p.Step("subscription " + sub + ": failed")
					return fmt.Errorf("subscription %s: denied", sub)
				}
				p.Records += 10
				p.Report("subscription " + sub + ": half way")
				p.Step("subscription " + sub)
			}
			return nil
		})
		return p.Records, err
	}})

	_, progress, err := h.RunJob(context.Background(), "sync")
	if err == nil || !strings.Contains(err.Error(), "tenant Alpha (a): subscription s2: denied") || strings.Contains(err.Error(), "Beta") {
		t.Errorf("run error %v, want tenant a's failure only", err)
	}
	if !slices.Equal(synced, []string{"a", "b"}) {
		t.Errorf("synced %v, want a then b", synced)
	}
	want := []plugintest.Progress{{Done: 1, Total: 3, Message: "subscription s2: failed"},
		{Done: 1, Total: 3, Message: "subscription s1: half way"}, {Done: 2, Total: 3, Message: "subscription s1"}}
	if !slices.Equal(progress, want) {
		t.Errorf("progress %+v, want %+v", progress, want)
	}

	deny, synced = "", nil
	n, progress, err := h.RunJob(context.Background(), "sync")
	if err != nil || n != 30 || !slices.Equal(synced, []string{"a", "b"}) {
		t.Errorf("second run: %d records, synced %v, error %v; want 30 records of a and b", n, synced, err)
	}
	if last := progress[len(progress)-1]; last.Done != 3 || last.Total != 3 {
		t.Errorf("last progress %+v, want 3 of 3", last)
	}
}
