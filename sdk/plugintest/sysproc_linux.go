package plugintest

import "syscall"

// sysProcAttr kills the plugin with the test binary even when the test
// binary dies without running its cleanups, as it does on a test timeout.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
