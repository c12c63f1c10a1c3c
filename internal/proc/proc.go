// Package proc tells whether a process that custodian recorded still runs.
// A worker that custodian drive launched, and the drive itself, are
// recorded by a pid and a start time: only both together name one process,
// for the system hands a pid out again once its process has gone.
package proc

import (
	"errors"

	"golang.org/x/sys/unix"
)

// StartTime returns when the process pid started, as an opaque text to
// compare for equality: with the pid, it tells a worker from a later
// process that was given the same pid. On Linux it is the boot's id and
// field 22 of /proc/PID/stat (clock ticks since boot); elsewhere it fails
// with errors.ErrUnsupported.
func StartTime(pid int) (string, error) {
	st, err := readStat(pid)
	return st.start, err
}

// Alive says whether the worker a lease recorded, the process pid that
// started at start, still runs, or has left processes of its group that
// do. A process with that pid and another start time is another process:
// the worker has gone, and so has its group, for the system hands out a
// group's id as a pid only once the group is empty. Where start times are
// unknown (not Linux), any process of the group counts, so that a lease is
// never dropped on a guess.
func Alive(pid int, start string) bool {
	st, err := readStat(pid)
	if err == nil && st.start != start {
		return false
	}
	if err == nil && !st.dead {
		return true
	}
	return GroupLive(pid)
}

// Running says whether the process pid that started at start still runs,
// by itself: unlike Alive, no other process of its group stands for it, so
// that a drive killed while a pipeline it fed lives on counts as ended.
// Where start times are unknown (not Linux), a process with that pid
// counts.
func Running(pid int, start string) bool {
	if pid < 1 {
		return false
	}
	st, err := readStat(pid)
	if err == nil {
		return st.start == start && !st.dead
	}
	if !errors.Is(err, errors.ErrUnsupported) {
		return false
	}
	err = unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// groupProbe says whether any process of the group pgid exists, a zombie
// included: the system answers for every process, and one this user may
// not signal exists too.
func groupProbe(pgid int) bool {
	err := unix.Kill(-pgid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
