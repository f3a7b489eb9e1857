package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/robfig/cron/v3"

	"github.com/stewardhq/steward/sdk/protocol"
)

// Validate reports every mistake in what the plugin serves at once, each
// naming what it is about: routes that overlap with neither more specific
// than the other (protocol.MoreSpecific) or have bad paths, path
// parameters the operation does not declare or declares without the path
// having them, missing handlers and run functions, jobs and datasets
// without names or with the same name, schedules cron cannot read, event
// types protocol.CheckEventTypes refuses. The
// SDK refuses to configure a plugin whose factory built one it rejects
// (and plugintest fails the test), so the host never serves one.
func (p *Plugin) Validate() error {
	var v validation
	v.routes(p.Routes)
	v.views(p.Routes, p.Fragments, p.Pages)
	for _, n := range p.Nav {
		if n.Label == "" {
			v.add("nav entry %q: Label is empty", n.Path)
		}
		if !strings.HasPrefix(n.Path, "/") {
			v.add("nav entry %q: path %q must start with /", n.Label, n.Path)
		}
	}
	v.jobs(p.Jobs, p.Routes)
	v.datasets(p.Datasets)
	if err := protocol.CheckEventTypes(eventTypesProto(p.Events)); err != nil {
		v.add("%v", err)
	}
	return errors.Join(v.errs...)
}

type validation struct{ errs []error }

func (v *validation) add(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

func (v *validation) routes(routes []Route) {
	opIDs := map[string]string{}
	for i, r := range routes {
		name := fmt.Sprintf("route %s %s", r.Method, r.Path)
		if r.register != nil || r.declErr != nil {
			op, err := typedOperation(r)
			if err != nil {
				v.add("%s: %v", name, err)
				continue
			}
			r.Operation, r.Handler = op, func(http.ResponseWriter, *http.Request) {}
		}
		method := strings.ToUpper(r.Method)
		if !slices.Contains(methods, method) {
			v.add("%s: method %q is not one of %s", name, r.Method, strings.Join(methods, ", "))
		}
		patternOK := true
		if err := protocol.CheckPattern(r.Path); err != nil {
			v.add("%s: %v", name, err)
			patternOK = false
		}
		if r.Handler == nil {
			v.add("%s: Handler is nil", name)
		}
		if patternOK {
			for _, o := range routes[:i] {
				if strings.EqualFold(o.Method, r.Method) && protocol.CheckPattern(o.Path) == nil && protocol.PatternsConflict(o.Path, r.Path) {
					v.add("%s: overlaps route %s %s, and neither is more specific", name, o.Method, o.Path)
				}
			}
		}
		v.operation(name, r, patternOK)
		if r.Operation != nil && r.Operation.OperationID != "" {
			if other, dup := opIDs[r.Operation.OperationID]; dup {
				v.add("%s: operation id %q is also the id of %s", name, r.Operation.OperationID, other)
			}
			opIDs[r.Operation.OperationID] = name
		}
	}
}

var paramLocations = []string{"query", "path", "header", "cookie"}

// operation checks that a route's operation travels to the host and agrees
// with its path: every {parameter} of the path is a required path
// parameter of the operation, and the operation has no other.
func (v *validation) operation(name string, r Route, patternOK bool) {
	var inPath []string
	if patternOK {
		inPath = protocol.PathParams(r.Path)
	}
	op := r.Operation
	if op == nil {
		for _, p := range inPath {
			v.add("%s: path parameter %q is not declared: the route has no Operation", name, p)
		}
		return
	}
	declared := map[string]bool{}
	for _, p := range op.Parameters {
		if p == nil {
			v.add("%s: a parameter is nil", name)
			continue
		}
		if !slices.Contains(paramLocations, p.In) {
			v.add("%s: parameter %q: In %q is not one of %s", name, p.Name, p.In, strings.Join(paramLocations, ", "))
			continue
		}
		key := p.In + "." + p.Name
		if declared[key] {
			v.add("%s: parameter %s is declared twice", name, key)
		}
		declared[key] = true
		if p.In != "path" {
			continue
		}
		if patternOK && !slices.Contains(inPath, p.Name) {
			v.add("%s: path parameter %q is declared but the path has no {%s}", name, p.Name, p.Name)
		}
		if !p.Required {
			v.add("%s: path parameter %q must be Required", name, p.Name)
		}
		if p.Schema != nil && p.Schema.Default != nil {
			v.add("%s: path parameter %q cannot have a default", name, p.Name)
		}
	}
	for _, p := range inPath {
		if !declared["path."+p] {
			v.add("%s: path parameter %q is not declared in the operation", name, p)
		}
	}
	b, err := json.Marshal(op)
	if err == nil {
		_, err = protocol.DecodeOperation(b)
	}
	if err != nil {
		v.add("%s: operation: %v", name, err)
	}
}

// views checks fragments and pages, which are served on GET beside the
// routes and so must not overlap a GET route or each other.
func (v *validation) views(routes []Route, fragments []Fragment, pages []Page) {
	type view struct {
		kind, path string
		handler    bool
	}
	var views []view
	for _, f := range fragments {
		views = append(views, view{"fragment", f.Path, f.Handler != nil})
	}
	for _, p := range pages {
		views = append(views, view{"page", p.Path, p.Handler != nil || p.Slot != ""})
		if p.Handler != nil && p.Slot != "" {
			v.add("page %s: a page with a Slot is laid out by the host and has no Handler", p.Path)
		}
	}
	for i, w := range views {
		name := w.kind + " " + w.path
		if err := protocol.CheckPattern(w.path); err != nil {
			v.add("%s: %v", name, err)
			continue
		}
		if !w.handler {
			v.add("%s: Handler is nil", name)
		}
		for _, o := range views[:i] {
			if protocol.CheckPattern(o.path) == nil && protocol.PatternsOverlap(o.path, w.path) {
				v.add("%s: overlaps %s %s", name, o.kind, o.path)
			}
		}
		for _, r := range routes {
			if strings.EqualFold(r.Method, "GET") && protocol.CheckPattern(r.Path) == nil && protocol.PatternsOverlap(r.Path, w.path) {
				v.add("%s: overlaps route GET %s", name, r.Path)
			}
		}
	}
}

// unique reports an empty or repeated name among the declarations of one
// kind, and returns how messages name the declaration.
func (v *validation) unique(kind, name string, seen map[string]bool) string {
	if name == "" {
		v.add("%s: Name is empty", kind)
	} else if seen[name] {
		v.add("%s %q: declared twice", kind, name)
	}
	seen[name] = true
	return fmt.Sprintf("%s %q", kind, name)
}

func (v *validation) jobs(jobs []Job, routes []Route) {
	seen, triggers := map[string]bool{}, map[string]bool{}
	for _, j := range jobs {
		name := v.unique("job", j.Name, seen)
		if j.StaleAfter < 0 || (j.StaleAfter > 0 && j.DataDomain == "") {
			v.add("%s: StaleAfter needs a DataDomain and may not be negative", name)
		}
		if j.TriggerPath != "" {
			v.triggerPath(name, j.TriggerPath, routes, triggers)
		}
		if j.JobType == "" {
			v.add("%s: JobType is empty", name)
		}
		if (j.Run == nil) == (j.EachTenant == nil) {
			v.add("%s: set one of Run and EachTenant", name)
		}
		if j.Schedule != "" {
			if _, err := cron.ParseStandard(j.Schedule); err != nil {
				v.add("%s: schedule %q: %v", name, j.Schedule, err)
			}
		}
	}
}

// triggerPath checks a job's alias trigger: a fixed path under /api/ that
// no route of the plugin's and no other job's alias answers POST on.
func (v *validation) triggerPath(name, path string, routes []Route, seen map[string]bool) {
	if err := protocol.CheckPattern(path); err != nil || strings.Contains(path, "{") || !strings.HasPrefix(path, "/api/") {
		v.add("%s: TriggerPath %q is not a fixed path under /api/", name, path)
		return
	}
	if seen[path] {
		v.add("%s: TriggerPath %s is another job's", name, path)
	}
	seen[path] = true
	for _, r := range routes {
		if strings.EqualFold(r.Method, "POST") && protocol.CheckPattern(r.Path) == nil && protocol.PatternsOverlap(r.Path, path) {
			v.add("%s: TriggerPath %s overlaps route POST %s", name, path, r.Path)
		}
	}
}

func (v *validation) datasets(datasets []Dataset) {
	seen := map[string]bool{}
	for _, d := range datasets {
		name := v.unique("dataset", d.Name, seen)
		if d.Read == nil {
			v.add("%s: Read is nil", name)
		}
		if len(d.Schema) > 0 && !json.Valid(d.Schema) {
			v.add("%s: Schema is not valid JSON", name)
		}
	}
}

// migrationName is the file name the host's migrator applies: a numeric
// version, a lower-case name, an optional dialect and transaction mark, and
// the direction.
var migrationName = regexp.MustCompile(`^[0-9]{1,14}_[0-9a-z_-]+(\.(sqlite|postgres))?(\.tx)?\.(up|down)\.sql$`)

func (v *validation) migrations(fsys fs.FS) {
	if fsys == nil {
		return
	}
	folder := ""
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".sql") {
			return err
		}
		if folder == "" {
			folder = path.Dir(p)
		}
		if path.Dir(p) != folder {
			v.add("migration %s: not in %s with the first one; keep the migrations in one folder", p, folder)
		} else if !migrationName.MatchString(d.Name()) {
			v.add("migration %s: name must look like 0001_name.up.sql or 0001_name.postgres.down.sql", p)
		}
		return nil
	})
	if err != nil {
		v.add("migrations: %v", err)
	}
}
