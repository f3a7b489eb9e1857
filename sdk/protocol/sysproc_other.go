//go:build !linux

package protocol

import "syscall"

// sysProcAttr has nothing to add where the kernel cannot tie the plugin's
// life to its parent's; the parent kills it when it stops.
func sysProcAttr() *syscall.SysProcAttr { return nil }
