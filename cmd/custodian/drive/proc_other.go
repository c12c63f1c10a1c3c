//go:build unix && !linux

package drive

import (
	"errors"
	"os/exec"
)

// procStat is what the system says of a process; here it says nothing.
type procStat struct {
	start string
	dead  bool
}

// readStat fails: only Linux gives start times.
func readStat(int) (procStat, error) { return procStat{}, errors.ErrUnsupported }

// groupLive says whether any process of the group pgid exists.
func groupLive(pgid int) bool { return groupProbe(pgid) }

// awaitExit waits for cmd's process to exit, and reaps it: without
// waitid's WNOWAIT there is no waiting without reaping.
func awaitExit(cmd *exec.Cmd) { _ = cmd.Wait() }

// reap does nothing: awaitExit has reaped.
func reap(*exec.Cmd) {}
