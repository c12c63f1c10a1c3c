package drive_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// groupMembers counts the processes of the group pgid that have not
// ended. A zombie does not count: it has ended and waits to be reaped,
// which where no init reaps orphans (some containers) it does for ever.
func groupMembers(pgid int) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := bytes.Fields(data[bytes.LastIndexByte(data, ')')+1:])
		if string(f[0]) != "Z" && string(f[2]) == strconv.Itoa(pgid) {
			n++
		}
	}
	return n
}

// groupGone says whether no process of the group pgid runs: kill(-pgid, 0)
// finds none, or only zombies.
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) || groupMembers(pgid) == 0
}
