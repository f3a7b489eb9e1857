// Package frameworks loads the regulatory frameworks that policy findings are
// mapped to: the built-in definitions embedded from the policies folder and
// any a deployment adds as data files, validated strictly and hashed so that
// mapping results can be cached by content.
package frameworks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/stewardhq/steward/plugins/compliance/policies"
)

// maxFileSize bounds one definition file; the largest built-in is far below.
const maxFileSize = 4 << 20

// Framework is one framework definition. A file holds one, as the value of
// a single key that is its id, so that loading the policies folder into OPA
// places it at data.frameworks.<id>.
type Framework struct {
	// ID names the framework in routes and matches the file name.
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
	// Description says in a sentence or two what the framework covers.
	Description string `json:"description"`
	// Source names the publication the ids and titles come from.
	Source string `json:"source"`
	// GroupNames are the forms of Azure policy group names that map a
	// policy to a control directly (tier 1).
	GroupNames []GroupName `json:"group_names"`
	// Domains optionally group the categories one level higher, as the
	// CSF's functions do.
	Domains []Domain `json:"domains,omitempty"`
	// KeywordMatching optionally tunes tier 2 for the whole framework.
	KeywordMatching *KeywordMatching `json:"keyword_matching,omitempty"`
	Categories      []Category       `json:"categories"`
	Controls        []Control        `json:"controls"`

	file  string
	hash  string
	index map[string]int // Normalize(control id) -> position in Controls
}

// GroupName is one initiative's group-name form: Prefix followed by a
// control id, compared after Normalize.
type GroupName struct {
	Prefix string `json:"prefix"`
	// Example is a real group name of this form; it must name a control.
	Example string `json:"example"`
	// Initiative names the built-in policy set that uses the form.
	Initiative string `json:"initiative"`
}

// Domain is a group of categories, such as a CSF function.
type Domain struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Category groups controls (a SOC 2 series, a CSF category, an ISO theme,
// a CIS section).
type Category struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Domain is the id of the category's domain, required exactly when the
	// framework has domains.
	Domain string `json:"domain,omitempty"`
}

// Control is one criterion, subcategory, control or recommendation.
type Control struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Category    string `json:"category"`
	// Keywords are the tier-2 keyword sets: a policy whose name contains
	// every word of a set maps to the control. Words are stored in the
	// canonical form Words produces.
	Keywords [][]string `json:"keywords"`
	// NegativeKeywords are keyword sets that, when one matches a policy
	// name, keep every keyword set of the control from matching it.
	NegativeKeywords [][]string `json:"negative_keywords,omitempty"`
	// Overrides decide the keyword tier for named policies, whatever their
	// keywords say.
	Overrides []Override `json:"overrides,omitempty"`
}

// KeywordMatching holds a framework's tier-2 settings.
type KeywordMatching struct {
	// StopWords are skipped when checking whether a keyword set is a
	// phrase of a policy name.
	StopWords []string `json:"stop_words,omitempty"`
	// MinScore is the score a matching keyword set must reach: one per
	// word, one more when the set is a phrase of the name. 1 or absent
	// counts every match.
	MinScore int `json:"min_score,omitempty"`
}

// Override maps, or refuses to map, one policy to the control at tier 2,
// for a case the keywords cannot decide.
type Override struct {
	// Policy is the policy's display name, compared by its words.
	Policy string `json:"policy"`
	// Match adds the policy to the control when true and keeps it off
	// when false.
	Match bool `json:"match"`
	// Reason says why, for the reviewer and the explanation of a match.
	Reason string `json:"reason"`
}

// File is where the framework was loaded from, for messages.
func (f *Framework) File() string { return f.file }

// Hash is the hex SHA-256 of the framework's canonical JSON encoding.
func (f *Framework) Hash() string { return f.hash }

// Control returns the control whose id has the same Normalize key as id.
func (f *Framework) Control(id string) (*Control, bool) {
	i, ok := f.index[Normalize(id)]
	if !ok {
		return nil, false
	}
	return &f.Controls[i], true
}

// ControlForGroup returns the control a policy group name maps to at tier 1:
// the name must be one of the framework's prefixes followed by a control id,
// both compared after Normalize. A group naming a category, or no control,
// maps to nothing.
func (f *Framework) ControlForGroup(group string) (*Control, bool) {
	key := Normalize(group)
	for _, g := range f.GroupNames {
		prefix := Normalize(g.Prefix) + "."
		if rest, ok := strings.CutPrefix(key, prefix); ok {
			if c, ok := f.Control(rest); ok {
				return c, true
			}
		}
	}
	return nil, false
}

// Set is a validated collection of frameworks. It is read-only once loaded.
type Set struct {
	frameworks []*Framework
	hash       string
}

// All returns the frameworks ordered by id.
func (s *Set) All() []*Framework { return slices.Clone(s.frameworks) }

// Get returns the framework with the given id.
func (s *Set) Get(id string) (*Framework, bool) {
	i, ok := slices.BinarySearchFunc(s.frameworks, id, func(f *Framework, id string) int {
		return strings.Compare(f.ID, id)
	})
	if !ok {
		return nil, false
	}
	return s.frameworks[i], true
}

// Hash is the hex SHA-256 over the ids and hashes of all frameworks, so it
// changes when any definition does.
func (s *Set) Hash() string { return s.hash }

// Data returns the frameworks keyed by id: the document to place at
// data.frameworks when evaluating policies.
func (s *Set) Data() map[string]*Framework {
	m := make(map[string]*Framework, len(s.frameworks))
	for _, f := range s.frameworks {
		m[f.ID] = f
	}
	return m
}

// Builtin loads the frameworks shipped with the plugin.
func Builtin() (*Set, error) {
	sub, err := fs.Sub(policies.FS, "frameworks")
	if err != nil {
		return nil, err
	}
	return load(sub, "builtin:")
}

// Load reads and validates every *.json file at the top of fsys. Errors name
// the file and the field; all problems found are returned together.
func Load(fsys fs.FS) (*Set, error) { return load(fsys, "") }

// LoadDir is Load on a folder of the file system.
func LoadDir(dir string) (*Set, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	return load(os.DirFS(dir), dir+string(os.PathSeparator))
}

// WithDir loads the built-in frameworks and, when dir is not empty, the
// deployment's own from dir. A deployment file may add frameworks but not
// replace a built-in one: a framework id means the same definition in every
// deployment, so a file with a built-in id is refused.
func WithDir(dir string) (*Set, error) {
	builtin, err := Builtin()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return builtin, nil
	}
	extra, err := LoadDir(dir)
	if err != nil {
		return nil, err
	}
	return Merge(builtin, extra)
}

// Merge combines sets; two frameworks with the same id are an error naming
// both files.
func Merge(sets ...*Set) (*Set, error) {
	seen := map[string]*Framework{}
	var all []*Framework
	var errs []error
	for _, s := range sets {
		for _, f := range s.frameworks {
			if prev, ok := seen[f.ID]; ok {
				errs = append(errs, &Error{File: f.file, Field: "id",
					Message: fmt.Sprintf("framework %q is already defined by %s; use another id", f.ID, prev.file)})
				continue
			}
			seen[f.ID] = f
			all = append(all, f)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return newSet(all), nil
}

func newSet(all []*Framework) *Set {
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	h := sha256.New()
	for _, f := range all {
		fmt.Fprintf(h, "%s\x00%s\n", f.ID, f.hash)
	}
	return &Set{frameworks: all, hash: hex.EncodeToString(h.Sum(nil))}
}

func load(fsys fs.FS, origin string) (*Set, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var all []*Framework
	var errs []error
	for _, name := range names {
		file := origin + name
		f, ferrs := loadFile(fsys, name, file)
		if len(ferrs) > 0 {
			errs = append(errs, ferrs...)
			continue
		}
		all = append(all, f)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return newSet(all), nil
}

func loadFile(fsys fs.FS, name, file string) (*Framework, []error) {
	fail := func(field, format string, args ...any) []error {
		return []error{&Error{File: file, Field: field, Message: fmt.Sprintf(format, args...)}}
	}
	info, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, fail("", "%v", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fail("", "not a regular file")
	}
	if info.Size() > maxFileSize {
		return nil, fail("", "file is larger than %d bytes", maxFileSize)
	}
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fail("", "%v", err)
	}
	if len(data) > maxFileSize {
		return nil, fail("", "file is larger than %d bytes", maxFileSize)
	}
	key, f, derr := decode(data)
	if derr != nil {
		derr.File = file
		return nil, []error{derr}
	}
	f.file = file
	f.index = make(map[string]int, len(f.Controls))
	for i, c := range f.Controls {
		if _, dup := f.index[Normalize(c.ID)]; !dup {
			f.index[Normalize(c.ID)] = i
		}
	}
	if errs := f.validate(strings.TrimSuffix(path.Base(name), ".json"), key); len(errs) > 0 {
		return nil, errs
	}
	canonical, err := json.Marshal(f)
	if err != nil {
		return nil, fail("", "%v", err)
	}
	sum := sha256.Sum256(canonical)
	f.hash = hex.EncodeToString(sum[:])
	return f, nil
}
