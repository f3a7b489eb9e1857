package plugins

import (
	"cmp"
	"slices"
)

// Fragment is an HTML fragment a plugin renders for the host's pages.
type Fragment struct {
	Plugin         string
	Path           string
	Title          string
	Slot           string
	RefreshSeconds int
}

// Page is a whole page a plugin renders inside the host's layout.
type Page struct {
	Plugin string
	Path   string
	Title  string
}

// NavEntry is a link a plugin adds to the host's navigation.
type NavEntry struct {
	Plugin string
	Label  string
	Path   string
	Order  int
}

// Views are what the declared plugins add to the host's pages. A plugin
// that is down keeps its views, so a page still places its fragments and
// shows them unavailable; a disabled or removed plugin has none.
type Views struct {
	Fragments []Fragment
	Pages     []Page
	Nav       []NavEntry
}

// Views returns the views of every plugin described at least once, in
// plugins.hcl's order; the navigation is sorted by Order, then label.
func (s *Supervisor) Views() Views {
	var v Views
	for _, inst := range s.instances() {
		inst.mu.RLock()
		desc, st := inst.desc, inst.state
		inst.mu.RUnlock()
		if desc == nil || st == StateDisabled || st == StateStopped {
			continue
		}
		for _, f := range desc.Fragments {
			v.Fragments = append(v.Fragments, Fragment{Plugin: inst.name, Path: f.Path, Title: f.Title, Slot: f.Slot, RefreshSeconds: int(f.RefreshSeconds)})
		}
		for _, p := range desc.Pages {
			v.Pages = append(v.Pages, Page{Plugin: inst.name, Path: p.Path, Title: p.Title})
		}
		for _, n := range desc.Nav {
			v.Nav = append(v.Nav, NavEntry{Plugin: inst.name, Label: n.Label, Path: n.Path, Order: int(n.Order)})
		}
	}
	slices.SortStableFunc(v.Nav, func(a, b NavEntry) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(a.Label, b.Label))
	})
	return v
}

// Fragment returns the fragment served at path, if a plugin declares one.
func (v Views) Fragment(path string) (Fragment, bool) {
	i := slices.IndexFunc(v.Fragments, func(f Fragment) bool { return f.Path == path })
	if i < 0 {
		return Fragment{}, false
	}
	return v.Fragments[i], true
}

// InSlot returns the fragments declared for a slot, in plugins.hcl's order.
func (v Views) InSlot(slot string) []Fragment {
	var out []Fragment
	for _, f := range v.Fragments {
		if f.Slot == slot {
			out = append(out, f)
		}
	}
	return out
}
