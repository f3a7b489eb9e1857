package store

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
)

// MergeMigrations is one migration set made of several, each a flat
// folder of migration files (a plugin's packages each shipping their
// own), whose file names are numbered apart: the host and the SDK read a
// plugin's migrations from the top of one file system. A name found in
// more than one set opens from the first.
func MergeMigrations(sets ...fs.FS) fs.FS { return migrationSet(sets) }

// migrationSet is the union of its file systems' top folders.
type migrationSet []fs.FS

func (m migrationSet) Open(name string) (fs.File, error) {
	if name == "." && len(m) > 0 {
		return m[0].Open(name)
	}
	for _, f := range m {
		file, err := f.Open(name)
		if !errors.Is(err, fs.ErrNotExist) {
			return file, err
		}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (m migrationSet) ReadDir(name string) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	for _, f := range m {
		entries, err := fs.ReadDir(f, name)
		if err != nil {
			return nil, err
		}
		out = append(out, entries...)
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return slices.CompactFunc(out, func(a, b fs.DirEntry) bool { return a.Name() == b.Name() }), nil
}
