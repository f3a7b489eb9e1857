package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/stewardhq/steward/core/cloudsim/stack"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// worldNamespace seeds the ids of the scaled world's copies, so the same
// flags always give the same world.
var worldNamespace = uuid.MustParse("6f1d3c2e-8a4b-4c55-9d1e-0b7a2f3e4d51")

// scaledWorld is a world of n tenants made from the demo world of today:
// tenant i is a copy of the demo's tenant i mod 5 (its subscriptions,
// resources, quotas, policy states, users, access reviews and DNS records)
// under ids, domains and a name of its own, with only the last costDays
// days of its costs. The billing account and its reservations stay with
// the first copy of the demo's tenant that has one. Every copy of a demo
// tenant carries the same estate, so each copy syncs the same rows.
func scaledWorld(n, costDays int, now time.Time) (*world.World, error) {
	demo := world.Demo(stack.DemoSeed, now)
	first := now.UTC().AddDate(0, 0, 1-costDays).Format(world.DateLayout)

	// A demo tenant owns its subscriptions' rows, its directory's users
	// and reviews, and the DNS records under its domains.
	underDomain := func(name string, t world.Tenant) bool {
		return slices.ContainsFunc(t.Domains, func(d string) bool { return name == d || strings.HasSuffix(name, "."+d) })
	}

	out := &world.World{}
	for i := range n {
		tpl := demo.Tenants[i%len(demo.Tenants)]
		tag := fmt.Sprintf("%03d", i+1)
		id := func(what string) string { return uuid.NewSHA1(worldNamespace, []byte(tag+"/"+what)).String() }

		t := tpl
		t.Name = tpl.Name + " " + tag
		t.DirectoryTenantID = id("directory")
		t.Subscriptions = nil
		t.Domains = nil
		t.AccessGroups = nil
		pairs := []string{tpl.DirectoryTenantID, t.DirectoryTenantID}
		subs := map[string]bool{}
		for _, s := range tpl.Subscriptions {
			ns := world.Subscription{ID: id("subscription/" + s.ID), Name: s.Name + "-" + tag}
			t.Subscriptions = append(t.Subscriptions, ns)
			pairs = append(pairs, s.ID, ns.ID)
			subs[s.ID] = true
		}
		for _, d := range tpl.Domains {
			nd := "t" + tag + "-" + d
			t.Domains = append(t.Domains, nd)
			pairs = append(pairs, d, nd)
		}
		for _, g := range tpl.AccessGroups {
			ng := g + "-" + tag
			t.AccessGroups = append(t.AccessGroups, ng)
			pairs = append(pairs, g, ng)
		}
		// The demo's billing account stays with the first copy alone.
		if i >= len(demo.Tenants) {
			t.BillingAccountID = nil
		}
		for _, r := range demo.AccessReviews {
			if r.DirectoryTenantID == tpl.DirectoryTenantID {
				pairs = append(pairs, r.ID, id("review/"+r.ID))
			}
		}
		c := &copier{rename: strings.NewReplacer(pairs...)}
		out.Tenants = append(out.Tenants, t)
		out.Costs = copyInto(c, out.Costs, filter(demo.Costs, func(r world.Cost) bool { return subs[r.SubscriptionID] && r.Date >= first }))
		out.PolicyStates = copyInto(c, out.PolicyStates, filter(demo.PolicyStates, func(r world.PolicyState) bool { return subs[r.SubscriptionID] }))
		out.Resources = copyInto(c, out.Resources, filter(demo.Resources, func(r world.Resource) bool { return subs[r.SubscriptionID] }))
		out.Quotas = copyInto(c, out.Quotas, filter(demo.Quotas, func(r world.Quota) bool { return subs[r.SubscriptionID] }))
		out.Users = copyInto(c, out.Users, filter(demo.Users, func(r world.User) bool { return r.DirectoryTenantID == tpl.DirectoryTenantID }))
		out.AccessReviews = copyInto(c, out.AccessReviews, filter(demo.AccessReviews, func(r world.AccessReview) bool { return r.DirectoryTenantID == tpl.DirectoryTenantID }))
		out.DNS = copyInto(c, out.DNS, filter(demo.DNS, func(r world.DNSRecord) bool { return underDomain(r.Name, tpl) }))
		if c.err != nil {
			return nil, fmt.Errorf("copy %s: %w", t.Name, c.err)
		}
	}
	out.Reservations = demo.Reservations
	return out, out.Validate()
}

func filter[T any](in []T, keep func(T) bool) []T {
	var out []T
	for _, v := range in {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// copier renames the ids of one copy's records; err is the first
// failure.
type copier struct {
	rename *strings.Replacer
	err    error
}

// copyInto appends src's records to dst with every id renamed: they go
// through their JSON form, where ids, domains and addresses are plain
// strings.
func copyInto[T any](c *copier, dst, src []T) []T {
	if c.err != nil || len(src) == 0 {
		return dst
	}
	b, err := json.Marshal(src)
	if err != nil {
		c.err = err
		return dst
	}
	var out []T
	if c.err = json.Unmarshal([]byte(c.rename.Replace(string(b))), &out); c.err != nil {
		return dst
	}
	return append(dst, out...)
}

// writeWorld writes w to a world file in dir.
func writeWorld(w *world.World, dir string) (string, error) {
	b, err := json.Marshal(w)
	if err != nil {
		return "", err
	}
	path := dir + "/world.json"
	return path, os.WriteFile(path, b, 0o600)
}
