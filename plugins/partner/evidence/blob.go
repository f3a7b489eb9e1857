package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// Blobs stores uploaded files' contents under keys the plugin generates.
type Blobs interface {
	// Put stores what r yields under key and returns its size and SHA-256
	// (hex). Nothing is visible under key unless Put returns no error.
	Put(ctx context.Context, key string, r io.Reader) (size int64, sum string, err error)
	// Open reads the blob of key; an error wrapping fs.ErrNotExist when
	// there is none.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes the blob of key; deleting a missing blob is no error.
	Delete(ctx context.Context, key string) error
}

// keyRE is what a key may be: the ids the plugin generates, so a key can
// never name a path outside the store.
var keyRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// ErrBadKey is the error for a key that is not a generated id.
var ErrBadKey = errors.New("evidence: blob key is not a generated id")

// Dir is a Blobs in a local directory: a blob is written to a temporary
// file beside its place and renamed into it once whole and synced, so a
// reader never sees part of one. Blobs are spread over subfolders named
// by the key's first two characters.
type Dir struct{ Root string }

// NewDir returns a Dir at root, creating it (owner-only) when missing.
func NewDir(root string) (*Dir, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("evidence: blob directory: %w", err)
	}
	return &Dir{Root: root}, nil
}

func (d *Dir) path(key string) (string, error) {
	if !keyRE.MatchString(key) {
		return "", ErrBadKey
	}
	return filepath.Join(d.Root, key[:2], key), nil
}

// Put implements Blobs.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader) (int64, string, error) {
	dst, err := d.path(key)
	if err != nil {
		return 0, "", err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return 0, "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".upload-*")
	if err != nil {
		return 0, "", err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), readerCtx{ctx, r})
	if err != nil {
		return 0, "", err
	}
	if err := tmp.Sync(); err != nil {
		return 0, "", err
	}
	if err := tmp.Close(); err != nil {
		return 0, "", err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return 0, "", err
	}
	done = true
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// Open implements Blobs.
func (d *Dir) Open(_ context.Context, key string) (io.ReadCloser, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

// Delete implements Blobs.
func (d *Dir) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// readerCtx stops a copy once its context ends: an upload whose caller
// went away is not written on.
type readerCtx struct {
	ctx context.Context
	r   io.Reader
}

func (r readerCtx) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
