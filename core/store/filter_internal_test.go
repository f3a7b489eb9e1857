package store

import (
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"
)

func TestFilterDialectChoosesOneFilePerMigration(t *testing.T) {
	fsys := fstest.MapFS{
		"0001_shared.up.sql":               {},
		"0001_shared.down.sql":             {},
		"0002_split.sqlite.tx.up.sql":      {},
		"0002_split.postgres.up.sql":       {},
		"0002_split.down.sql":              {},
		"0003_override.up.sql":             {},
		"0003_override.postgres.up.sql":    {},
		"nested/0004_deep.sqlite.up.sql":   {},
		"nested/0004_deep.postgres.up.sql": {},
		"notes.txt":                        {},
	}
	tests := []struct {
		dialect string
		want    []string
	}{
		{DialectSQLite, []string{
			"0001_shared.down.sql", "0001_shared.up.sql",
			"0002_split.down.sql", "0002_split.sqlite.tx.up.sql",
			"0003_override.up.sql",
			"nested/0004_deep.sqlite.up.sql",
			"notes.txt",
		}},
		{DialectPostgres, []string{
			"0001_shared.down.sql", "0001_shared.up.sql",
			"0002_split.down.sql", "0002_split.postgres.up.sql",
			"0003_override.postgres.up.sql",
			"nested/0004_deep.postgres.up.sql",
			"notes.txt",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.dialect, func(t *testing.T) {
			filtered, err := filterDialect(fsys, tt.dialect)
			if err != nil {
				t.Fatalf("filterDialect: %v", err)
			}
			var got []string
			err = fs.WalkDir(filtered, ".", func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					got = append(got, p)
				}
				return err
			})
			if err != nil {
				t.Fatalf("walk: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("visible files = %v, want %v", got, tt.want)
			}

			// Hidden files must not be reachable by name either, since bun
			// opens migration files directly.
			for name := range fsys {
				_, err := filtered.Open(name)
				visible := slices.Contains(tt.want, name)
				if visible && err != nil {
					t.Errorf("Open(%s) = %v, want it visible", name, err)
				}
				if !visible && err == nil {
					t.Errorf("Open(%s) succeeded, want it hidden", name)
				}
			}
		})
	}
}

func TestParseMigrationFile(t *testing.T) {
	tests := []struct {
		base    string
		key     string
		tag     string
		ok      bool
		wantErr bool
	}{
		{base: "0001_core.up.sql", key: "0001_core.up", ok: true},
		{base: "0001_core.tx.down.sql", key: "0001_core.down", ok: true},
		{base: "0001_core.sqlite.up.sql", key: "0001_core.up", tag: "sqlite", ok: true},
		{base: "0001_core.postgres.tx.down.sql", key: "0001_core.down", tag: "postgres", ok: true},
		{base: "0001_core.oracle.up.sql", wantErr: true},
		{base: "0001_core.sql"},
		{base: "README.md"},
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			key, tag, ok, err := parseMigrationFile(tt.base)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if key != tt.key || tag != tt.tag || ok != tt.ok {
				t.Errorf("got (%q, %q, %v), want (%q, %q, %v)", key, tag, ok, tt.key, tt.tag, tt.ok)
			}
		})
	}
}
