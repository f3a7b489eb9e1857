package main

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
)

// migrationSet is the plugin's one migration set made of its packages'
// migrations (quotas, inventory), whose file names are numbered apart:
// the host and the SDK read migrations from the top of one file system.
type migrationSet []fs.FS

func (m migrationSet) Open(name string) (fs.File, error) {
	if name == "." {
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
	return out, nil
}
