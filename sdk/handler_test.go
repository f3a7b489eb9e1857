package sdk_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
)

// seen is what a handler saw of its request.
type seen struct {
	Query  map[string][]string `json:"query"`
	Region string              `json:"region"`
	ID     string              `json:"id"`
}

func defaultsPlugin() *sdk.Plugin {
	see := func(w http.ResponseWriter, r *http.Request) {
		sdk.WriteJSON(w, http.StatusOK, seen{Query: r.URL.Query(), Region: r.Header.Get("X-Region"), ID: r.PathValue("id")})
	}
	return &sdk.Plugin{Routes: []sdk.Route{
		{Method: "GET", Path: "/things/{id}", Handler: see, Operation: &huma.Operation{Parameters: []*huma.Param{
			{Name: "id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeString}},
			{Name: "location", In: "query", Schema: &huma.Schema{Type: huma.TypeString, Default: "eastus"}},
			{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Default: 100.0}},
			{Name: "ratio", In: "query", Schema: &huma.Schema{Type: huma.TypeNumber, Default: 0.25}},
			{Name: "fresh", In: "query", Schema: &huma.Schema{Type: huma.TypeBoolean, Default: true}},
			{Name: "kinds", In: "query", Schema: &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString}, Default: []any{"vm", "disk"}}},
			{Name: "offset", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger}},
			{Name: "X-Region", In: "header", Schema: &huma.Schema{Type: huma.TypeString, Default: "westeurope"}},
		}}},
		{Method: "GET", Path: "/plain/", Handler: see},
	}}
}

func TestHandlerAppliesParameterDefaults(t *testing.T) {
	h := defaultsPlugin().HTTPHandler()
	for _, tc := range []struct {
		name   string
		target string
		header map[string]string
		want   map[string][]string
		region string
	}{
		{"all omitted", "/things/a1", nil,
			map[string][]string{"location": {"eastus"}, "limit": {"100"}, "ratio": {"0.25"}, "fresh": {"true"}, "kinds": {"vm", "disk"}}, "westeurope"},
		{"given values win", "/things/a1?location=westus&limit=5&kinds=ip&offset=3", map[string]string{"X-Region": "northeurope"},
			map[string][]string{"location": {"westus"}, "limit": {"5"}, "ratio": {"0.25"}, "fresh": {"true"}, "kinds": {"ip"}, "offset": {"3"}}, "northeurope"},
		{"empty counts as omitted", "/things/a1?location=&fresh=false", nil,
			map[string][]string{"location": {"eastus"}, "limit": {"100"}, "ratio": {"0.25"}, "fresh": {"false"}, "kinds": {"vm", "disk"}}, "westeurope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tc.target, nil)
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			var got seen
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("%d %s: %v", w.Code, w.Body, err)
			}
			if got.ID != "a1" {
				t.Errorf("path value id = %q, want a1", got.ID)
			}
			if got.Region != tc.region {
				t.Errorf("header X-Region = %q, want %q", got.Region, tc.region)
			}
			if len(got.Query) != len(tc.want) {
				t.Errorf("query = %v, want %v", got.Query, tc.want)
			}
			for k, v := range tc.want {
				if g := got.Query[k]; len(g) != len(v) || (len(v) > 0 && g[0] != v[0]) || (len(v) > 1 && g[1] != v[1]) {
					t.Errorf("query %s = %q, want %q", k, g, v)
				}
			}
		})
	}
}

// The handler routes as the host does: methods are distinct, and a path
// ending in a slash matches only itself.
func TestHandlerRoutesAsTheHost(t *testing.T) {
	h := defaultsPlugin().HTTPHandler()
	for _, tc := range []struct {
		method, target string
		status         int
	}{
		{"GET", "/plain/", http.StatusOK},
		{"GET", "/plain/deeper", http.StatusNotFound},
		{"GET", "/things/a1/more", http.StatusNotFound},
		{"POST", "/things/a1", http.StatusMethodNotAllowed},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(tc.method, tc.target, nil))
		if w.Code != tc.status {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.target, w.Code, tc.status)
		}
	}
}
