package mapping

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stewardhq/steward/plugins/compliance/frameworks/frameworkstest"
)

// azureNames are display names of Azure built-in policy definitions.
var azureNames = []string{
	"Accounts with owner permissions on Azure resources should be MFA enabled",
	"Accounts with write permissions on Azure resources should be MFA enabled",
	"Secure transfer to storage accounts should be enabled",
	"Key Vault secrets should have an expiration date",
	"Key Vault keys should have an expiration date",
	"Azure Backup should be enabled for Virtual Machines",
	"Network Watcher should be enabled",
	"Allowed virtual machine size SKUs",
	"Allowed locations",
	"Storage accounts should restrict network access",
	"Storage accounts should prevent shared key access",
	"Function apps should only be accessible over HTTPS",
	"App Service apps should only be accessible over HTTPS",
	"Latest TLS version should be used in your API App",
	"SQL servers should use customer-managed keys to encrypt data at rest",
	"Transparent Data Encryption on SQL databases should be enabled",
	"Auditing on SQL server should be enabled",
	"Resource logs in Key Vault should be enabled",
	"Resource logs in Event Hub should be enabled",
	"Azure Defender for SQL should be enabled for unprotected Azure SQL servers",
	"Microsoft Defender for Storage should be enabled",
	"Management ports of virtual machines should be protected with just-in-time network access control",
	"All network ports should be restricted on network security groups associated to your virtual machine",
	"Subnets should be associated with a Network Security Group",
	"System updates should be installed on your machines",
	"Vulnerability assessment should be enabled on SQL Managed Instance",
	"Endpoint protection should be installed on your machines",
	"Guest accounts with owner permissions on Azure resources should be removed",
	"Blocked accounts with owner permissions on Azure resources should be removed",
	"A maximum of 3 owners should be designated for your subscription",
	"Azure Key Vault should have firewall enabled",
	"Key vaults should have soft delete enabled",
	"Key vaults should have deletion protection enabled",
	"Geo-redundant backup should be enabled for Azure Database for MySQL",
	"Long-term geo-redundant backup should be enabled for Azure SQL Databases",
	"Container registries should not allow unrestricted network access",
	"Kubernetes clusters should not allow container privilege escalation",
	"Azure Cosmos DB accounts should use customer-managed keys to encrypt data at rest",
	"Disk encryption should be applied on virtual machines",
	"Email notification for high severity alerts should be enabled",
	"Subscriptions should have a contact email address for security issues",
	"Activity log should be retained for at least one year",
	"Azure Monitor should collect activity logs from all regions",
	"Private endpoint should be enabled for PostgreSQL servers",
	"Public network access should be disabled for MariaDB servers",
	"Web Application Firewall (WAF) should be enabled for Application Gateway",
	"Azure DDoS Protection should be enabled",
	"Audit usage of custom RBAC roles",
	"Require a tag on resource groups",
	"Deprecated accounts should be removed from your subscription",
}

// benchPolicies returns n distinct definitions with Azure's names; half
// carry one to six group names of Azure's initiatives (tier 1), the others
// none (tier 2 only).
func benchPolicies(tb testing.TB, n int) []Policy {
	azureGroups := frameworkstest.AzureGroupNames(tb)
	r := rand.New(rand.NewPCG(12, 25))
	suffixes := []string{"", " (Preview)", " for App Service Environment", " in Azure Government"}
	out := make([]Policy, n)
	for i := range out {
		p := Policy{
			ID:   fmt.Sprintf("/providers/Microsoft.Authorization/policyDefinitions/%08x-0000-4000-8000-%012x", i, r.Uint64()&0xffffffffffff),
			Name: azureNames[i%len(azureNames)] + suffixes[(i/len(azureNames))%len(suffixes)],
		}
		if i%2 == 0 {
			for range 1 + r.IntN(6) {
				p.GroupNames = append(p.GroupNames, azureGroups[r.IntN(len(azureGroups))])
			}
		}
		out[i] = p
	}
	return out
}

// processCPU is the CPU time all threads of the process have used, from
// /proc (Linux; 10 ms resolution).
func processCPU() (time.Duration, bool) {
	raw, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	_, rest, ok := strings.Cut(string(raw), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, false
	}
	// utime and stime, fields 14 and 15 of the line, in clock ticks of
	// 1/100 s.
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// state is one policy state: a definition evaluated on one resource.
type state struct {
	tenant, policy int
	compliant      bool
}

// benchStates returns tenants × perTenant states over the definitions.
func benchStates(tenants, perTenant, definitions int) []state {
	r := rand.New(rand.NewPCG(11, 25))
	out := make([]state, 0, tenants*perTenant)
	for t := range tenants {
		for range perTenant {
			out = append(out, state{tenant: t, policy: r.IntN(definitions), compliant: r.IntN(5) > 0})
		}
	}
	return out
}

// aggregate is what the states store answers for a request: the distinct
// definitions, their resource counts and their resources' evidence (each
// state on a resource of its own).
func aggregate(list []Policy, states []state) ([]Policy, map[string]Counts, *Resources) {
	counts := map[string]Counts{}
	resources := NewResources()
	for i, s := range states {
		id := list[s.policy].ID
		c := counts[id]
		e := EvidenceCompliant
		if s.compliant {
			c.Compliant++
		} else {
			c.NonCompliant++
			e = EvidenceNonCompliant
		}
		counts[id] = c
		resources.Add(id, fmt.Sprintf("t%d/r%d", s.tenant, i), e)
	}
	distinct := make([]Policy, 0, len(counts))
	for _, p := range list {
		if _, ok := counts[p.ID]; ok {
			distinct = append(distinct, p)
		}
	}
	return distinct, counts, resources
}

// BenchmarkCoverage times the NIST CSF detail (Map, then Coverage with the
// matched policies and their explanation) over 100 tenants × 1,000 policy
// states of 200 distinct definitions: cold, on a mapper that has not seen
// the policy set, and warm, from its cache.
func BenchmarkCoverage(b *testing.B) {
	const tenants, perTenant, definitions = 100, 1000, 200
	ctx := context.Background()
	set := withAcme(b)
	all := benchPolicies(b, definitions)
	states := benchStates(tenants, perTenant, definitions)
	policies, counts, resources := aggregate(all, states)
	opts := Options{IncludePolicies: true, Explain: true}

	detail := func(m *Mapper, list []Policy, counts map[string]Counts, resources *Resources) {
		mapping, err := m.Map(ctx, list)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Coverage("nist_csf", mapping, counts, resources, opts); err != nil {
			b.Fatal(err)
		}
	}
	report := func(b *testing.B, took []time.Duration, unit string) {
		slices.Sort(took)
		rank := func(p int) float64 {
			return float64(took[(len(took)*p+99)/100-1].Microseconds()) / 1000
		}
		b.ReportMetric(rank(50), unit+"-p50-ms")
		b.ReportMetric(rank(95), unit+"-p95-ms")
	}

	b.Run("prepare", func(b *testing.B) {
		var took []time.Duration
		for range 20 {
			start := time.Now()
			newMapper(b, set)
			took = append(took, time.Since(start))
		}
		report(b, took, "prepare")
	})
	cold := func(b *testing.B, list []Policy, counts map[string]Counts, resources *Resources, rounds int) {
		var took []time.Duration
		var cpu time.Duration
		for range rounds {
			m := newMapper(b, set)
			runtime.GC()
			cpu0, _ := processCPU()
			start := time.Now()
			detail(m, list, counts, resources)
			took = append(took, time.Since(start))
			cpu1, _ := processCPU()
			cpu += cpu1 - cpu0
		}
		report(b, took, "cold")
		// The process's CPU time depends far less than the wall time on
		// what else the machine runs.
		if _, ok := processCPU(); ok {
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(rounds), "cold-cpu-ms")
		}
	}
	b.Run("cold", func(b *testing.B) { cold(b, policies, counts, resources, 20) })
	// A cold request costs in proportion to the distinct definitions.
	for _, n := range []int{50, 800} {
		b.Run(fmt.Sprintf("cold-%d-definitions", n), func(b *testing.B) {
			list, counts, resources := aggregate(benchPolicies(b, n), benchStates(tenants, perTenant, n))
			cold(b, list, counts, resources, 10)
		})
	}
	b.Run("warm", func(b *testing.B) {
		m := newMapper(b, set)
		detail(m, policies, counts, resources)
		var took []time.Duration
		for range 1000 {
			start := time.Now()
			detail(m, policies, counts, resources)
			took = append(took, time.Since(start))
		}
		report(b, took, "warm")
	})
	// The same, counting the 100,000 states in Go first, as a request would
	// if the store handed over states rather than counts.
	b.Run("warm-from-states", func(b *testing.B) {
		m := newMapper(b, set)
		detail(m, policies, counts, resources)
		var took []time.Duration
		for range 200 {
			start := time.Now()
			list, counts, resources := aggregate(all, states)
			detail(m, list, counts, resources)
			took = append(took, time.Since(start))
		}
		report(b, took, "states")
	})
}
