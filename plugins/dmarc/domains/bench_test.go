package domains_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/cloudsim/world"
	"github.com/stewardhq/steward/core/store/storetest"
)

// benchWorld gives Contoso n domains, each with DMARC, SPF with one
// include and a DKIM key at selector1, over the simulated DNS.
func benchWorld(n int) *world.World {
	w := &world.World{Tenants: []world.Tenant{
		{Name: "Contoso", DirectoryTenantID: contosoDir},
		{Name: "Fabrikam", DirectoryTenantID: fabrikamDir, Domains: []string{"missing.example"}},
	}}
	for i := range n {
		d := fmt.Sprintf("d%04d.example", i)
		w.Tenants[0].Domains = append(w.Tenants[0].Domains, d)
		w.DNS = append(w.DNS,
			txt("_dmarc."+d, "v=DMARC1; p=quarantine; rua=mailto:dmarc@"+d),
			txt(d, "v=spf1 include:_spf."+d+" -all"),
			txt("_spf."+d, "v=spf1 ip4:192.0.2.0/24 -all"),
			txt("selector1._domainkey."+d, dkimKey()))
	}
	return w
}

// BenchmarkPostureSync: one run over 500 domains on each database,
// reported as domains checked and stored per second.
func BenchmarkPostureSync(b *testing.B) {
	const n = 500
	for _, dialect := range storetest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			f := start(b, dialect, benchWorld(n))
			f.syncer.Concurrency = 8
			for b.Loop() {
				start := time.Now()
				done, _ := f.mustRun(b)
				if done != n+1 {
					b.Fatalf("%d domains checked, want %d", done, n+1)
				}
				b.ReportMetric(float64(done)/time.Since(start).Seconds(), "domains/s")
			}
		})
	}
}
