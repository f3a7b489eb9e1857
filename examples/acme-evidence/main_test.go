package main

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
	"github.com/stewardhq/steward/sdk/protocol"
)

var alice = sdk.Principal{ID: "u1", Email: "alice@acme.example", Kind: "user", TenantIDs: []string{"t1"}}

// options give the plugin a fresh SQLite database, migrated the way the
// host migrates it, a directory of two tenants and an inventory of three
// resources, two of them Alpha's.
func options(t *testing.T) plugintest.Options {
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "steward.db")
	return plugintest.Options{
		Config:      json.RawMessage(`{"inventory":"testplugin.items"}`),
		DatabaseURL: dbURL,
		Tenants: []sdk.Tenant{
			{ID: "t1", Name: "Alpha", IsActive: true},
			{ID: "t2", Name: "Beta", IsActive: true},
		},
		Datasets: map[string][]json.RawMessage{"testplugin.items": {
			json.RawMessage(`{"tenant_id":"t1","name":"vm-1"}`),
			json.RawMessage(`{"tenant_id":"t1","name":"disk-1"}`),
			json.RawMessage(`{"tenant_id":"t2","name":"vm-2"}`),
		}},
		Migrate: func(ctx context.Context, migrations fs.FS) error {
			db, err := store.Open(ctx, dbURL, store.Options{})
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = store.Migrate(ctx, db, migrations, "plugin_acme_evidence_migrations")
			return err
		},
	}
}

func TestEvidence(t *testing.T) {
	h := plugintest.New(t, definition(), newPlugin, options(t))

	n, progress, err := h.RunJob(context.Background(), "collect")
	if err != nil || n != 2 || len(progress) != 2 {
		t.Fatalf("collect = %d tenants, %v progress, %v", n, progress, err)
	}
	if marks := h.FreshMarks(); len(marks) != 2 || marks[0].Domain != "acme_evidence" {
		t.Errorf("fresh marks = %+v", marks)
	}

	resp := h.Do(httptest.NewRequest("GET", "/api/v1/acme/evidence", nil), alice)
	var body evidenceList
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Items) != 1 ||
		body.Items[0].TenantID != "t1" || body.Items[0].Resources != 2 {
		t.Errorf("list = %d %+v (%v), want Alpha's 2 resources", resp.StatusCode, body, err)
	}
	if resp := h.Do(httptest.NewRequest("GET", "/api/v1/acme/evidence?tenant_ids=t2", nil), alice); resp.StatusCode != http.StatusForbidden {
		t.Errorf("another tenant's evidence: %d, want 403", resp.StatusCode)
	}
	if resp := h.Do(httptest.NewRequest("GET", "/api/v1/acme/evidence", nil), sdk.Principal{}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous list: %d, want 401", resp.StatusCode)
	}
}

// The host holds the config block to the schema derived from config, as
// the harness does: a block without inventory, or with a key config does
// not have, never reaches newPlugin.
func TestConfigSchema(t *testing.T) {
	schema := plugintest.New(t, definition(), newPlugin, options(t)).Describe().ConfigSchema
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

// The fragment is a route of the host like any other: plugintest sends it
// the signed-in caller and refuses a tenant the caller may not see.
func TestSummary(t *testing.T) {
	h := plugintest.New(t, definition(), newPlugin, options(t))
	summary := func(who sdk.Principal) string {
		resp := h.Do(httptest.NewRequest("GET", "/fragments/acme/evidence", nil), who)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("summary: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
		return string(b)
	}

	if got := summary(alice); !strings.Contains(got, "No evidence collected yet.") {
		t.Errorf("summary before the first run:\n%s", got)
	}
	for range 2 {
		if _, _, err := h.RunJob(context.Background(), "collect"); err != nil {
			t.Fatal(err)
		}
	}
	got := summary(alice)
	if strings.Count(got, "<li>") != 1 || !strings.Contains(got, "Alpha: 2 resources") || strings.Contains(got, "Beta") {
		t.Errorf("Alice's summary after two runs:\n%s", got)
	}
	if got := summary(sdk.Principal{ID: "u2", Kind: "user"}); strings.Contains(got, "Alpha") || strings.Contains(got, "Beta") {
		t.Errorf("summary of a user without tenants:\n%s", got)
	}
	if resp := h.Do(httptest.NewRequest("GET", "/fragments/acme/evidence?tenant_id=t2", nil), alice); resp.StatusCode != http.StatusForbidden {
		t.Errorf("Alice asks for tenant t2's summary: %d", resp.StatusCode)
	}
}
