package drive

import (
	"errors"
	"os/exec"

	"golang.org/x/sys/unix"
)

// awaitExit blocks until cmd's process has exited, and leaves it unreaped:
// while its zombie holds the pid, no other process or group can take that
// id, so the group can still be signalled safely.
func awaitExit(cmd *exec.Cmd) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// reap collects the exit status of the process awaitExit saw exit.
func reap(cmd *exec.Cmd) { _ = cmd.Wait() }
