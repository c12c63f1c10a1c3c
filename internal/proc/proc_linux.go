package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
)

// procStat is what /proc/PID/stat says of a process.
type procStat struct {
	start string // boot id and start time: see StartTime
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

// GroupLive says whether a process of the group pgid runs. Zombies do not
// count: they have ended, and where no init reaps orphans (some
// containers) they stay in the group for good.
func GroupLive(pgid int) bool {
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
