package rules

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestValidateMatchesSerial: validating batches with the rules dealt out
// to goroutines finds what validating one record and rule at a time
// does, in the same order (run with -race to check the sharing).
func TestValidateMatchesSerial(t *testing.T) {
	const records, nRules = 1200, 7
	batch := make([]Record, records)
	for i := range batch {
		data, err := decode(benchRecord(i))
		if err != nil {
			t.Fatal(err)
		}
		batch[i] = Record{Subject: string(rune('a' + i%26)), Data: data}
	}
	rules := make([]Rule, nRules)
	schemas := make([]*Schema, nRules)
	idx := make([]int, nRules)
	for i := range rules {
		rules[i] = Rule{ID: int64(i + 1), Schema: benchSchema(i)}
		s, err := CompileSchema([]byte(rules[i].Schema))
		if err != nil {
			t.Fatal(err)
		}
		schemas[i], idx[i] = s, i
	}
	got := make([]Result, nRules)
	for start := 0; start < records; start += evalBatch {
		validate(context.Background(), batch[start:min(start+evalBatch, records)], idx, schemas, rules, got)
	}
	found := 0
	for i := range rules {
		var want []Violation
		for j := range batch {
			var err error
			if want, err = schemas[i].check(context.Background(), time.Now().Add(MaxEvalTime), &rules[i], &batch[j], want); err != nil {
				t.Fatal(err)
			}
		}
		if got[i].SubjectsEvaluated != records || !slices.Equal(got[i].Violations, want) {
			t.Errorf("rule %d: %d subjects, %d violations, want %d", i, got[i].SubjectsEvaluated, len(got[i].Violations), len(want))
		}
		found += len(want)
	}
	if found == 0 {
		t.Error("no violations to compare")
	}
}
