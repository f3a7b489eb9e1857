//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package plugins

import "os"

// Without flock no owner can be told gone, so no dir is removed as stale.
func lockExclusive(*os.File) error { return nil }

func tryLockExclusive(*os.File) bool { return false }
