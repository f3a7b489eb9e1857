package sdk_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/stewardhq/steward/sdk"
)

func ok(http.ResponseWriter, *http.Request) {}

func runJob(context.Context, *sdk.JobRun) (int64, error) { return 0, nil }

func readNothing(context.Context, sdk.DatasetRequest, func(any) error) error { return nil }

func pathParam(name string) *huma.Param {
	return &huma.Param{Name: name, In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeString}}
}

// validPlugin uses every part of a definition, correctly.
func validPlugin() *sdk.Plugin {
	return &sdk.Plugin{
		Routes: []sdk.Route{
			{Method: "GET", Path: "/api/v1/demo/items", Handler: ok, Operation: &huma.Operation{OperationID: "demo-items",
				Parameters: []*huma.Param{{Name: "limit", In: "query", Schema: &huma.Schema{Type: huma.TypeInteger, Default: 10}}}}},
			{Method: "GET", Path: "/api/v1/demo/items/{id}", Handler: ok, Operation: &huma.Operation{OperationID: "demo-item",
				Parameters: []*huma.Param{pathParam("id")}}},
			{Method: "post", Path: "/api/v1/demo/items", Handler: ok},
			// More specific than /api/v1/demo/items/{id}, so both may be declared.
			{Method: "GET", Path: "/api/v1/demo/items/summary", Handler: ok},
			{Method: "GET", Path: "/api/v1/demo/files/{name...}", Handler: ok, Operation: &huma.Operation{Parameters: []*huma.Param{pathParam("name")}}},
		},
		Fragments: []sdk.Fragment{{Path: "/fragments/demo/summary", Handler: ok}},
		Pages:     []sdk.Page{{Path: "/demo", Handler: ok}, {Path: "/demo/board", Title: "Board", Slot: "demo", Description: "Laid out by the host"}},
		Nav:       []sdk.NavEntry{{Label: "Demo", Path: "/demo"}},
		Jobs: []sdk.Job{{Name: "sync", JobType: "demo", DataDomain: "demo", Schedule: "@every 1h", StaleAfter: 3 * time.Hour, TriggerPath: "/api/v1/demo/sync", Run: runJob},
			{Name: "nightly", JobType: "demo", Schedule: "0 3 * * *", Run: runJob}},
		Datasets: []sdk.Dataset{{Name: "demo.items", Schema: []byte(`{"type":"object"}`), Read: readNothing}},
	}
}

func TestValidateAcceptsAValidPlugin(t *testing.T) {
	if err := validPlugin().Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(p *sdk.Plugin)
		want   []string
	}{
		{"a page with a slot and a handler", func(p *sdk.Plugin) { p.Pages[1].Handler = ok },
			[]string{"page /demo/board: a page with a Slot is laid out by the host and has no Handler"}},
		{"a page with neither", func(p *sdk.Plugin) { p.Pages[1].Slot = "" }, []string{"page /demo/board: Handler is nil"}},
		{"staleness without a domain", func(p *sdk.Plugin) { p.Jobs[1].StaleAfter = time.Hour },
			[]string{`job "nightly": StaleAfter needs a DataDomain and may not be negative`}},
		{"negative staleness", func(p *sdk.Plugin) { p.Jobs[0].StaleAfter = -time.Hour },
			[]string{`job "sync": StaleAfter needs a DataDomain and may not be negative`}},
		{"trigger path outside the API", func(p *sdk.Plugin) { p.Jobs[0].TriggerPath = "/sync" },
			[]string{`job "sync": TriggerPath "/sync" is not a fixed path under /api/`}},
		{"trigger path with a parameter", func(p *sdk.Plugin) { p.Jobs[0].TriggerPath = "/api/v1/demo/{what}/sync" },
			[]string{`job "sync": TriggerPath "/api/v1/demo/{what}/sync" is not a fixed path under /api/`}},
		{"trigger path on a route", func(p *sdk.Plugin) { p.Jobs[0].TriggerPath = "/api/v1/demo/items" },
			[]string{`job "sync": TriggerPath /api/v1/demo/items overlaps route POST /api/v1/demo/items`}},
		{"two jobs on one trigger path", func(p *sdk.Plugin) { p.Jobs[1].TriggerPath = "/api/v1/demo/sync" },
			[]string{`job "nightly": TriggerPath /api/v1/demo/sync is another job's`}},
		{"duplicate route", func(p *sdk.Plugin) {
			p.Routes = append(p.Routes, sdk.Route{Method: "GET", Path: "/api/v1/demo/items", Handler: ok})
		},
			[]string{"route GET /api/v1/demo/items: overlaps route GET /api/v1/demo/items"}},
		{"overlapping route, neither more specific", func(p *sdk.Plugin) {
			p.Routes = append(p.Routes, sdk.Route{Method: "GET", Path: "/api/v1/{area}/items/new", Handler: ok,
				Operation: &huma.Operation{Parameters: []*huma.Param{pathParam("area")}}})
		}, []string{"route GET /api/v1/{area}/items/new: overlaps route GET /api/v1/demo/items/{id}, and neither is more specific"}},
		{"bad method", func(p *sdk.Plugin) { p.Routes[2].Method = "FETCH" }, []string{`route FETCH /api/v1/demo/items: method "FETCH" is not one of`}},
		{"relative path", func(p *sdk.Plugin) { p.Routes[2].Path = "api/v1/x" }, []string{`route post api/v1/x: path "api/v1/x" must start with /`}},
		{"empty segment", func(p *sdk.Plugin) { p.Routes[2].Path = "/api//x" }, []string{"has an empty segment"}},
		{"partial parameter", func(p *sdk.Plugin) { p.Routes[2].Path = "/api/v1/x-{id}" }, []string{`segment "x-{id}" must be a literal or a whole {parameter}`}},
		{"rest not last", func(p *sdk.Plugin) { p.Routes[2].Path = "/api/{rest...}/x" }, []string{"{rest...} must be the last segment"}},
		{"query in path", func(p *sdk.Plugin) { p.Routes[2].Path = "/api/x?y=1" }, []string{"must not hold a query"}},
		{"missing handler", func(p *sdk.Plugin) { p.Routes[0].Handler = nil }, []string{"route GET /api/v1/demo/items: Handler is nil"}},
		{"path parameter undeclared", func(p *sdk.Plugin) { p.Routes[1].Operation.Parameters = nil },
			[]string{`route GET /api/v1/demo/items/{id}: path parameter "id" is not declared in the operation`}},
		{"path parameter without operation", func(p *sdk.Plugin) { p.Routes[1].Operation = nil },
			[]string{`path parameter "id" is not declared: the route has no Operation`}},
		{"declared parameter not in path", func(p *sdk.Plugin) {
			p.Routes[0].Operation.Parameters = append(p.Routes[0].Operation.Parameters, pathParam("tenant_id"))
		}, []string{`route GET /api/v1/demo/items: path parameter "tenant_id" is declared but the path has no {tenant_id}`}},
		{"path parameter not required", func(p *sdk.Plugin) { p.Routes[1].Operation.Parameters[0].Required = false },
			[]string{`path parameter "id" must be Required`}},
		{"parameter twice", func(p *sdk.Plugin) {
			p.Routes[0].Operation.Parameters = append(p.Routes[0].Operation.Parameters, &huma.Param{Name: "limit", In: "query"})
		}, []string{"parameter query.limit is declared twice"}},
		{"parameter location", func(p *sdk.Plugin) { p.Routes[0].Operation.Parameters[0].In = "body" }, []string{`parameter "limit": In "body" is not one of`}},
		{"operation with a reference", func(p *sdk.Plugin) {
			p.Routes[0].Operation.Parameters[0].Schema = &huma.Schema{Ref: "#/components/schemas/Limit"}
		}, []string{"operation: schema $ref"}},
		{"operation id twice", func(p *sdk.Plugin) { p.Routes[1].Operation.OperationID = "demo-items" },
			[]string{`operation id "demo-items" is also the id of route GET /api/v1/demo/items`}},
		{"fragment on a route", func(p *sdk.Plugin) { p.Fragments[0].Path = "/api/v1/demo/items" },
			[]string{"fragment /api/v1/demo/items: overlaps route GET /api/v1/demo/items"}},
		{"page without handler", func(p *sdk.Plugin) { p.Pages[0].Handler = nil }, []string{"page /demo: Handler is nil"}},
		{"page on a fragment", func(p *sdk.Plugin) { p.Pages[0].Path = "/fragments/demo/summary" },
			[]string{"page /fragments/demo/summary: overlaps fragment /fragments/demo/summary"}},
		{"nav", func(p *sdk.Plugin) { p.Nav[0] = sdk.NavEntry{Path: "demo"} }, []string{`nav entry "demo": Label is empty`, `path "demo" must start with /`}},
		{"job without name", func(p *sdk.Plugin) { p.Jobs[0].Name = "" }, []string{"job: Name is empty"}},
		{"job without type", func(p *sdk.Plugin) { p.Jobs[0].JobType = "" }, []string{`job "sync": JobType is empty`}},
		{"job without run", func(p *sdk.Plugin) { p.Jobs[0].Run = nil }, []string{`job "sync": set one of Run and EachTenant`}},
		{"job with both runs", func(p *sdk.Plugin) {
			p.Jobs[0].EachTenant = func(context.Context, *sdk.JobRun, sdk.Tenant) (int64, error) { return 0, nil }
		}, []string{`job "sync": set one of Run and EachTenant`}},
		{"job twice", func(p *sdk.Plugin) { p.Jobs[1].Name = "sync" }, []string{`job "sync": declared twice`}},
		{"bad schedule", func(p *sdk.Plugin) { p.Jobs[0].Schedule = "hourly" }, []string{`job "sync": schedule "hourly"`}},
		{"dataset twice", func(p *sdk.Plugin) { p.Datasets = append(p.Datasets, p.Datasets[0]) }, []string{`dataset "demo.items": declared twice`}},
		{"dataset without name or read", func(p *sdk.Plugin) { p.Datasets[0] = sdk.Dataset{} }, []string{"dataset: Name is empty", `dataset "": Read is nil`}},
		{"dataset schema", func(p *sdk.Plugin) { p.Datasets[0].Schema = []byte("{") }, []string{`dataset "demo.items": Schema is not valid JSON`}},
		{"every mistake at once", func(p *sdk.Plugin) {
			p.Routes[0].Handler = nil
			p.Jobs[0].JobType = ""
			p.Datasets[0].Read = nil
		}, []string{"Handler is nil", "JobType is empty", "Read is nil"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validPlugin()
			tc.change(p)
			err := p.Validate()
			if err == nil {
				t.Fatal("Validate accepted the plugin")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Errorf("Validate reported %d mistakes, want %d:\n%v", len(lines), len(tc.want), err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %v\nwant it to say %q", err, w)
				}
			}
		})
	}
}
