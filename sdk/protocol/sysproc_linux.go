package protocol

import "syscall"

// sysProcAttr kills the plugin with the process that started it, even when
// that process dies without stopping it (SIGKILL, a test timeout), and puts
// the plugin in its own process group so that a signal to its parent's
// group, such as a terminal's Ctrl-C, reaches the parent alone, which then
// stops its plugins in order.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
