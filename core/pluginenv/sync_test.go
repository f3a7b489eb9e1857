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

// directory is the tenant directory the tests' host serves: a and b (the
// one delegated) with subscriptions, c with none visible, d inactive.
var directory = []sdk.Tenant{
	{ID: "a", Name: "Alpha", DirectoryTenantID: "dir-a", IsActive: true},
	{ID: "b", Name: "Beta", DirectoryTenantID: "dir-b", SubscriptionID: "sub-b", UseDelegation: true, IsActive: true},
	{ID: "c", Name: "Gamma", DirectoryTenantID: "dir-c", IsActive: true},
	{ID: "d", Name: "Delta", DirectoryTenantID: "dir-d"},
}

// resolver is a cloud whose directories list these subscriptions; a
// tenant of another directory cannot be read. It records the tenants it
// was asked to resolve.
type resolver struct {
	subs  map[string][]string
	asked []cloud.Tenant
}

func (r *resolver) Access(_ context.Context, tenants []cloud.Tenant) []cloud.TenantAccess {
	r.asked = append(r.asked, tenants...)
	out := make([]cloud.TenantAccess, len(tenants))
	for i, t := range tenants {
		out[i].Tenant = t
		if subs, ok := r.subs[t.DirectoryTenantID]; ok {
			out[i].Subscriptions = subs
		} else {
			out[i].Err = t.Failed(errors.New("no subscription visible"))
		}
	}
	return out
}

func newResolver() *resolver {
	return &resolver{subs: map[string][]string{"dir-a": {"s2", "s4"}, "dir-b": {"s1"}, "dir-d": {"s3"}}}
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

// planned renders a plan as tenant:subscriptions pairs, or tenant!error.
func planned(work []pluginenv.TenantWork) string {
	var parts []string
	for _, tw := range work {
		if tw.Err != nil {
			parts = append(parts, tw.Tenant.ID+"!"+tw.Err.Error())
			continue
		}
		parts = append(parts, tw.Tenant.ID+":"+strings.Join(tw.Subscriptions, ","))
	}
	return strings.Join(parts, " ")
}

// TestPlan: the plan holds the active tenants asked for, in the host's
// order, each resolved as registered (its directory, registered
// subscription and use of delegation), or with the error naming it.
func TestPlan(t *testing.T) {
	ctx := context.Background()
	_, host := serve(t)
	cErr := "c!tenant Gamma (c): no subscription visible"
	for ids, want := range map[string]string{"": "a:s2,s4 b:s1 " + cErr, "c,a": "a:s2,s4 " + cErr, "d": "", "b,d": "b:s1"} {
		var tenantIDs []string
		if ids != "" {
			tenantIDs = strings.Split(ids, ",")
		}
		work, err := pluginenv.Plan(ctx, host, newResolver(), tenantIDs)
		if err != nil {
			t.Fatal(err)
		}
		if got := planned(work); got != want {
			t.Errorf("plan of %q: %q, want %q", ids, got, want)
		}
	}
	r := newResolver()
	if _, err := pluginenv.Plan(ctx, host, r, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if want := []cloud.Tenant{{ID: "b", Name: "Beta", DirectoryTenantID: "dir-b", SubscriptionID: "sub-b", Delegated: true}}; !slices.Equal(r.asked, want) {
		t.Errorf("resolved %+v, want %+v", r.asked, want)
	}
}

// TestSyncTenants: each tenant that can be read is synced in order; one
// that cannot fails the run naming it, as does a failing tenant, which
// does not stop the next; a refusal (403) says how to grant access.
// Progress reports each step against the total and counts the records.
func TestSyncTenants(t *testing.T) {
	var (
		h      *plugintest.Harness
		host   *sdk.Host
		synced []string
		deny   = "s2"
	)
	h, host = serve(t, sdk.Job{Name: "sync", JobType: "demo", Run: func(ctx context.Context, run *sdk.JobRun) (int64, error) {
		work, err := pluginenv.Plan(ctx, host, newResolver(), run.TenantIDs)
		if err != nil {
			return 0, err
		}
		p := &pluginenv.Progress{Run: run}
		for _, tw := range work {
			p.Total += int64(len(tw.Subscriptions))
		}
		err = pluginenv.SyncTenants(context.Background(), nil, "costs", work, func(tw pluginenv.TenantWork) error {
			synced = append(synced, tw.Tenant.ID)
			for _, sub := range tw.Subscriptions {
				if sub == "s1" && deny == "forbidden" {
					return fmt.Errorf("subscription %s: %w", sub, cloud.ErrForbidden)
				}
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
	if err == nil || !strings.Contains(err.Error(), "tenant Alpha (a): subscription s2: denied") || strings.Contains(err.Error(), "Beta") ||
		!strings.Contains(err.Error(), "tenant Gamma (c): no subscription visible") {
		t.Errorf("run error %v, want tenant a's failure and c's", err)
	}
	if !slices.Equal(synced, []string{"a", "b"}) {
		t.Errorf("synced %v, want a then b", synced)
	}
	want := []plugintest.Progress{{Done: 1, Total: 3, Message: "subscription s2: failed"},
		{Done: 1, Total: 3, Message: "subscription s1: half way"}, {Done: 2, Total: 3, Message: "subscription s1"}}
	if !slices.Equal(progress, want) {
		t.Errorf("progress %+v, want %+v", progress, want)
	}

	deny, synced = "forbidden", nil
	_, _, err = h.RunJob(context.Background(), "sync")
	if err == nil || !strings.Contains(err.Error(), "tenant Beta (b): subscription s1: access denied: delegate its subscriptions to Steward's managing tenant through Azure Lighthouse") {
		t.Errorf("a refusal: %v", err)
	}

	deny, synced = "", nil
	_, progress, err = h.RunJob(context.Background(), "sync")
	if err == nil || !strings.HasSuffix(err.Error(), "= tenant Gamma (c): no subscription visible") || !slices.Equal(synced, []string{"a", "b"}) {
		t.Errorf("third run: synced %v, error %v; want a and b synced and c's failure only", synced, err)
	}
	if last := progress[len(progress)-1]; last.Done != 3 || last.Total != 3 {
		t.Errorf("last progress %+v, want 3 of 3", last)
	}
}
