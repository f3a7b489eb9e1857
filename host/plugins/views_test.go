package plugins

import (
	"testing"
)

// TestViewsOfPlugins: a started plugin's fragments, pages and navigation
// reach the host's pages, its views are routes of the table, and a
// disabled plugin has none.
func TestViewsOfPlugins(t *testing.T) {
	sup := startOnSQLite(t, testDecl(testpluginBinary(t), "socket"))
	v := sup.Views()
	f, ok := v.Fragment("/partials/testplugin-items")
	if !ok || f.Plugin != "testplugin" || f.Slot != "dashboard" || f.Title != "Items" || f.RefreshSeconds != 30 {
		t.Fatalf("fragment %+v, %v", f, ok)
	}
	if got := v.InSlot("dashboard"); len(got) != 1 || got[0].Path != f.Path {
		t.Errorf("dashboard slot %+v", got)
	}
	if len(v.InSlot("elsewhere")) != 0 {
		t.Error("a fragment placed in a slot it did not name")
	}
	if len(v.Pages) != 1 || v.Pages[0].Path != "/testplugin" || len(v.Nav) != 1 || v.Nav[0].Label != "Test plugin" || v.Nav[0].Order != 90 {
		t.Errorf("pages %+v, nav %+v", v.Pages, v.Nav)
	}
	for _, path := range []string{"/partials/testplugin-items", "/testplugin"} {
		if r, _ := sup.Routes().Match("GET", path); r == nil || r.Plugin != "testplugin" || !r.TenantScoped {
			t.Errorf("GET %s: route %+v", path, r)
		}
	}
	inst, _ := sup.Instance("testplugin")
	inst.mu.Lock()
	inst.state = StateDisabled
	inst.mu.Unlock()
	if v := sup.Views(); len(v.Fragments)+len(v.Pages)+len(v.Nav) != 0 {
		t.Errorf("a disabled plugin's views: %+v", v)
	}
}
