package testplugin

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/stewardhq/steward/core/store"
	"github.com/stewardhq/steward/sdk/plugintest"
)

// The plugin starts as the host starts it, from its definition and a
// config block, and the block's setting reaches the hold job.
func TestDefinition(t *testing.T) {
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "steward.db")
	migrate := func(ctx context.Context, migrations fs.FS) error {
		db, err := store.Open(ctx, dbURL, store.Options{})
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = store.Migrate(ctx, db, migrations, "plugin_testplugin_migrations")
		return err
	}
	h := plugintest.New(t, Definition(), New, plugintest.Options{DatabaseURL: dbURL, Migrate: migrate, Config: json.RawMessage(`{"hold_job_seconds": 0.05}`)})
	if desc := h.Describe(); desc.Name != "testplugin" || len(desc.Routes) == 0 || len(desc.Jobs) != 4 {
		t.Errorf("described %s with %d routes and %d jobs", desc.Name, len(desc.Routes), len(desc.Jobs))
	}
	start := time.Now()
	if _, _, err := h.RunJob(context.Background(), "hold"); err != nil || time.Since(start) > 2*time.Second {
		t.Errorf("hold ran %s (%v); want the configured 50ms, not the default 2s", time.Since(start), err)
	}
}
