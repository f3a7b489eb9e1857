package rules

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Dataset names of the other plugins' data the categories read.
const (
	// ResourcesDataset is the resources plugin's inventory; its parameter
	// "type" keeps one resource type.
	ResourcesDataset = "resources"
	// MFADataset is the identity plugin's figures at each tenant's latest
	// sync, one record per tenant.
	MFADataset = "identity_mfa"
)

// Record is one subject's data a rule validates.
type Record struct {
	// Subject is the resource's ARM id, or the tenant's id.
	Subject string
	// Name is the resource's name, or the tenant's id.
	Name string
	// Data is the record as decode reads it.
	Data any
}

// decode reads one JSON value as the validator takes it: numbers as
// json.Number, so none loses precision.
func decode(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// Evaluate validates each record against the rule's schema and returns
// every violation: each failed keyword of each record, with its instance
// path, in the order of the records. A record past the budgets stops the
// evaluation with an error wrapping ErrBudget.
func Evaluate(ctx context.Context, rule *Rule, records []Record) ([]Violation, error) {
	s, err := CompileSchema([]byte(rule.Schema))
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(MaxEvalTime)
	var out []Violation
	for i := range records {
		if out, err = s.check(ctx, deadline, rule, &records[i], out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// check appends the violations of one record to out, by instance path
// and schema path. The validator's error is a tree whose leaves are the
// keywords that failed; every leaf is one violation. A record that visits
// more than MaxEvalSteps schema objects, or whose validation is still
// running at deadline, is abandoned with an error wrapping ErrBudget, one
// whose validation ctx ends with ctx's error; out is then returned as it
// came.
func (s *Schema) check(ctx context.Context, deadline time.Time, rule *Rule, rec *Record, out []Violation) (_ []Violation, err error) {
	s.m.start(ctx, deadline)
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		st, ok := r.(stop)
		if !ok {
			panic(r)
		}
		switch st.err {
		case errSteps:
			err = fmt.Errorf("%w: validating %s visited more than %d schema objects", ErrBudget, rec.Name, MaxEvalSteps)
		case errTime:
			err = fmt.Errorf("%w: validating the records took more than %s", ErrBudget, MaxEvalTime)
		default:
			err = st.err
		}
	}()
	verr := s.s.Validate(rec.Data)
	if verr == nil {
		return out, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		// A record the validator cannot walk (an infinite loop of
		// references) fails the rule as a whole.
		return append(out, Violation{RuleID: rule.ID, TenantID: rule.TenantID, Subject: rec.Subject, SubjectName: rec.Name, Message: verr.Error()}), nil
	}
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, Violation{RuleID: rule.ID, TenantID: rule.TenantID, Subject: rec.Subject, SubjectName: rec.Name,
				InstancePath: e.InstanceLocation, Keyword: keywordOf(e.KeywordLocation), SchemaPath: e.KeywordLocation, Message: e.Message})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	first := len(out)
	walk(ve)
	// The validator visits an object's members in map order; sorting
	// makes a record's violations come out the same at every run.
	slices.SortFunc(out[first:], func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.InstancePath, b.InstancePath), cmp.Compare(a.SchemaPath, b.SchemaPath), cmp.Compare(a.Message, b.Message))
	})
	return out, nil
}

// named are the keywords whose value maps names to schemas or lists
// them, with how many segments of a keyword location name the member
// (dependentRequired maps names to arrays of names).
var named = map[string]int{"properties": 1, "patternProperties": 1, "$defs": 1, "dependentSchemas": 1,
	"allOf": 1, "anyOf": 1, "oneOf": 1, "prefixItems": 1, "dependentRequired": 2}

// unescapePointer undoes escapePointer.
var unescapePointer = strings.NewReplacer("~1", "/", "~0", "~")

// keywordOf is the keyword that failed at a keyword location: its last
// keyword, past the member names and indexes, or "false" where the
// location is a false schema (properties/x: false).
func keywordOf(loc string) string {
	if loc == "" {
		return "false"
	}
	segs := strings.Split(loc[1:], "/")
	kw := ""
	for i := 0; i < len(segs); i++ {
		kw = unescapePointer.Replace(segs[i])
		if n := named[kw]; n > 0 {
			i += n
			if i == len(segs)-1 && n == 1 {
				return "false"
			}
		}
	}
	return kw
}

// DatasetReader reads another plugin's dataset through the host;
// *sdk.Host is one.
type DatasetReader interface {
	ReadDataset(ctx context.Context, name string, tenantIDs []string, params map[string]string, fn func(json.RawMessage) error) error
}

// Score is a tenant's latest compliance snapshot, the record
// compliance_score rules validate.
type Score struct {
	TenantID                 string    `json:"tenant_id"`
	Date                     string    `json:"date" doc:"Day (UTC) of the snapshot, YYYY-MM-DD"`
	OverallCompliancePercent float64   `json:"overall_compliance_percent"`
	CompliantResources       int64     `json:"compliant_resources"`
	NonCompliantResources    int64     `json:"non_compliant_resources"`
	CompliantPolicies        int64     `json:"compliant_policies"`
	NonCompliantPolicies     int64     `json:"non_compliant_policies"`
	SyncedAt                 time.Time `json:"synced_at"`
}

// ScoreSource gives a tenant's latest compliance snapshot, nil when the
// tenant has none; the compliance plugin's policy states provide it.
type ScoreSource interface {
	LatestScore(ctx context.Context, tenantID string) (*Score, error)
}

// ScoreFunc is a function that is a ScoreSource.
type ScoreFunc func(ctx context.Context, tenantID string) (*Score, error)

// LatestScore calls f.
func (f ScoreFunc) LatestScore(ctx context.Context, tenantID string) (*Score, error) {
	return f(ctx, tenantID)
}

// Sources reads the records of each category for one tenant.
type Sources struct {
	Datasets DatasetReader
	Scores   ScoreSource
}

// ErrSource is a category's data that could not be read.
var ErrSource = errors.New("the rule's data could not be read")

// Each calls fn with each of the tenant's records of the category; for
// resource_property, the resources of resourceType.
func (s *Sources) Each(ctx context.Context, tenantID, category, resourceType string, fn func(*Record) error) error {
	switch category {
	case CategoryResourceProperty:
		return s.dataset(ctx, ResourcesDataset, tenantID, map[string]string{"type": resourceType}, func(m map[string]any, rec *Record) bool {
			// The type parameter narrows the stream; checking again keeps a
			// publisher that ignores it from feeding other types to the rule.
			typ, _ := m["type"].(string)
			rec.Subject, _ = m["resource_id"].(string)
			rec.Name, _ = m["name"].(string)
			return strings.EqualFold(typ, resourceType)
		}, fn)
	case CategoryMFACoverage:
		return s.dataset(ctx, MFADataset, tenantID, nil, func(_ map[string]any, rec *Record) bool {
			rec.Subject, rec.Name = tenantID, tenantID
			return true
		}, fn)
	case CategoryComplianceScore:
		score, err := s.Scores.LatestScore(ctx, tenantID)
		if err != nil {
			return fmt.Errorf("%w: latest compliance snapshot: %v", ErrSource, err)
		}
		if score == nil {
			return nil
		}
		raw, err := json.Marshal(score)
		if err != nil {
			return err
		}
		data, err := decode(raw)
		if err != nil {
			return err
		}
		return fn(&Record{Subject: tenantID, Name: tenantID, Data: data})
	}
	return fmt.Errorf("rules: unknown category %q", category)
}

// dataset streams a dataset's records of the tenant to fn; keep fills in
// the record's subject and says whether the rule sees it.
func (s *Sources) dataset(ctx context.Context, name, tenantID string, params map[string]string,
	keep func(map[string]any, *Record) bool, fn func(*Record) error) error {
	var fnErr error
	err := s.Datasets.ReadDataset(ctx, name, []string{tenantID}, params, func(raw json.RawMessage) error {
		data, err := decode(raw)
		if err != nil {
			return fmt.Errorf("a record of %s is not JSON: %w", name, err)
		}
		m, _ := data.(map[string]any)
		rec := Record{Data: data}
		if m == nil || !keep(m, &rec) {
			return nil
		}
		fnErr = fn(&rec)
		return fnErr
	})
	if err != nil && fnErr == nil {
		return fmt.Errorf("%w: dataset %s: %v", ErrSource, name, err)
	}
	return err
}

// Result is what evaluating one rule found.
type Result struct {
	Rule              *Rule
	SubjectsEvaluated int
	Violations        []Violation
	// Err is why the rule could not be evaluated: its schema no longer
	// compiles under the guards, or its evaluation went past a budget
	// (ErrBudget). Its violations are then incomplete.
	Err error
	// spent is the time validating the rule's records took so far.
	spent time.Duration
}

// Evaluator evaluates rules against the current data of their tenant.
type Evaluator struct {
	Store   *Store
	Sources *Sources
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (e *Evaluator) now() time.Time {
	if e.Now != nil {
		return e.Now().UTC()
	}
	return time.Now().UTC()
}

// sourceKey groups the rules that read the same records.
type sourceKey struct{ category, resourceType string }

// evaluate evaluates rules of one tenant, reading each source once for
// all the rules that use it. A rule that fails alone — its schema refused,
// a budget spent — has its Err set and is skipped from then on; the
// others go on. Only the data that cannot be read, or ctx ending, fails
// the whole.
func (e *Evaluator) evaluate(ctx context.Context, tenantID string, rules []Rule) ([]Result, error) {
	results := make([]Result, len(rules))
	groups := map[sourceKey][]int{}
	var order []sourceKey
	schemas := make([]*Schema, len(rules))
	for i := range rules {
		r := &rules[i]
		results[i].Rule = r
		s, err := CompileSchema([]byte(r.Schema))
		if err != nil {
			results[i].Err = err
			continue
		}
		schemas[i] = s
		k := sourceKey{r.Category, strings.ToLower(deref(r.ResourceType))}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	for _, k := range order {
		idx := groups[k]
		batch := make([]Record, 0, evalBatch)
		flush := func() {
			validate(ctx, batch, idx, schemas, rules, results)
			batch = batch[:0]
		}
		err := e.Sources.Each(ctx, tenantID, k.category, k.resourceType, func(rec *Record) error {
			if batch = append(batch, *rec); len(batch) == evalBatch {
				flush()
			}
			return ctx.Err()
		})
		if err != nil {
			return nil, err
		}
		flush()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// evalBatch is how many records are validated together, by as many
// goroutines as there are processors, each with its own rules.
const evalBatch = 512

// validate validates a batch of records against the rules of idx that
// have not failed. The rules are dealt out to the workers, so each rule's
// result is written by one goroutine and keeps the records' order; the
// records are only read. A rule's deadline is what is left of its
// MaxEvalTime.
func validate(ctx context.Context, batch []Record, idx []int, schemas []*Schema, rules []Rule, results []Result) {
	if len(batch) == 0 {
		return
	}
	workers := min(runtime.GOMAXPROCS(0), len(idx))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for n := w; n < len(idx); n += workers {
				i := idx[n]
				res := &results[i]
				if res.Err != nil {
					continue
				}
				res.SubjectsEvaluated += len(batch)
				started := time.Now()
				deadline := started.Add(MaxEvalTime - res.spent)
				for j := range batch {
					if res.Violations, res.Err = schemas[i].check(ctx, deadline, &rules[i], &batch[j], res.Violations); res.Err != nil {
						break
					}
				}
				res.spent += time.Since(started)
			}
		})
	}
	wg.Wait()
}

// DryRun evaluates one rule against its tenant's current data and stores
// nothing. A rule that cannot be evaluated answers its Result's Err.
func (e *Evaluator) DryRun(ctx context.Context, rule *Rule) (Result, error) {
	res, err := e.evaluate(ctx, rule.TenantID, []Rule{*rule})
	if err != nil {
		return Result{}, err
	}
	if res[0].Err != nil {
		return Result{}, res[0].Err
	}
	return res[0], nil
}

// TenantEvaluation is what EvaluateTenant did.
type TenantEvaluation struct {
	TenantID    string    `json:"tenant_id"`
	Rules       int       `json:"rules" doc:"Active audit rules evaluated"`
	Violations  int       `json:"violations"`
	EvaluatedAt time.Time `json:"evaluated_at"`
}

// EvaluateTenant evaluates every active rule of the tenant whose effect is
// audit against current data, and replaces each rule's stored violations
// with what it found, at one evaluated_at. Running it again on the same
// data stores the same violations. A rule changed or deleted while it was
// evaluated keeps the state its change gave it. A rule that could not be
// evaluated (see Result.Err) keeps what its last evaluation stored, and
// the error returned names it, after the other rules' violations are
// stored.
func (e *Evaluator) EvaluateTenant(ctx context.Context, tenantID string) (TenantEvaluation, error) {
	at := e.now()
	out := TenantEvaluation{TenantID: tenantID, EvaluatedAt: at}
	rules, err := e.Store.Active(ctx, tenantID)
	if err != nil {
		return out, err
	}
	results, err := e.evaluate(ctx, tenantID, rules)
	if err != nil {
		return out, err
	}
	var failed []error
	evaluated := results[:0]
	for _, r := range results {
		if r.Err != nil {
			failed = append(failed, fmt.Errorf("rule %d %q: %w", r.Rule.ID, r.Rule.Name, r.Err))
			continue
		}
		evaluated = append(evaluated, r)
	}
	if err := e.Store.ReplaceViolations(ctx, tenantID, evaluated, at); err != nil {
		return out, err
	}
	out.Rules = len(evaluated)
	for _, r := range evaluated {
		out.Violations += len(r.Violations)
	}
	return out, errors.Join(failed...)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
