// Package mapping maps Azure policy definitions to the controls of the
// regulatory frameworks and turns the mapping and policy compliance into
// framework coverage.
//
// The mapping itself is the Rego in the policies folder
// (plugins/compliance/policies/mapping.rego), evaluated with the framework
// definitions as data.frameworks: tier 1 maps a policy through its
// initiative group names with confidence high; tier 2, only in a framework
// where none of its group names maps it to a control, through keyword sets
// in its name with confidence medium (a set of two or more words) or low
// (one word). The policies folder's README.md and frameworks/README.md
// state the rules.
//
// A Mapper evaluates one distinct set of policy definitions once and keeps
// the result under a content hash of the policy set, the Rego and the
// framework data, so a request costs in proportion to its distinct
// definitions, not to the resource states behind them, and a repeated
// request costs a hash and a map lookup.
//
// # Coverage
//
// Coverage combines a Mapping with the compliance of each policy definition
// in scope: its compliant and non-compliant resource counts, and each of
// its resources' evidence (Resources). A policy definition is NonCompliant
// when any resource is non-compliant, Compliant when none is and some
// resource is compliant, and Unknown when no resource was evaluated either
// way. A control's counts are of resources, over its matched policies: a
// resource fails the control when any matched policy found it
// non-compliant, and passes it when none did and at least one found it
// compliant or exempt (an exempt resource passes and is counted as exempt
// too). A non-compliant finding one of Steward's exemptions covers
// (EvidenceExempted, or Resources.ExemptControl for a whole control)
// fails nothing: the resource passes as exempted unless another matched
// policy fails it. compliant_count is the passing resources,
// non_compliant_count the failing ones, exempt_count the passing ones with
// Azure's Exempt state, exempted_count those passing by Steward's
// exemption. The control's result is:
//
//	manual          no policy in scope maps to the control
//	failed          a resource fails it
//	passed          a resource passes it and none fails
//	not_applicable  policies map to it but none evaluated a resource
//
// and its status the result in the older words, a failed control split by
// whether any resource passes it:
//
//	not_covered    manual
//	covered        passed
//	partial        failed, and some resource passes
//	non_compliant  failed, and no resource passes
//	not_evaluated  not_applicable
//
// compliance_percent is passing resources over passing plus failing ones
// (0 when there are none). A category's coverage_percent, and the
// framework's overall_coverage_percent, is the share of its controls with a
// status other than not_covered. Percentages are rounded to one decimal.
package mapping

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"slices"
	"sort"
	"strings"

	"github.com/jellydator/ttlcache/v3"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/util"
	"golang.org/x/sync/singleflight"

	"github.com/stewardhq/steward/plugins/compliance/frameworks"
	"github.com/stewardhq/steward/plugins/compliance/policies"
)

// Disclaimer accompanies every coverage result.
const Disclaimer = "This is an automated coverage assessment derived from cloud policy state, " +
	"not an audit opinion. Certification against a framework requires evaluation " +
	"by an independent auditor."

// Mapping confidences.
const (
	// ConfidenceHigh is a tier-1 match: a group name names the control.
	ConfidenceHigh = "high"
	// ConfidenceMedium is a tier-2 match on a keyword set of two or more words.
	ConfidenceMedium = "medium"
	// ConfidenceLow is a tier-2 match on single-word keyword sets only.
	ConfidenceLow = "low"
)

// query is the Rego rule that holds the mapping.
const query = "data.steward.compliance.mapping.matches"

// cacheCapacity bounds the number of policy sets whose mapping is kept; the
// least recently used is dropped first.
const cacheCapacity = 256

// ErrUnknownFramework is returned for a framework id that is not loaded.
var ErrUnknownFramework = errors.New("unknown framework")

// Policy is one distinct policy definition, as the mapping reads it.
type Policy struct {
	// ID is the policy definition id.
	ID   string `json:"id"`
	Name string `json:"name"`
	// GroupNames are the initiative group names the definition is assigned
	// under, across all its assignments.
	GroupNames []string `json:"group_names"`
}

// Match says why a policy maps to a control.
type Match struct {
	// Tier is 1 for a group name, 2 for a keyword set.
	Tier       int    `json:"tier"`
	Confidence string `json:"confidence"`
	// GroupName is the group name that named the control (tier 1).
	GroupName string `json:"group_name,omitempty"`
	// Keywords is the keyword set the policy name matched (tier 2).
	Keywords []string `json:"keywords,omitempty"`
	// Override is the reason of the framework override that added the
	// policy to the control (tier 2).
	Override string `json:"override,omitempty"`
}

// Mapping is the result of Map for one policy set. It is shared between
// callers and must not be modified.
type Mapping struct {
	hash     string
	policies map[string]Policy
	// matches[framework id][control id][policy id]
	matches map[string]map[string]map[string]Match
}

// Hash is the content hash the mapping is cached under: of the policy set,
// the Rego and the framework data.
func (m *Mapping) Hash() string { return m.hash }

// Matches returns the policies mapped to a control, by policy id.
func (m *Mapping) Matches(frameworkID, controlID string) map[string]Match {
	return m.matches[frameworkID][controlID]
}

// Policy returns a policy of the mapped set by id.
func (m *Mapping) Policy(id string) (Policy, bool) {
	p, ok := m.policies[id]
	return p, ok
}

// Mapper maps policy sets to framework controls. It is safe for concurrent
// use.
type Mapper struct {
	set      *frameworks.Set
	rego     []File
	regoHash string
	query    rego.PreparedEvalQuery
	cache    *ttlcache.Cache[string, *Mapping]
	flight   singleflight.Group
}

// File is one Rego file in force.
type File struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// New prepares the embedded Rego with set as data.frameworks.
func New(ctx context.Context, set *frameworks.Set) (*Mapper, error) {
	files, err := regoFiles(policies.Rego)
	if err != nil {
		return nil, err
	}
	data, err := frameworkData(set)
	if err != nil {
		return nil, err
	}
	opts := []func(*rego.Rego){
		rego.Query(query),
		// Refuse at start-up what the strict compiler refuses (unused
		// variables, shadowed imports), and fail a request rather than
		// map nothing should a built-in function meet a value it cannot
		// take.
		rego.Strict(true),
		rego.StrictBuiltinErrors(true),
		rego.Store(inmem.NewFromObject(map[string]any{"frameworks": data})),
	}
	h := sha256.New()
	for _, f := range files {
		opts = append(opts, rego.Module(f.Name, f.Text))
		writeField(h, f.Name)
		writeField(h, f.Text)
	}
	prepared, err := rego.New(opts...).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("mapping: prepare Rego: %w", err)
	}
	return &Mapper{
		set:      set,
		rego:     files,
		regoHash: hex.EncodeToString(h.Sum(nil)),
		query:    prepared,
		cache: ttlcache.New(
			ttlcache.WithCapacity[string, *Mapping](cacheCapacity),
		),
	}, nil
}

// Frameworks returns the framework set the mapper evaluates against.
func (m *Mapper) Frameworks() *frameworks.Set { return m.set }

// regoFiles returns the policy files of fsys, without their unit tests,
// ordered by name.
func regoFiles(fsys fs.FS) ([]File, error) {
	names, err := fs.Glob(fsys, "*.rego")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var files []File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.rego") {
			continue
		}
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: name, Text: string(text)})
	}
	if len(files) == 0 {
		return nil, errors.New("mapping: no Rego policies")
	}
	return files, nil
}

// frameworkData is the set as the generic JSON document OPA's store holds.
func frameworkData(set *frameworks.Set) (any, error) {
	raw, err := json.Marshal(set.Data())
	if err != nil {
		return nil, err
	}
	var data any
	if err := util.UnmarshalJSON(raw, &data); err != nil {
		return nil, err
	}
	return data, nil
}

// Map returns the mapping of a set of policy definitions. The order of the
// policies does not matter; a definition listed twice counts once, with the
// union of its group names (and, should its names differ, the first in
// sort order). A set mapped before, by content, is answered from the cache.
func (m *Mapper) Map(ctx context.Context, list []Policy) (*Mapping, error) {
	canonical := canonicalize(list)
	key := m.key(canonical)
	if it := m.cache.Get(key); it != nil {
		return it.Value(), nil
	}
	v, err, _ := m.flight.Do(key, func() (any, error) {
		if it := m.cache.Get(key); it != nil {
			return it.Value(), nil
		}
		// Callers waiting on this evaluation share it, so one caller
		// giving up must not fail the others; the result is cached.
		mapping, err := m.evaluate(context.WithoutCancel(ctx), key, canonical)
		if err != nil {
			return nil, err
		}
		m.cache.Set(key, mapping, ttlcache.NoTTL)
		return mapping, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Mapping), nil
}

// canonicalize orders the policies by id, merges duplicates and orders and
// de-duplicates each one's group names, so that equal sets hash equally.
func canonicalize(list []Policy) []Policy {
	index := make(map[string]int, len(list))
	out := make([]Policy, 0, len(list))
	for _, p := range list {
		if i, ok := index[p.ID]; ok {
			out[i].GroupNames = append(out[i].GroupNames, p.GroupNames...)
			// Names of one definition agree; should they not, the
			// choice must not depend on the order.
			if out[i].Name == "" || (p.Name != "" && p.Name < out[i].Name) {
				out[i].Name = p.Name
			}
			continue
		}
		index[p.ID] = len(out)
		out = append(out, Policy{ID: p.ID, Name: p.Name, GroupNames: slices.Clone(p.GroupNames)})
	}
	for i := range out {
		slices.Sort(out[i].GroupNames)
		out[i].GroupNames = slices.Compact(out[i].GroupNames)
		if out[i].GroupNames == nil {
			out[i].GroupNames = []string{}
		}
	}
	slices.SortFunc(out, func(a, b Policy) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// key is the content hash of a canonical policy set together with the Rego
// and the framework data.
func (m *Mapper) key(canonical []Policy) string {
	h := sha256.New()
	writeField(h, m.regoHash)
	writeField(h, m.set.Hash())
	for _, p := range canonical {
		writeField(h, p.ID)
		writeField(h, p.Name)
		writeCount(h, len(p.GroupNames))
		for _, g := range p.GroupNames {
			writeField(h, g)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeField writes s length-prefixed, so that no two field lists hash alike.
func writeField(h hash.Hash, s string) {
	writeCount(h, len(s))
	h.Write([]byte(s))
}

func writeCount(h hash.Hash, n int) {
	var b [binary.MaxVarintLen64]byte
	h.Write(b[:binary.PutUvarint(b[:], uint64(n))])
}

func (m *Mapper) evaluate(ctx context.Context, key string, canonical []Policy) (*Mapping, error) {
	input, err := ast.InterfaceToValue(map[string]any{"policies": canonical})
	if err != nil {
		return nil, err
	}
	rs, err := m.query.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return nil, fmt.Errorf("mapping: evaluate: %w", err)
	}
	mapping := &Mapping{
		hash:     key,
		policies: make(map[string]Policy, len(canonical)),
		matches:  map[string]map[string]map[string]Match{},
	}
	for _, p := range canonical {
		mapping.policies[p.ID] = p
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return mapping, nil
	}
	raw, err := json.Marshal(rs[0].Expressions[0].Value)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &mapping.matches); err != nil {
		return nil, fmt.Errorf("mapping: decode result: %w", err)
	}
	return mapping, nil
}
