package drive

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// procStat is what /proc/PID/stat says of a process that drive reads.
type procStat struct {
	start string // boot id and start time: see ProcessStart
	dead  bool   // a zombie: it has exited and waits to be reaped
	pgrp  int
}

// bootID tells one boot of the machine from another: start times count
// from boot, so a process of an earlier boot could share both pid and
// start time with one of this boot.
var bootID = sync.OnceValue(func() string {
	id, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return string(bytes.TrimSpace(id))
})

// readStat reads /proc/PID/stat. The command name in parentheses may hold
// spaces and parentheses of its own, so the fields are counted from the
// last ')'.
func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat has no command name", pid)
	}
	// Field 3 (state) is the first after the name; 5 is pgrp, 22 starttime.
	f := bytes.Fields(data[i+1:])
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("/proc/%d/stat has too few fields", pid)
	}
	pgrp, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: pgrp: %w", pid, err)
	}
	state := f[0][0]
	return procStat{start: bootID() + "/" + string(f[19]), dead: state == 'Z' || state == 'X', pgrp: pgrp}, nil
}

// groupLive says whether a process of the group pgid runs. Zombies do not
// count: they have ended, and where no init reaps orphans (some
// containers) they stay in the group for good.
func groupLive(pgid int) bool {
	if !groupProbe(pgid) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: a lease is never dropped on a guess
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil && st.pgrp == pgid && !st.dead {
			return true
		}
	}
	return false
}

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
