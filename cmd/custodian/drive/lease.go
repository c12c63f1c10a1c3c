package drive

import (
	"fmt"
	"syscall"
	"time"

	"github.com/custodian-run/custodian/internal/proc"
)

// pollEvery is how often to look whether a group has ended.
const pollEvery = 20 * time.Millisecond

// killSettle bounds the wait for a group to end after SIGKILL, which only
// a process stuck in the kernel survives for long.
const killSettle = time.Second

// EndGroup ends the process group of a worker that a lease recorded, as
// --reclaim does, if workflow.Alive(pid, start): SIGTERM to the group, up to grace
// for it to end, then SIGKILL. It returns nil once nothing of the group
// runs, and an error when a signal could not be sent or the group outlived
// SIGKILL.
//
// Between the check and the signal, the worker could end and its pid pass
// to a new group leader; the window is a few microseconds, and only a
// pidfd, which addresses one process and not a group, would close it.
func EndGroup(pid int, start string, grace time.Duration) error {
	gone := func() bool { return !proc.Alive(pid, start) }
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
