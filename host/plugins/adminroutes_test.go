package plugins_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stewardhq/steward/host/app/apptest"
)

// The admin routes on a host that declares no plugin; the e2e suite
// reloads a running one.
func TestAdminRoutes(t *testing.T) {
	h := apptest.Start(t, apptest.Options{})
	admin := h.Login()
	_, user := h.User("user@example.com")

	if a := h.Do(http.MethodGet, "/api/v1/plugins", admin, "", ""); a.Expect(t, "plugins-list", http.StatusOK) && strings.TrimSpace(string(a.Body)) != "[]" {
		t.Errorf("plugins-list: %s", a.Body)
	}
	a := h.Do(http.MethodPost, "/api/v1/plugins/absent/reload", admin, "", "")
	if a.Expect(t, "reload an undeclared plugin", http.StatusNotFound) && a.Problem(t).Detail != "no plugin named absent" {
		t.Errorf("reload an undeclared plugin: %s", a.Body)
	}
	if es := h.Audit("plugin.reload.failure"); len(es) != 0 {
		t.Errorf("an unknown plugin's reload is audited: %+v", es)
	}
	if a := h.Do(http.MethodPost, "/api/v1/plugins/"+strings.Repeat("x", 101)+"/reload", admin, "", ""); a.Expect(t, "a name over 100 characters", http.StatusUnprocessableEntity) && !a.Problem(t).Names("path.name") {
		t.Errorf("a name over 100 characters: %s", a.Body)
	}
	for _, r := range []struct{ method, path string }{{http.MethodGet, "/api/v1/plugins"}, {http.MethodPost, "/api/v1/plugins/absent/reload"}} {
		h.Do(r.method, r.path, user, "", "").Expect(t, r.path+" as a standard user", http.StatusForbidden)
		h.Do(r.method, r.path, "", "", "").Expect(t, r.path+" anonymous", http.StatusUnauthorized)
	}
}
