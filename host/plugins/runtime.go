package plugins

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// A runtime dir holds the data sockets of one host's plugins. It lives in
// the system's temporary folder because a unix socket path must fit in
// about 100 bytes, which a data dir path may not leave room for. The host
// holds a lock on a file in it for as long as it runs, so a later host can
// tell the dir of a host that was killed (and never removed its dir) from
// that of a host still running, and remove only the former.
const (
	runtimePrefix = "steward-plugins-"
	// runtimeNew names a dir until its lock is held: a dir that matches
	// runtimePrefix is always locked by its live owner or stale.
	runtimeNew = "steward-plugins.new-"
	lockFile   = "owner.lock"
)

// runtimeDir is the locked runtime dir of this host.
type runtimeDir struct {
	path string
	lock *os.File
}

// newRuntimeDir removes the runtime dirs whose owners are gone and creates
// this host's.
func newRuntimeDir(logger hclog.Logger) (*runtimeDir, error) {
	removeStaleRuntimeDirs(os.TempDir(), logger)
	tmp, err := os.MkdirTemp("", runtimeNew)
	if err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(tmp, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = lockExclusive(lock)
	}
	final := filepath.Join(filepath.Dir(tmp), runtimePrefix+strings.TrimPrefix(filepath.Base(tmp), runtimeNew))
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		if lock != nil {
			_ = lock.Close()
		}
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	return &runtimeDir{path: final, lock: lock}, nil
}

// remove deletes the dir and lets go of its lock.
func (d *runtimeDir) remove() {
	_ = os.RemoveAll(d.path)
	_ = d.lock.Close()
}

// removeStaleRuntimeDirs removes the runtime dirs in parent whose lock no
// process holds. A dir without a lock file is left alone: nothing tells
// whether its owner still runs.
func removeStaleRuntimeDirs(parent string, logger hclog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(parent, runtimePrefix+"*"))
	for _, dir := range dirs {
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		// Removed while locked, so that two hosts starting together do not
		// both take the dir for stale after one has already removed it.
		if tryLockExclusive(f) {
			if err := os.RemoveAll(dir); err != nil {
				logger.Warn("stale plugin runtime dir not removed", "dir", dir, "error", err)
			} else {
				logger.Info("removed the plugin runtime dir of a host that is gone", "dir", dir)
			}
		}
		_ = f.Close()
	}
}
