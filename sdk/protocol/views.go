package protocol

import (
	"cmp"
	"encoding/json"
	"strings"

	pluginv1 "github.com/stewardhq/steward/proto/steward/plugin/v1"
)

// ParamTenantID is the query parameter that scopes a fragment or page to
// one tenant. The host adds it to every fragment a page places, and
// refuses one the caller may not see before the plugin's handler runs.
const ParamTenantID = "tenant_id"

// OpenAPI extensions of the operations AllRoutes adds for views; the host's
// layout reads them back from the route table.
const (
	ExtFragment = "x-steward-fragment"
	ExtPage     = "x-steward-page"
	// ExtTrigger marks the route AllRoutes adds for a job's trigger path,
	// which the host answers itself by queueing the job.
	ExtTrigger = "x-steward-trigger"
)

// AllRoutes is every route a plugin serves: the routes it declared, then a
// GET route for each fragment and page. A fragment or page is an
// authenticated, tenant-scoped HTML route like any other, so the host
// routes, authenticates, validates and documents it with the same code; its
// OpenAPI operation declares the tenant_id parameter, the text/html answer
// and, in an extension, the fragment's slot, title and refresh interval or
// the page's title. The host's route table and the test harness both route
// what it returns.
func AllRoutes(desc *pluginv1.DescribeResponse) []*pluginv1.Route {
	out := make([]*pluginv1.Route, 0, len(desc.Routes)+len(desc.Fragments)+len(desc.Pages))
	out = append(out, desc.Routes...)
	for _, f := range desc.Fragments {
		out = append(out, viewRoute(desc.Name, ViewFragment, f.Path, f.Title, ExtFragment, map[string]any{
			"title": f.Title, "slot": f.Slot, "refresh_seconds": f.RefreshSeconds,
		}))
	}
	for _, p := range desc.Pages {
		meta := map[string]any{"title": p.Title}
		if p.Slot != "" {
			meta["slot"], meta["description"] = p.Slot, p.Description
		}
		out = append(out, viewRoute(desc.Name, ViewPage, p.Path, p.Title, ExtPage, meta))
	}
	for _, j := range desc.Jobs {
		if j.TriggerPath != "" {
			out = append(out, triggerRoute(desc.Name, j))
		}
	}
	return out
}

// triggerRoute is the POST route of a job's trigger path: admin only, and
// answered by the host as its own sync route answers the job's type.
func triggerRoute(plugin string, j *pluginv1.Job) *pluginv1.Route {
	// A job without a type of its own is triggered by its data domain,
	// as the host's scheduler reads it.
	jobType := cmp.Or(j.JobType, j.DataDomain)
	str := map[string]any{"type": "string"}
	op := map[string]any{
		"operationId": plugin + "-trigger-" + slug(j.TriggerPath),
		"summary":     "Trigger the " + jobType + " sync",
		"description": "The same as POST /api/v1/sync/" + jobType + ": answers 202 at once; follow the run in /api/v1/sync/history.",
		"tags":        []string{"sync"},
		"responses": map[string]any{
			"202": map[string]any{"description": "The sync is queued", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
				"type": "object", "additionalProperties": false, "required": []string{"job_id", "job_type", "status", "job_ids"},
				"properties": map[string]any{"job_id": str, "job_type": str, "status": map[string]any{"type": "string", "enum": []string{"queued"}},
					"job_ids": map[string]any{"type": []string{"array", "null"}, "items": str, "description": "Every run queued, when several plugins provide the job type"}},
			}}}},
			"404": map[string]any{"description": "No enabled plugin provides the job type"},
		},
		ExtTrigger: map[string]any{"job_type": jobType},
	}
	b, _ := json.Marshal(op)
	return &pluginv1.Route{Method: "POST", Path: j.TriggerPath, Auth: pluginv1.Auth_AUTH_ADMIN, OpenapiOperation: b}
}

func viewRoute(plugin, kind, path, title, ext string, meta map[string]any) *pluginv1.Route {
	summary := title
	if summary == "" {
		summary = path
	}
	op := map[string]any{
		"operationId": plugin + "-" + kind + "-" + slug(path),
		"summary":     summary,
		"description": "An HTML " + kind + " of the " + plugin + " plugin, which the host's pages place in their layout. " +
			"A browser without a session is sent to sign in (303 to /login?next=…); another caller without credentials gets 401.",
		"tags": []string{plugin},
		"parameters": []map[string]any{{
			"name": ParamTenantID, "in": "query", "description": "Scopes the " + kind + " to one tenant the caller may see",
			"schema": map[string]any{"type": "string", "maxLength": 64},
		}},
		"responses": map[string]any{
			"200": map[string]any{"description": "The " + kind + " as HTML", "content": map[string]any{"text/html": map[string]any{"schema": map[string]any{"type": "string"}}}},
			"303": map[string]any{"description": "A browser without a session is sent to sign in: Location is /login?next=<this path>",
				"headers": map[string]any{"Location": map[string]any{"schema": map[string]any{"type": "string"}}}},
			"403": map[string]any{"description": "The caller may not see the tenant"},
		},
		ext: meta,
	}
	b, _ := json.Marshal(op)
	return &pluginv1.Route{Method: "GET", Path: path, Auth: pluginv1.Auth_AUTH_USER, TenantScoped: true, OpenapiOperation: b,
		TenantInput: &pluginv1.TenantInput{In: TenantInQuery, Name: ParamTenantID}}
}

// slug turns a path into an operation id's part: /partials/resource-stats
// becomes partials-resource-stats.
func slug(path string) string {
	var b strings.Builder
	for _, r := range strings.Trim(path, "/") {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + 'a' - 'A')
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}
