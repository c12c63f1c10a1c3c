package engine

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// Record copies the run into dir as a fixture, for a test that replays it
// against the definition (workflowtest.Replay). The copy holds every record
// and file a replay reads, and leaves out the lock, the hash cache, drive's
// round and the evidence of its launches; dir may be missing, empty, or a
// fixture recorded before, which it replaces (the run itself, when it is a
// fixture: a live run is never replaced by its copy). It
// takes the run's lock while it copies, so that the copy is of one
// committed state, and returns the check of the run and the files it left
// out (links, pipes: what a fixture cannot hold).
//
// When this definition changes the run only by what it changes on purpose,
// every accepted output in place (a carry-over by Job.Formerly), and the
// next step would find the run done, the copy is stepped once, so that the
// fixture holds the change and replays unchanged.
func (run *Run) Record(dir string, maps ...Map) (Check, []string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Check{}, nil, err
	}
	if rel, err := filepath.Rel(run.records.Dir, abs); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		return Check{}, nil, refused("record the fixture outside the run directory, or in its place",
			"record run %s into %s: the fixture would be inside the run", run.records.Dir, abs)
	}
	if abs == run.records.Dir {
		// In its own place, a run loses what a fixture leaves out: only a
		// fixture, which holds none of it, is recorded again so.
		fixture, err := run.records.IsFixture()
		if err != nil {
			return Check{}, nil, err
		}
		if !fixture {
			return Check{}, nil, refused("record it into another directory: a fixture leaves out what a live run keeps",
				"record run %s in its own place: it is a live run (it has a lock file, a drive's round or a launch's evidence), which the fixture would lose", abs)
		}
	}
	var c Check
	var skipped []string
	err = store.ReplaceFixture(abs, func(tmp string) error {
		unlock, err := run.records.Lock()
		if err != nil {
			return err
		}
		c, err = run.Check(maps...)
		if err == nil {
			skipped, err = run.records.CopyTo(tmp)
		}
		unlock()
		if err != nil || !c.Changed || c.Differs() || c.Next == nil || c.Next.Kind != KindDone {
			return err
		}
		return run.stepFixture(tmp)
	})
	return c, skipped, err
}

// stepFixture steps the fixture copied to dir once, as this Run would, and
// trims what the step made that a fixture leaves out.
func (run *Run) stepFixture(dir string) error {
	records, err := store.Open(dir)
	if err != nil {
		return err
	}
	defer records.Close()
	copied := &Run{records: records, def: run.def, params: run.params, build: run.build}
	out, err := copied.Step()
	if err != nil {
		return fmt.Errorf("step the fixture: %w", err)
	}
	if out.Kind != KindDone {
		return fmt.Errorf("step the fixture: check foresaw done, and the step gave %s: a defect in custodian", out.Kind)
	}
	return records.TrimToFixture()
}
