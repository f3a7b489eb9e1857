package arm_test

import (
	"fmt"
	"testing"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

const graphPath = "/providers/Microsoft.ResourceGraph/resources?api-version=2024-04-01"

// graphEnv serves five disks and a machine in subscription A, two disks in
// B, and a disk in a tenant that delegates nothing.
func graphEnv(t *testing.T) *env {
	w := lighthouseWorld()
	add := func(sub, typ, name string) {
		provider := map[string]string{"microsoft.compute/disks": "Microsoft.Compute/disks", "microsoft.compute/virtualmachines": "Microsoft.Compute/virtualMachines"}[typ]
		w.Resources = append(w.Resources, world.Resource{SubscriptionID: sub, Type: typ, Name: name, Location: "westeurope",
			ID:   "/subscriptions/" + sub + "/resourceGroups/rg-app/providers/" + provider + "/" + name,
			Tags: map[string]string{"env": "prod"}, Properties: map[string]any{"diskState": "Unattached"}})
	}
	for i := 0; i < 5; i++ {
		add(subA, "microsoft.compute/disks", fmt.Sprintf("disk-a%d", i))
	}
	add(subA, "microsoft.compute/virtualmachines", "vm-a")
	add(subB, "microsoft.compute/disks", "disk-b0")
	add(subB, "microsoft.compute/disks", "disk-b1")
	add(subIndependent, "microsoft.compute/disks", "disk-n0")
	return startWorld(t, w)
}

func graphQuery(query string, subs []string, options map[string]any) map[string]any {
	body := map[string]any{"query": query, "options": options}
	if subs != nil {
		body["subscriptions"] = subs
	}
	return body
}

func rowNames(body map[string]any) []string {
	var names []string
	for _, row := range body["data"].([]any) {
		names = append(names, row.(map[string]any)["name"].(string))
	}
	return names
}

func TestResourceGraphAnswers(t *testing.T) {
	e := graphEnv(t)
	resp, body := e.do("POST", graphPath, graphQuery("Resources | where type =~ 'Microsoft.Compute/disks'", []string{subA},
		map[string]any{"$top": 2, "resultFormat": "objectArray"}))
	if resp.StatusCode != 200 || body["totalRecords"] != 5.0 || body["count"] != 2.0 || body["resultTruncated"] != "false" ||
		len(body["facets"].([]any)) != 0 || body["$skipToken"] == nil {
		t.Fatalf("first page: %d %v", resp.StatusCode, body)
	}
	row := body["data"].([]any)[0].(map[string]any)
	if row["id"] != "/subscriptions/"+subA+"/resourceGroups/rg-app/providers/Microsoft.Compute/disks/disk-a0" || row["name"] != "disk-a0" ||
		row["type"] != "microsoft.compute/disks" || row["location"] != "westeurope" || row["resourceGroup"] != "rg-app" ||
		row["subscriptionId"] != subA || row["tenantId"] != tenantID || row["tags"].(map[string]any)["env"] != "prod" ||
		row["properties"].(map[string]any)["diskState"] != "Unattached" {
		t.Fatalf("row %v", row)
	}
	names, pages := rowNames(body), 1
	for body["$skipToken"] != nil {
		_, body = e.do("POST", graphPath, graphQuery("Resources | where type =~ 'Microsoft.Compute/disks'", []string{subA},
			map[string]any{"$top": 2, "$skipToken": body["$skipToken"]}))
		names = append(names, rowNames(body)...)
		pages++
	}
	if pages != 3 || fmt.Sprint(names) != "[disk-a0 disk-a1 disk-a2 disk-a3 disk-a4]" {
		t.Fatalf("%d pages: %v", pages, names)
	}

	for query, want := range map[string]string{
		// Every subscription the caller reaches: not the independent one.
		"Resources": "[disk-a0 disk-a1 disk-a2 disk-a3 disk-a4 vm-a disk-b0 disk-b1]",
		"resources | where type == 'microsoft.compute/disks'":                                                         "[disk-a0 disk-a1 disk-a2 disk-a3 disk-a4 disk-b0 disk-b1]",
		"Resources | where type == 'Microsoft.Compute/disks'":                                                         "[]",
		"Resources | where subscriptionId in ('" + subB + "', '" + subIndependent + "') | project id, name":           "[disk-b0 disk-b1]",
		"Resources\n| where subscriptionId in~ ('" + subA + "')\n| where type =~ 'microsoft.compute/virtualmachines'": "[vm-a]",
	} {
		resp, body := e.do("POST", graphPath, graphQuery(query, nil, nil))
		if resp.StatusCode != 200 || fmt.Sprint(rowNames(body)) != want {
			t.Errorf("%q: %d %v, want %s", query, resp.StatusCode, body, want)
		}
	}
	if _, body := e.do("POST", graphPath, graphQuery("Resources", []string{subIndependent}, nil)); body["totalRecords"] != 0.0 || len(body["data"].([]any)) != 0 {
		t.Fatalf("a subscription the caller cannot see: %v", body)
	}

	e.sim.Faults.Set(cloudsim.ARM, "/providers/Microsoft.ResourceGraph/", cloudsim.Fault{TruncatePages: true})
	if _, body := e.do("POST", graphPath, graphQuery("Resources", nil, map[string]any{"$top": 2})); body["$skipToken"] != nil || body["count"] != 2.0 {
		t.Fatalf("truncated: %v", body)
	}
}

func TestResourceGraphRefuses(t *testing.T) {
	e := graphEnv(t)
	for query, code := range map[string]string{
		"":                                      "InvalidQuery",
		"ResourceContainers":                    "InvalidQuery",
		"Resources | take 5":                    "InvalidQuery",
		"Resources | where location == 'x'":     "InvalidQuery",
		"Resources | summarize count() by type": "InvalidQuery",
		"Resources | where subscriptionId in (x)": "InvalidQuery",
	} {
		resp, body := e.do("POST", graphPath, graphQuery(query, nil, nil))
		if resp.StatusCode != 400 || errorCode(body) != code {
			t.Errorf("%q: %d %v, want 400 %s", query, resp.StatusCode, body, code)
		}
	}
	for name, body := range map[string]map[string]any{
		"table format":      graphQuery("Resources", nil, map[string]any{"resultFormat": "table"}),
		"$top over 1000":    graphQuery("Resources", nil, map[string]any{"$top": 1001}),
		"forged $skipToken": graphQuery("Resources", nil, map[string]any{"$skipToken": "not-a-token"}),
		"management group":  {"query": "Resources", "managementGroups": []string{"mg"}},
		"facets":            {"query": "Resources", "facets": []any{map[string]any{"expression": "location"}}},
	} {
		if resp, answer := e.do("POST", graphPath, body); resp.StatusCode != 400 || errorCode(answer) != "BadRequest" {
			t.Errorf("%s: %d %v, want 400 BadRequest", name, resp.StatusCode, answer)
		}
	}
}
