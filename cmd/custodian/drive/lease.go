package drive

import (
	"fmt"
	"syscall"
	"time"
)

// ProcessStart returns when the process pid started, as an opaque text to
// compare for equality: with the pid, it tells a worker from a later
// process that was given the same pid. On Linux it is the boot's id and
// field 22 of /proc/PID/stat (clock ticks since boot); elsewhere it fails
// with errors.ErrUnsupported.
func ProcessStart(pid int) (string, error) {
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
	return groupLive(pid)
}

// pollEvery is how often to look whether a group has ended.
const pollEvery = 20 * time.Millisecond

// killSettle bounds the wait for a group to end after SIGKILL, which only
// a process stuck in the kernel survives for long.
const killSettle = time.Second

// EndGroup ends the process group of a worker that a lease recorded, as
// --reclaim does, if Alive(pid, start): SIGTERM to the group, up to grace
// for it to end, then SIGKILL. It returns nil once nothing of the group
// runs, and an error when a signal could not be sent or the group outlived
// SIGKILL.
//
// Between the check and the signal, the worker could end and its pid pass
// to a new group leader; the window is a few microseconds, and only a
// pidfd, which addresses one process and not a group, would close it.
func EndGroup(pid int, start string, grace time.Duration) error {
	gone := func() bool { return !Alive(pid, start) }
	if gone() {
		return nil
	}
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGTERM, grace}, {syscall.SIGKILL, killSettle}} {
		if err := signalGroup(pid, step.sig); err != nil {
			return fmt.Errorf("cannot end the process group of worker %d: %w; end it by hand (kill -- -%d)", pid, err, pid)
		}
		if waitUntil(gone, step.wait) {
			return nil
		}
	}
	return fmt.Errorf("the process group of worker %d outlived SIGKILL; a process of it is stuck in the kernel: see ps -eo pid,pgid,stat,args", pid)
}

// waitUntil polls done until it holds or limit has passed, and says
// whether it held.
func waitUntil(done func() bool, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); !done(); time.Sleep(pollEvery) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
