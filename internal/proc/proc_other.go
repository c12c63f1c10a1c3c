//go:build unix && !linux

package proc

import "errors"

// procStat is what the system says of a process; here it says nothing.
type procStat struct {
	start string
	dead  bool
}

// readStat fails: only Linux gives start times.
func readStat(int) (procStat, error) { return procStat{}, errors.ErrUnsupported }

// GroupLive says whether any process of the group pgid exists.
func GroupLive(pgid int) bool { return groupProbe(pgid) }
