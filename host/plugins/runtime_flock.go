//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package plugins

import (
	"os"
	"syscall"
)

// The lock is the kernel's: it ends with the process that holds it, even
// a SIGKILLed one.
func lockExclusive(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

func tryLockExclusive(f *os.File) bool { return lockExclusive(f) == nil }
