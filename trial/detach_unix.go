//go:build unix

package trial

import (
	"os/exec"
	"syscall"
)

// detachHold puts cmd in a process group of its own, so that a signal meant for
// the process that started it (a Ctrl-C at the terminal) does not reach it.
func detachHold(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
