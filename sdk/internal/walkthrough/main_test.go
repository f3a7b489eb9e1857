package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/sdk"
	"github.com/stewardhq/steward/sdk/plugintest"
)

var alice = sdk.Principal{ID: "u1", Email: "alice@acme.example", Kind: "user", TenantIDs: []string{"t1"}}

// options give the plugin a fresh SQLite database, migrated the way the
// host migrates it, and a directory of two tenants.
func options(t *testing.T) plugintest.Options {
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "steward.db")
	return plugintest.Options{
		Config:      json.RawMessage(`{"api_url":"https://evidence.acme.example"}`),
		DatabaseURL: dbURL,
		Tenants: []sdk.Tenant{
			{ID: "t1", Name: "Alpha", IsActive: true},
			{ID: "t2", Name: "Beta", IsActive: true},
		},
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

func TestDefinition(t *testing.T) {
	if err := newPlugin().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestEvidence(t *testing.T) {
	h := plugintest.New(t, newPlugin(), options(t))

	n, progress, err := h.RunJob(context.Background(), "collect")
	if err != nil || n != 4 || len(progress) != 2 {
		t.Fatalf("collect = %d records, %v progress, %v", n, progress, err)
	}
	if marks := h.FreshMarks(); len(marks) != 2 {
		t.Errorf("fresh marks = %v", marks)
	}

	for target, want := range map[string]int{"/api/v1/acme/evidence?limit=1": 1, "/api/v1/acme/evidence": 2} {
		resp := h.Do(httptest.NewRequest("GET", target, nil), alice)
		var body struct{ Items []item }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Items) != want || body.Items[0].TenantID != "t1" {
			t.Errorf("%s = %d %+v (%v), want %d items of t1", target, resp.StatusCode, body, err, want)
		}
	}
	if resp := h.Do(httptest.NewRequest("GET", "/api/v1/acme/evidence?tenant_ids=t2", nil), alice); resp.StatusCode != http.StatusForbidden {
		t.Errorf("another tenant's evidence: %d, want 403", resp.StatusCode)
	}

	if resp := h.Do(httptest.NewRequest("POST", "/api/v1/acme/evidence/1/accept", nil), alice); resp.StatusCode != http.StatusNoContent {
		t.Errorf("accept: %d", resp.StatusCode)
	}
	if e := h.AuditEntries(); len(e) != 1 || e[0].Action != "acme_evidence.accept.success" || e[0].Principal.ID != "u1" {
		t.Errorf("audit = %+v", e)
	}

	records, err := h.ReadDataset(context.Background(), "acme_evidence.items", []string{"t2"}, nil)
	if err != nil || len(records) != 2 {
		t.Errorf("dataset = %d records, %v", len(records), err)
	}
}

func TestEvidenceBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "acme_evidence")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	opts := options(t)
	opts.DataSocket = true
	h := plugintest.Start(t, bin, opts)

	if _, _, err := h.RunJob(context.Background(), "collect"); err != nil {
		t.Fatal(err)
	}
	if resp := h.Do(httptest.NewRequest("GET", "/api/v1/acme/evidence", nil), alice); resp.StatusCode != http.StatusOK {
		t.Errorf("list over the data socket: %d", resp.StatusCode)
	}
	if resp := h.Do(httptest.NewRequest("GET", "/api/v1/acme/evidence", nil), sdk.Principal{}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous list: %d, want 401", resp.StatusCode)
	}
}
