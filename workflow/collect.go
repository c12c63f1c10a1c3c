package workflow

import (
	"math"
	"runtime/debug"
	"sync"
)

// A step's heap is mostly what it keeps to its end: the records it read,
// the replay's jobs, the files looked at. Collecting at every doubling of
// it from the first megabytes, as Go does by default, frees little and
// costs a step of ten thousand jobs a tenth of its time, so a step
// collects late: not before its heap reaches a bound, some times the state
// it reads (collectLate). A step that makes and writes ten thousand prompts
// drops each once written, and collects sooner meanwhile (collectSooner),
// so that their garbage does not pile up to the bound.
//
// Steps of one process that overlap (tests, a program that drives several
// runs) share the collector's settings: while any collects sooner, it
// collects sooner; while any collects late, under the largest of their
// bounds; and the last to end restores what the first found.

// sooner is the garbage collector's percent while a step makes or writes
// many texts: a collection at a quarter over what is live rather than at
// twice (Go's default), for a few more collections.
const sooner = 25

// minLate is the least heap bound of a step that collects late, and
// lateStates how many times its state's size it may grow to: a step of
// ten thousand jobs (a state of some 5 MB) stays under 64 MiB in all.
const (
	minLate    = 54 << 20
	lateStates = 10
)

var collect struct {
	sync.Mutex
	sooner     int     // steps collecting sooner
	late       []int64 // the bounds of the steps collecting late
	oldPercent int     // the settings before the first of them
	oldLimit   int64
}

// collectSooner makes the collector run sooner until the function it
// returns is called.
func collectSooner() (restore func()) {
	collect.Lock()
	defer collect.Unlock()
	collectBegin()
	collect.sooner++
	collectSet()
	return func() {
		collect.Lock()
		defer collect.Unlock()
		collect.sooner--
		collectSet()
	}
}

// collectLate makes the collector wait for the heap to reach a bound of
// lateStates times stateSize, and at least minLate, until the function it
// returns is called.
func collectLate(stateSize int64) (restore func()) {
	bound := max(minLate, lateStates*stateSize)
	collect.Lock()
	defer collect.Unlock()
	collectBegin()
	collect.late = append(collect.late, bound)
	collectSet()
	return func() {
		collect.Lock()
		defer collect.Unlock()
		for i, b := range collect.late {
			if b == bound {
				collect.late = append(collect.late[:i], collect.late[i+1:]...)
				break
			}
		}
		collectSet()
	}
}

// collectBegin notes the settings the first step found.
func collectBegin() {
	if collect.sooner == 0 && len(collect.late) == 0 {
		collect.oldPercent = debug.SetGCPercent(100)
		collect.oldLimit = debug.SetMemoryLimit(-1)
	}
}

// collectSet makes the settings what the steps running ask for.
func collectSet() {
	percent, limit := collect.oldPercent, collect.oldLimit
	if len(collect.late) > 0 {
		percent, limit = -1, 0
		for _, b := range collect.late {
			limit = max(limit, b)
		}
		if collect.oldLimit < math.MaxInt64 {
			limit = min(limit, collect.oldLimit) // the process's own bound stands
		}
	}
	if collect.sooner > 0 {
		percent = sooner
	}
	debug.SetGCPercent(percent)
	debug.SetMemoryLimit(limit)
}
