package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/core/store/storetest"
)

const (
	benchResources = 100_000
	benchRules     = 50
	benchTenant    = "aaaaaaaa-0000-4000-8000-00000000000a"
	benchType      = "microsoft.compute/disks"
)

// benchRecord is disk i of the resources dataset: one in 20 lacks an
// owner tag and one in 20 is in eastus, one in 10 uses platform keys, one
// in 25 allows all network access, sizes run 32 to 1055 GB.
func benchRecord(i int) json.RawMessage {
	tags := map[string]string{"env": []string{"prod", "dev", "test"}[i%3], "cost-center": fmt.Sprintf("cc-%03d", i%500)}
	if i%20 != 0 {
		tags["owner"] = fmt.Sprintf("team-%d", i%40)
	}
	encryption := "EncryptionAtRestWithCustomerKey"
	if i%10 == 0 {
		encryption = "EncryptionAtRestWithPlatformKey"
	}
	arm := fmt.Sprintf("/subscriptions/s%d/resourceGroups/rg-%d/providers/Microsoft.Compute/disks/disk-%06d", i%10, i%100, i)
	raw, err := json.Marshal(map[string]any{
		"tenant_id": benchTenant, "subscription_id": fmt.Sprintf("s%d", i%10), "id": fmt.Sprintf("%032x", i), "resource_id": arm,
		"name": fmt.Sprintf("disk-%06d", i), "type": benchType, "location": location(i),
		"resource_group": fmt.Sprintf("rg-%d", i%100), "sku": "Premium_LRS", "tags": tags,
		"properties": map[string]any{"diskSizeGB": 32 + i%1024, "osType": "Linux", "networkAccessPolicy": network(i),
			"encryption": map[string]any{"type": encryption}, "diskState": "Attached", "timeCreated": "2026-01-01T00:00:00Z"},
		"first_seen": "2026-01-01T00:00:00Z", "last_seen": "2026-11-25T00:00:00Z",
	})
	if err != nil {
		panic(err)
	}
	return raw
}

func location(i int) string {
	if i%20 == 0 {
		return "eastus"
	}
	return []string{"westeurope", "northeurope"}[i%2]
}

func network(i int) string {
	if i%25 == 0 {
		return "AllowAll"
	}
	return []string{"DenyAll", "AllowPrivate"}[i%2]
}

// benchSchema is rule i of 50: ten of each of five kinds of check, with
// thresholds that vary, so that up to a tenth of the disks fail each.
func benchSchema(i int) string {
	switch i % 5 {
	case 0:
		return fmt.Sprintf(`{"required":["tags"],"properties":{"tags":{"required":["owner","env"],"properties":{"owner":{"pattern":"^team-[0-9]{1,%d}$"}}}}}`, 2+i/10)
	case 1:
		return fmt.Sprintf(`{"properties":{"properties":{"properties":{"diskSizeGB":{"type":"integer","maximum":%d}}}}}`, 1000+i)
	case 2:
		return `{"properties":{"properties":{"properties":{"encryption":{"properties":{"type":{"const":"EncryptionAtRestWithCustomerKey"}}}}}}}`
	case 3:
		return fmt.Sprintf(`{"properties":{"location":{"enum":["westeurope","northeurope"]},"properties":{"properties":{"networkAccessPolicy":{"enum":["DenyAll","AllowPrivate"]}}}},"$comment":"%d"}`, i)
	}
	return fmt.Sprintf(`{"properties":{"tags":{"properties":{"cost-center":{"pattern":"^cc-[0-4][0-9]{2}$"},"env":{"not":{"const":"lab%d"}}}}}}`, i)
}

// cpuTime is the CPU time this process has used, in user and system mode,
// on every core: on a shared machine it varies less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU seconds per run used since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric((cpuTime()-start).Seconds()/float64(b.N), "cpu-s/run")
}

// generated is the resources dataset of one tenant, made up in memory;
// the benchmark measures evaluation and storage, not the host's relay.
type generated []json.RawMessage

func (g generated) ReadDataset(ctx context.Context, _ string, _ []string, _ map[string]string, fn func(json.RawMessage) error) error {
	for _, r := range g {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func benchData() (generated, []Rule) {
	records := make(generated, benchResources)
	for i := range records {
		records[i] = benchRecord(i)
	}
	typ := benchType
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	rules := make([]Rule, benchRules)
	for i := range rules {
		rules[i] = Rule{TenantID: benchTenant, Name: fmt.Sprintf("rule %d", i), Category: CategoryResourceProperty, ResourceType: &typ,
			Severity: DefaultSeverity, Effect: EffectAudit, Schema: benchSchema(i), IsActive: true, CreatedBy: "bench", CreatedAt: now, UpdatedAt: now}
	}
	return records, rules
}

// BenchmarkRuleEvaluation: 50 rules against 100,000 resources of one
// tenant. validate is the validation alone (in batches, as EvaluateTenant
// validates), on records decoded once;
// tenant is EvaluateTenant: the records streamed and decoded, each
// validated by every rule, and the violations stored, on each database.
func BenchmarkRuleEvaluation(b *testing.B) {
	records, rules := benchData()
	b.Run("validate", func(b *testing.B) {
		decoded := make([]Record, len(records))
		for i, raw := range records {
			data, err := decode(raw)
			if err != nil {
				b.Fatal(err)
			}
			decoded[i] = Record{Subject: fmt.Sprint(i), Data: data}
		}
		schemas := make([]*Schema, len(rules))
		for i := range rules {
			s, err := CompileSchema([]byte(rules[i].Schema))
			if err != nil {
				b.Fatal(err)
			}
			schemas[i] = s
		}
		idx := make([]int, len(rules))
		for i := range idx {
			idx[i] = i
		}
		b.ResetTimer()
		cpu := cpuTime()
		var found int
		for range b.N {
			results := make([]Result, len(rules))
			for start := 0; start < len(decoded); start += evalBatch {
				validate(context.Background(), decoded[start:min(start+evalBatch, len(decoded))], idx, schemas, rules, results)
			}
			found = 0
			for _, r := range results {
				found += len(r.Violations)
			}
		}
		reportCPU(b, cpu)
		validations := float64(b.N) * benchResources * benchRules
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/validations, "ns/validation")
		b.ReportMetric(float64(found), "violations")
	})
	for _, dialect := range storetest.Dialects() {
		b.Run("store/"+dialect, func(b *testing.B) {
			ctx := context.Background()
			db := storetest.Open(b, dialect)
			if _, err := store.Migrate(ctx, db, Migrations(), "compliance_migrations"); err != nil {
				b.Fatal(err)
			}
			st := NewStore(db)
			results := make([]Result, len(rules))
			for i := range rules {
				r := rules[i]
				if err := st.Create(ctx, &r); err != nil {
					b.Fatal(err)
				}
				results[i].Rule = &r
				for j := range 5400 {
					results[i].Violations = append(results[i].Violations, Violation{Subject: fmt.Sprintf("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/disk-%06d", j),
						SubjectName: fmt.Sprintf("disk-%06d", j), InstancePath: "/tags", Keyword: "required", SchemaPath: "/properties/tags/required", Message: "missing properties: 'owner'"})
				}
			}
			b.ResetTimer()
			cpu := cpuTime()
			for range b.N {
				if err := st.ReplaceViolations(ctx, benchTenant, results, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
		})
		b.Run("tenant/"+dialect, func(b *testing.B) {
			ctx := context.Background()
			db := storetest.Open(b, dialect)
			if _, err := store.Migrate(ctx, db, Migrations(), "compliance_migrations"); err != nil {
				b.Fatal(err)
			}
			st := NewStore(db)
			for i := range rules {
				r := rules[i]
				if err := st.Create(ctx, &r); err != nil {
					b.Fatal(err)
				}
			}
			e := &Evaluator{Store: st, Sources: &Sources{Datasets: records}}
			b.ResetTimer()
			cpu := cpuTime()
			var res TenantEvaluation
			for range b.N {
				var err error
				if res, err = e.EvaluateTenant(ctx, benchTenant); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
			b.ReportMetric(float64(res.Violations), "violations")
			if res.Rules != benchRules {
				b.Fatalf("evaluated %d rules", res.Rules)
			}
		})
	}
}
