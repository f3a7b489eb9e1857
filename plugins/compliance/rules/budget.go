package rules

import (
	"context"
	"errors"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The evaluation budgets; see the package documentation.
const (
	MaxEvalSteps = 100_000
	MaxEvalTime  = 10 * time.Second
)

// ErrBudget is a rule whose evaluation went past a budget; the evaluation
// of that rule stopped there.
var ErrBudget = errors.New("evaluation budget")

// clockEvery is how many steps go by between two looks at the clock and
// the context: often enough to stop within a millisecond or so, rarely
// enough not to show in the cost of a step.
const clockEvery = 256

// meter counts the schema objects a validation visits. The validator has
// no context and no limit of its own, so the meter stops it from inside:
// past a budget, or once the context is done, a step panics with a stop,
// which unwinds the validator's frames to check's recover. The goroutine
// validating stops there, nothing is left running.
type meter struct {
	ctx      context.Context
	deadline time.Time
	// steps counts the record's visits, total every visit since the
	// meter was made, which paces the looks at the clock.
	steps, total int
}

// stop is what a step panics with.
type stop struct{ err error }

var (
	errSteps = errors.New("steps")
	errTime  = errors.New("time")
)

func (m *meter) start(ctx context.Context, deadline time.Time) {
	m.ctx, m.deadline, m.steps = ctx, deadline, 0
}

func (m *meter) step() {
	m.steps++
	m.total++
	if m.steps > MaxEvalSteps {
		panic(stop{errSteps})
	}
	if m.total%clockEvery == 0 {
		if err := m.ctx.Err(); err != nil {
			panic(stop{err})
		}
		if time.Now().After(m.deadline) {
			panic(stop{errTime})
		}
	}
}

// metered puts a step of its meter on every schema object the compiler
// compiles. The validator calls an object's extensions each time it has
// validated a value against the object, after the object's subschemas
// and the schemas its references name, so every visit that goes deeper
// is counted, however the object was reached.
type metered struct{ m *meter }

func (x metered) Compile(jsonschema.CompilerContext, map[string]any) (jsonschema.ExtSchema, error) {
	return x, nil
}

func (x metered) Validate(jsonschema.ValidationContext, any) error {
	x.m.step()
	return nil
}
