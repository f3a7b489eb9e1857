package rules

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// fanOut is the shape of the reviewed schema: $defs d0 … dn, each an
// allOf of two references to the next, so validating d0 visits 2^n schema
// objects. testdata/fanout.json is the one reviewed, n = 40: 2,587 bytes,
// 5 levels and nothing else a guard looks at.
func fanOut(n int) string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"object"}}}`, n)
	return b.String()
}

// chain is a schema whose expansion is small (its reference is a cycle)
// but which visits 2^depth objects on a value nested depth levels deep
// in "a": every level applies the whole schema twice to the next.
const chain = `{"$ref":"#/$defs/n","$defs":{"n":{"properties":{"a":{"allOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"}]}}}}}`

// nested is {"a": {"a": … {}}}, depth levels deep.
func nested(t *testing.T, depth int) any {
	t.Helper()
	v, err := decode([]byte(strings.Repeat(`{"a":`, depth) + "{}" + strings.Repeat("}", depth)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFanOutRefused: the reviewed schema is refused at compilation,
// naming the guard, and quickly; one of the same shape within the budget
// compiles.
func TestFanOutRefused(t *testing.T) {
	raw, err := os.ReadFile("testdata/fanout.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 2700 || depth(raw) > MaxSchemaDepth {
		t.Fatalf("the fan-out schema has %d bytes and %d levels; it should pass the other guards", len(raw), depth(raw))
	}
	started := time.Now()
	_, err = CompileSchema(raw)
	if e := problemAt(t, err); e.Location != schemaLoc || !strings.Contains(e.Message, "reference fan-out") || !strings.Contains(e.Message, "10000") {
		t.Errorf("fan-out refused with %s: %s", e.Location, e.Message)
	}
	if d := time.Since(started); d > 100*time.Millisecond {
		t.Errorf("refusing took %s", d)
	}
	if _, err := CompileSchema([]byte(fanOut(8))); err != nil {
		t.Errorf("a fan-out of 2^8 refused: %v", err)
	}
}

// TestExpansion pins what the fan-out guard counts: every object, and at
// each reference the part it names, a cycle once.
func TestExpansion(t *testing.T) {
	for raw, want := range map[string]int{
		`{}`:                                     1,
		`{"properties":{"a":{"type":"string"}}}`: 3,
		`{"$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"},"y":{"$ref":"#/$defs/a"}}}`:  8,
		`{"$defs":{"a":{"$anchor":"s","type":"string"}},"allOf":[{"$ref":"#s"},{"$ref":"#s"},{"$ref":"#s"}]}`: 9,
		`{"$defs":{"a":{"$dynamicAnchor":"s"}},"items":{"$dynamicRef":"#s"}}`:                                 5,
		`{"properties":{"next":{"$ref":"#"}}}`:                                                                4,
		`{"$defs":{"a/b c":{"type":"string"}},"$ref":"#/$defs/a~1b%20c"}`:                                     4,
		`{"allOf":[{"type":"string"}],"not":{"$ref":"#/allOf/0"}}`:                                            4,
		`{"$ref":"#/$defs/none"}`: 1,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`:                               10,
		`{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"},{"$ref":"#/$defs/b"}]},"b":{"type":"string"}},"$ref":"#/$defs/a"}`: 13,
	} {
		doc, err := decode([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := expansion(doc, MaxSchemaExpansion); got != want {
			t.Errorf("expansion(%s) = %d, want %d", raw, got, want)
		}
	}
	doc, _ := decode([]byte(fanOut(40)))
	if got := expansion(doc, MaxSchemaExpansion); got != MaxSchemaExpansion+1 {
		t.Errorf("expansion of the fan-out = %d, want the cap %d", got, MaxSchemaExpansion+1)
	}
}

// TestStepBudget: a schema the guards let through that visits 2^30
// objects on a deep value stops at the step budget, well within two
// seconds, naming the budget and the record. Evaluate returns only once
// the validation has unwound, so nothing of it goes on running.
func TestStepBudget(t *testing.T) {
	if _, err := CompileSchema([]byte(chain)); err != nil {
		t.Fatalf("the chain should pass the guards: %v", err)
	}
	rule := &Rule{ID: 3, Schema: chain}
	records := []Record{{Subject: "ok", Name: "shallow", Data: nested(t, 5)}, {Subject: "deep", Name: "deep-one", Data: nested(t, 30)}}
	done := make(chan error, 1)
	started := time.Now()
	go func() {
		_, err := Evaluate(context.Background(), rule, records)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "deep-one") || !strings.Contains(err.Error(), "100000 schema objects") {
			t.Errorf("error %v, want the step budget naming the record", err)
		}
		t.Logf("stopped after %s", time.Since(started))
	case <-time.After(30 * time.Second):
		// The step budget stops it in well under a second on an idle
		// machine (BENCHMARKS.md); only a hang takes this long.
		t.Fatal("the step budget did not stop the evaluation")
	}

	// The budget is the record's: many records within it pass however
	// many steps they add up to.
	many := make([]Record, 2000)
	for i := range many {
		many[i] = Record{Subject: "r", Name: "r", Data: nested(t, 5)}
	}
	if vs, err := Evaluate(context.Background(), rule, many); err != nil || len(vs) != 0 {
		t.Errorf("2,000 shallow records: %d violations, %v", len(vs), err)
	}
}

// TestTimeBudgetAndCancel: a validation still running at its deadline
// stops with the time budget; one whose context ends stops with the
// context's error.
func TestTimeBudgetAndCancel(t *testing.T) {
	s, err := CompileSchema([]byte(chain))
	if err != nil {
		t.Fatal(err)
	}
	// 2^16 visits: within the step budget, past a deadline already gone.
	rec := &Record{Name: "sixteen", Data: nested(t, 16)}
	if _, err := s.check(context.Background(), time.Now().Add(-time.Second), &Rule{}, rec, nil); !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "took more than 10s") {
		t.Errorf("past the deadline: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.check(ctx, time.Now().Add(time.Minute), &Rule{}, rec, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	// The schema is whole after a stop: the next record validates.
	vs, err := s.check(context.Background(), time.Now().Add(time.Minute), &Rule{}, &Record{Data: nested(t, 3)}, nil)
	if err != nil || len(vs) != 0 {
		t.Errorf("after a stop: %v %v", vs, err)
	}
}
