package states_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
)

// benchWorld is one tenant (Contoso) with two subscriptions, each with
// resources × 5 policies' states, a fifth of them non-compliant.
func benchWorld(resources int) *world.World {
	w := complianceWorld()
	w.Tenants = w.Tenants[:1]
	w.PolicyStates = nil
	policies := []policy{p1, p2, p3, p4, {id: def(5), name: "Public network access should be disabled", category: "Network"}}
	for _, sub := range []string{subC1, subC2} {
		for r := range resources {
			res := resource(sub, "Microsoft.Storage/storageAccounts", fmt.Sprintf("sa%05d", r))
			for i, p := range policies {
				compliance := "Compliant"
				if (r+i)%5 == 0 {
					compliance = "NonCompliant"
				}
				w.PolicyStates = append(w.PolicyStates, state(sub, p, res, compliance))
			}
		}
	}
	return w
}

// BenchmarkComplianceSync runs the compliance job over a tenant of 2
// subscriptions × 5,000 resources × 5 policies = 50,000 policy states,
// from the simulated Policy Insights (pages of 1,000 over HTTPS, which the
// simulator rebuilds from the whole world for each page) through the
// client into SQLite and PostgreSQL, with each subscription's policy
// summary and the tenant's snapshot. Each measured run replaces every
// state the previous one stored. It reports policy states per second of
// the whole job.
func BenchmarkComplianceSync(b *testing.B) {
	const resources = 5000
	w := benchWorld(resources)
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			f := start(b, dialect, w)
			f.mustRun(b) // warms up the token and the connection pool
			b.ResetTimer()
			var n int64
			start := time.Now()
			for range b.N {
				n += f.mustRun(b)
			}
			elapsed := time.Since(start)
			if n != int64(b.N*len(w.PolicyStates)) {
				b.Fatalf("synced %d states, want %d", n, b.N*len(w.PolicyStates))
			}
			b.ReportMetric(float64(n)/elapsed.Seconds(), "states/s")
		})
	}
}
