//go:build !linux

package plugintest

import "syscall"

// sysProcAttr has nothing to add where the kernel cannot tie the plugin's
// life to the test binary's; the test's cleanup kills it.
func sysProcAttr() *syscall.SysProcAttr { return nil }
