package sdk_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's walkthrough is the code of sdk/internal/walkthrough, which is
// built, vetted and tested with the rest of the tree; each of its code
// blocks must be the file it shows, byte for byte, so the walkthrough
// cannot stop compiling unnoticed.
func TestREADMEWalkthroughIsTheBuiltCode(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ marker, file string }{
		{"`migrations/0001_items.sqlite.up.sql`:", "migrations/0001_items.sqlite.up.sql"},
		{"`migrations/0001_items.postgres.up.sql`:", "migrations/0001_items.postgres.up.sql"},
		{"`migrations/0001_items.down.sql` (both databases):", "migrations/0001_items.down.sql"},
		{"### main.go", "main.go"},
		{"`main_test.go`, beside the plugin above:", "main_test.go"},
	} {
		want, err := os.ReadFile(filepath.Join("internal", "walkthrough", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := blockAfter(string(readme), tc.marker)
		if !ok {
			t.Errorf("README.md has no code block after %q", tc.marker)
			continue
		}
		if got != string(want) {
			t.Errorf("README.md's block after %q differs from internal/walkthrough/%s", tc.marker, tc.file)
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
