// Package workflowtest is the author's kit for testing definitions: it
// holds recorded runs to a definition in CI, scripts the operator's
// decisions, and ends a step inside an effect as a crash would, so that a
// recognizer can be tested without the definition carrying a hook of its
// own.
//
// A recorded run is a fixture: its records hold no absolute path of the
// run, so a run directory copied into a repository replays the same
// wherever the repository is checked out. Files outside the run that the
// definition declared are found through maps (workflow.Map).
package workflowtest

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/engine"
)

// Replay fails the test, with check's report, when the next step of the
// recorded run in runDir would change anything with the definitions of reg:
// the definition no longer makes the decisions the run recorded, or is not
// deterministic. A change the binary makes on purpose that leaves every
// accepted output in place (a carry-over by Job.Formerly) is logged, not
// failed. It writes no record in runDir.
func Replay(t testing.TB, reg *workflow.Registry, runDir string, maps ...engine.Map) {
	t.Helper()
	o, err := engine.Open(reg, runDir)
	if err != nil {
		t.Fatalf("replay %s: %v", runDir, err)
	}
	defer o.Close()
	// A fixture's files are what they were: a job's task that changed was
	// changed by the code, whichever build recorded the run. As no build,
	// this replay takes every such change for new code.
	o.AsBuild(engine.Build{})
	c, err := o.Check(maps...)
	if err != nil {
		t.Fatalf("replay %s: %v", runDir, err)
	}
	if !c.Changed {
		return
	}
	var report strings.Builder
	if err := c.WriteText(&report); err != nil {
		t.Fatalf("replay %s: %v", runDir, err)
	}
	if c.Differs() {
		t.Errorf("the recorded run %s would change at its next step:\n%s", runDir, report.String())
		return
	}
	// A carry-over by Formerly, say: the binary makes it on purpose and
	// every accepted output stays. Record the run again to drop the note.
	t.Logf("the recorded run %s changes only as the definition means it to, every accepted output in place "+
		"(record it again with Record or custodian check RUN --record DIR to make this note go):\n%s", runDir, report.String())
}

// ReplayAll replays every recorded run under dir, one subtest each, named
// by the run's directory: a directory holding .custodian/run.json is a run.
func ReplayAll(t *testing.T, reg *workflow.Registry, dir string, maps ...engine.Map) {
	t.Helper()
	var runs []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if _, err := os.Stat(filepath.Join(path, engine.StateDir, "run.json")); err == nil {
			runs = append(runs, path)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatalf("find recorded runs under %s: %v", dir, err)
	}
	if len(runs) == 0 {
		t.Fatalf("no recorded run under %s", dir)
	}
	slices.Sort(runs)
	for _, run := range runs {
		rel, _ := filepath.Rel(dir, run)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) { Replay(t, reg, run, maps...) })
	}
}

// Record copies the run in runDir into fixtureDir as a fixture for Replay
// (engine.Run.Record: what custodian check RUN --record DIR does), and
// returns what check says of the run. The fixture leaves out the lock and
// the derived caches; fixtureDir may be missing, empty, or a fixture,
// which it replaces (runDir itself, when it is one). When the definitions
// of reg change the run only by a carry-over (Job.Formerly), the fixture is
// stepped once so that it holds the new names. It fails the test when the
// run cannot be recorded, or holds files a fixture cannot (links, pipes).
func Record(t testing.TB, reg *workflow.Registry, runDir, fixtureDir string, maps ...engine.Map) engine.Check {
	t.Helper()
	o, err := engine.Open(reg, runDir)
	if err != nil {
		t.Fatalf("record %s: %v", runDir, err)
	}
	defer o.Close()
	c, skipped, err := o.Record(fixtureDir, maps...)
	if err != nil {
		t.Fatalf("record %s into %s: %v", runDir, fixtureDir, err)
	}
	if len(skipped) > 0 {
		t.Errorf("record %s into %s: a fixture cannot hold %s", runDir, fixtureDir, strings.Join(skipped, ", "))
	}
	return c
}

// Decide records the operator's choice on the question name that the last
// step of o asked (Context.Decide), as `custodian decide` does, so that a
// test scripts a person's decision; the next o.Step returns it to the
// definition. It fails the test when the run does not wait on that
// question or the choice is not one it offers.
func Decide(t testing.TB, o *engine.Run, name, choice, text string) {
	t.Helper()
	if err := o.Decide(name, choice, text); err != nil {
		t.Fatalf("decide %s %s: %v", name, choice, err)
	}
}

// CrashIn takes a step of o that ends inside the effect named, as a
// process that crashed there would: the effect's start is journaled, its
// do runs when ranDo, and nothing else of the step is recorded. The next
// o.Step asks the effect's recognizer what took place. It fails the test
// when the step does not reach the effect.
func CrashIn(t testing.TB, o *engine.Run, effect string, ranDo bool) {
	t.Helper()
	if err := o.StepEndingIn(effect, ranDo); !errors.Is(err, engine.ErrEndedInEffect) {
		t.Fatalf("a step ending inside effect %s: %v", effect, err)
	}
}
