package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The definition is checked at test time, not only when the host starts
// the plugin and sdk.Serve refuses it.
func TestDefinition(t *testing.T) {
	if err := New().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestFrameworksDir: a deployment's folder adds its frameworks to the
// built-in ones; a bad file in it stops the plugin with an error naming
// the file and the field.
func TestFrameworksDir(t *testing.T) {
	ctx := context.Background()
	m, err := newMapper(ctx, config{})
	if err != nil {
		t.Fatal(err)
	}
	builtin := len(m.Frameworks().All())

	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join("coverage", "testdata", "acme.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "acme.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err = newMapper(ctx, config{FrameworksDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Frameworks().Get("acme"); !ok || len(m.Frameworks().All()) != builtin+1 {
		t.Errorf("frameworks %d, want the %d built-in and acme", len(m.Frameworks().All()), builtin)
	}

	bad := strings.Replace(string(raw), `"version": "2026.1"`, `"version": 2026`, 1)
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = newMapper(ctx, config{FrameworksDir: dir})
	if err == nil || !strings.Contains(err.Error(), "broken.json") || !strings.Contains(err.Error(), "version") {
		t.Errorf("a bad framework file: %v, want an error naming broken.json and version", err)
	}
	if _, err := newMapper(ctx, config{FrameworksDir: filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing folder: %v", err)
	}
}
