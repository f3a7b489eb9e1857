package sdk_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's walkthrough is the code of examples/acme-evidence, a module of
// its own whose tests `make test` runs and which the end-to-end tests build
// and serve through the host; each of the walkthrough's code blocks must be
// the file it shows, byte for byte, so the walkthrough cannot stop compiling
// or working unnoticed.
func TestREADMEWalkthroughIsTheBuiltCode(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ marker, file string }{
		{"`migrations/0001_evidence.sqlite.up.sql`:", "migrations/0001_evidence.sqlite.up.sql"},
		{"`migrations/0001_evidence.postgres.up.sql`:", "migrations/0001_evidence.postgres.up.sql"},
		{"`migrations/0001_evidence.down.sql` (both databases):", "migrations/0001_evidence.down.sql"},
		{"### main.go", "main.go"},
		{"`main_test.go`, beside the plugin above:", "main_test.go"},
	} {
		want, err := os.ReadFile(filepath.Join("..", "examples", "acme-evidence", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := blockAfter(string(readme), tc.marker)
		if !ok {
			t.Errorf("README.md has no code block after %q", tc.marker)
			continue
		}
		if got != string(want) {
			t.Errorf("README.md's block after %q differs from examples/acme-evidence/%s", tc.marker, tc.file)
		}
	}
}

// blockAfter returns the content of the first fenced code block after the
// marker line.
func blockAfter(doc, marker string) (string, bool) {
	_, rest, ok := strings.Cut(doc, "\n"+marker+"\n")
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, "```")
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, "\n")
	if !ok {
		return "", false
	}
	body, _, ok := strings.Cut(rest, "```")
	return body, ok
}
