package protocol_test

import (
	"errors"
	"net/http"
	"testing"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
	"github.com/stewardhq/steward/sdk/protocol"
)

func TestParseRoutes(t *testing.T) {
	routes, err := protocol.ParseRoutes([]*pluginv1.Route{
		{Method: "get", Path: "/x/{id}", OpenapiOperation: []byte(`{"parameters":[{"name":"limit","in":"query","schema":{"type":"integer"}}]}`)},
		{Method: "POST", Path: "/x/{id}", Auth: pluginv1.Auth_AUTH_ADMIN},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := routes[0]; r.Method != "GET" || r.Auth != pluginv1.Auth_AUTH_USER || r.Operation.Method != "GET" || r.Operation.Path != "/x/{id}" || len(r.Params) != 1 {
		t.Errorf("first route = %+v", r)
	}
	if params, ok := routes[0].Match("GET", protocol.SplitPath("/x/42")); !ok || params["id"] != "42" {
		t.Errorf("match = %v %v", params, ok)
	}
	if _, ok := routes[0].Match("get", protocol.SplitPath("/x/42")); ok {
		t.Error("a lower-case request method matched, which the host's router does not")
	}

	_, err = protocol.ParseRoutes([]*pluginv1.Route{{Method: "get", Path: "/y/{id}"}, {Method: "GET", Path: "/y/{key}"}})
	var own *protocol.OwnConflictError
	if !errors.As(err, &own) || own.Route.Pattern != "/y/{key}" || own.Earlier != "/y/{id}" {
		t.Errorf("routes differing in the method's case: %v, want an OwnConflictError", err)
	}
	// A literal beside a parameter is more specific, and wins its requests.
	routes, err = protocol.ParseRoutes([]*pluginv1.Route{{Method: "GET", Path: "/y/{id}"}, {Method: "GET", Path: "/y/new"}})
	if err != nil || !routes[1].Wins(routes[0]) || routes[0].Wins(routes[1]) {
		t.Errorf("/y/new beside /y/{id}: %v", err)
	}
	for _, bad := range []*pluginv1.Route{
		{Method: "GET", Path: "y"},
		{Method: "GET", Path: "/y", OpenapiOperation: []byte(`{"parameters":[{"name":"a","in":"query","schema":{"$ref":"#/components/schemas/A"}}]}`)},
		{Method: "GET", Path: "/y", OpenapiOperation: []byte(`not json`)},
	} {
		if _, err := protocol.ParseRoutes([]*pluginv1.Route{bad}); err == nil {
			t.Errorf("%s %s %s: accepted", bad.Method, bad.Path, bad.OpenapiOperation)
		}
	}
}

func TestAdmit(t *testing.T) {
	user := &pluginv1.Principal{Id: "u1"}
	admin := &pluginv1.Principal{Id: "u0", IsAdmin: true}
	for _, tc := range []struct {
		auth      pluginv1.Auth
		principal *pluginv1.Principal
		status    int
	}{
		{pluginv1.Auth_AUTH_NONE, nil, 0},
		{pluginv1.Auth_AUTH_USER, nil, http.StatusUnauthorized},
		{pluginv1.Auth_AUTH_USER, user, 0},
		{pluginv1.Auth_AUTH_ADMIN, nil, http.StatusUnauthorized},
		{pluginv1.Auth_AUTH_ADMIN, user, http.StatusForbidden},
		{pluginv1.Auth_AUTH_ADMIN, admin, 0},
	} {
		r := &protocol.Route{Auth: tc.auth}
		if status, detail := r.Admit(tc.principal); status != tc.status || (status != 0) != (detail != "") {
			t.Errorf("%v for %v: %d %q, want %d", tc.auth, tc.principal, status, detail, tc.status)
		}
	}
}

// TestAllRoutesOfJobsAndSlotPages: a job's trigger path becomes an admin
// route the host answers by queueing the job, and a page with a slot one
// the host lays out; a plugin cannot mark a route of its own that anyone
// may call as a trigger.
func TestAllRoutesOfJobsAndSlotPages(t *testing.T) {
	desc := &pluginv1.DescribeResponse{Name: "mail",
		Pages: []*pluginv1.Page{{Path: "/mail", Title: "Mail", Slot: "mail", Description: "Posture"}, {Path: "/mail/own", Title: "Own"}},
		Jobs:  []*pluginv1.Job{{Name: "posture", DataDomain: "mail", TriggerPath: "/api/v1/mail/sync"}, {Name: "other", JobType: "other"}},
		Routes: []*pluginv1.Route{{Method: "POST", Path: "/api/v1/mail/forged", Auth: pluginv1.Auth_AUTH_USER,
			OpenapiOperation: []byte(`{"x-steward-trigger": {"job_type": "costs"}}`)}},
	}
	routes, err := protocol.ParseRoutes(protocol.AllRoutes(desc))
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]*protocol.Route{}
	for _, r := range routes {
		byPath[r.Method+" "+r.Pattern] = r
	}
	if r := byPath["GET /mail"]; r == nil || r.View != protocol.ViewPage || r.Slot != "mail" || r.Description != "Posture" || r.Title != "Mail" {
		t.Errorf("the slot page: %+v", r)
	}
	if r := byPath["GET /mail/own"]; r == nil || r.Slot != "" {
		t.Errorf("the plugin's own page: %+v", r)
	}
	if r := byPath["POST /api/v1/mail/sync"]; r == nil || r.TriggerJob != "mail" || r.Auth != pluginv1.Auth_AUTH_ADMIN || r.Operation.Responses["202"] == nil {
		t.Errorf("the trigger route: %+v", r)
	}
	if r := byPath["POST /api/v1/mail/forged"]; r == nil || r.TriggerJob != "" {
		t.Errorf("a user route marked as a trigger: %+v", r)
	}
	if len(routes) != 4 {
		t.Errorf("%d routes, want the declared one, two pages and one trigger", len(routes))
	}
}
