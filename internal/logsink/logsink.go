// Package logsink holds a log sink that tests share: a buffer that several
// goroutines (a logger, a subprocess's output copier) write to while the
// test reads it.
package logsink

import (
	"strings"
	"sync"
)

// Buffer is a strings.Builder safe for concurrent writes and reads.
type Buffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
