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
