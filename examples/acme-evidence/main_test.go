package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
	"github.com/stewardhq/steward/sdk/protocol"
)

var alice = sdk.Principal{ID: "u1", Email: "alice@acme.example", Kind: "user", TenantIDs: []string{"t1"}}

// options give the plugin a fresh SQLite database, which the harness
// migrates as the host does, a directory of two tenants and an inventory
// of three resources, two of them Alpha's.
func options(t *testing.T) plugintest.Options {
	return plugintest.Options{
		Config:      json.RawMessage(`{"inventory":"testplugin.items"}`),
		DatabaseURL: "sqlite://" + filepath.Join(t.TempDir(), "steward.db"),
		Tenants: []sdk.Tenant{
			{ID: "t1", Name: "Alpha", IsActive: true},
			{ID: "t2", Name: "Beta", IsActive: true},
		},
		Datasets: map[string][]json.RawMessage{"testplugin.items": {
			json.RawMessage(`{"tenant_id":"t1","name":"vm-1"}`),
			json.RawMessage(`{"tenant_id":"t1","name":"disk-1"}`),
			json.RawMessage(`{"tenant_id":"t2","name":"vm-2"}`),
		}},
	}
}

func TestEvidence(t *testing.T) {
	h := plugintest.New(t, definition, newPlugin, options(t))
	list := func(query string, who sdk.Principal) (int, string, sdk.Items[evidence]) {
		resp := h.Do(httptest.NewRequest("GET", "/api/v1/acme/evidence"+query, nil), who)
		raw, _ := io.ReadAll(resp.Body)
		var body sdk.Items[evidence]
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("list%s: %v", query, err)
			}
		}
		return resp.StatusCode, string(raw), body
	}
	if status, raw, _ := list("", alice); status != http.StatusOK || !strings.Contains(raw, `"items":[]`) {
		t.Errorf("list before the first run = %d %s, want no evidence", status, raw)
	}

	n, progress, err := h.RunJob(context.Background(), "collect")
	if err != nil || n != 2 || len(progress) != 2 {
		t.Fatalf("collect = %d tenants, %v progress, %v", n, progress, err)
	}
	if marks := h.FreshMarks(); len(marks) != 2 || marks[0].Domain != "acme_evidence" {
		t.Errorf("fresh marks = %+v", marks)
	}

	// No tenant_ids is every tenant the caller may see: Alice sees Alpha's.
	if status, _, body := list("", alice); status != http.StatusOK || len(body.Items) != 1 ||
		body.Items[0].TenantID != "t1" || body.Items[0].Resources != 2 || body.Items[0].Control != "inventory-complete" {
		t.Errorf("list = %d %+v, want Alpha's 2 resources", status, body)
	}
	if status, _, body := list("", sdk.Principal{ID: "u2", Kind: "user"}); status != http.StatusOK || len(body.Items) != 0 {
		t.Errorf("list of a user without tenants = %d %+v, want none", status, body)
	}
	if _, _, err := h.RunJob(context.Background(), "collect"); err != nil {
		t.Fatal(err)
	}
	admin := sdk.Principal{ID: "u0", Kind: "user", IsAdmin: true, TenantIDs: []string{"t1", "t2"}}
	if status, _, body := list("?limit=3", admin); status != http.StatusOK || len(body.Items) != 3 || body.Items[0].TenantID != "t2" {
		t.Errorf("admin's newest 3 = %d %+v, want Beta's second run first", status, body)
	}
	if status, _, body := list("?tenant_ids=t2", admin); status != http.StatusOK || len(body.Items) != 2 || body.Items[1].TenantID != "t2" {
		t.Errorf("admin's list of Beta = %d %+v, want its 2 runs", status, body)
	}

	for query, want := range map[string]struct {
		status int
		names  string
	}{
		"?tenant_ids=t2": {http.StatusForbidden, "no access to the requested tenant"},
		"?limit=0":       {http.StatusUnprocessableEntity, `"query.limit"`},
		"?limit=201":     {http.StatusUnprocessableEntity, `"query.limit"`},
	} {
		if status, raw, _ := list(query, alice); status != want.status || !strings.Contains(raw, want.names) {
			t.Errorf("list%s = %d %s, want %d naming %s", query, status, raw, want.status, want.names)
		}
	}
	if status, _, _ := list("", sdk.Principal{}); status != http.StatusUnauthorized {
		t.Errorf("anonymous list: %d, want 401", status)
	}
}

// The host holds the config block to the schema derived from config, as
// the harness does: a block without inventory, or with a key config does
// not have, never reaches newPlugin.
func TestConfigSchema(t *testing.T) {
	schema := plugintest.New(t, definition, newPlugin, options(t)).Describe().ConfigSchema
	for block, want := range map[string]string{
		`{}`:                                "inventory: is required",
		`{"inventory":""}`:                  "inventory: length must be >= 1, but got 0",
		`{"inventory":"x","inventroy":"x"}`: "inventroy: unknown key; the keys are inventory",
	} {
		problems, err := protocol.CheckConfig(schema, []byte(block))
		if err != nil || len(problems) != 1 || problems[0].Key+": "+problems[0].Message != want {
			t.Errorf("%s: %+v, %v; want %q", block, problems, err, want)
		}
	}
}
