package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
)

// Run is one run, open with its definition: it replays the definition
// against the run's records and decides what happens next. It keeps
// nothing in memory between calls; every call reads the records anew,
// under the run's lock when it writes.
type Run struct {
	records *store.Run // the run directory's records
	def     *workflow.Definition
	params  workflow.Params
	build   Build // the build this Run's code is: ThisBuild, unless AsBuild
}

// Start starts a run of the registered definition name in dir with params.
// When dir is empty it creates a fresh directory under runs/ in the working
// directory, named by the definition and the time, so that names sort by
// start and never run out.
func Start(reg *workflow.Registry, name, dir string, params workflow.Params) (*Run, error) {
	def, err := reg.Lookup(name)
	if err != nil {
		return nil, err
	}
	if err := checkParams(def, params); err != nil {
		return nil, err
	}
	if _, err := limits(def, withDefaults(def, params)); err != nil {
		return nil, err
	}
	if dir == "" {
		if dir, err = newRunDir("runs", name); err != nil {
			return nil, err
		}
	}
	if params == nil {
		params = workflow.Params{}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("start run %s: %w", dir, err)
	}
	if strings.ContainsFunc(abs, func(r rune) bool { return r == '`' || unicode.IsControl(r) }) {
		return nil, refused("choose a run directory whose path holds neither",
			"start run %q: the path holds a backtick or a control character, which the prompt files and step's output could not quote", abs)
	}
	run, err := store.Create(abs, store.RunRecord{Definition: name, Params: params, Patches: slices.Clone(def.Patches), Version: Version,
		Build: ThisBuild()}, store.NewState(InputStateVersion))
	if err != nil {
		return nil, err
	}
	return &Run{records: run, def: def, params: params, build: ThisBuild()}, nil
}

// newRunDir creates and returns a new directory under base for a run of the
// definition name: <name>-<UTC time to the nanosecond>. Names sort by the
// time they were made, and a name that is taken moves on by a nanosecond,
// so there is always another.
func newRunDir(base, name string) (string, error) {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("make run directory: %w", err)
	}
	t := time.Now().UTC()
	for {
		dir := filepath.Join(base, name+"-"+t.Format("20060102T150405.000000000Z"))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return filepath.Abs(dir)
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("make run directory: %w", err)
		}
		t = t.Add(time.Nanosecond)
	}
}

// Open opens the run in dir with its definition from reg. It writes nothing.
func Open(reg *workflow.Registry, dir string) (*Run, error) {
	run, err := store.Open(dir)
	if err != nil {
		return nil, err
	}
	def, err := reg.Lookup(run.Record.Definition)
	if err != nil {
		return nil, &RefusedError{
			Reason: fmt.Sprintf("open run %s: it runs definition %q, which this binary does not carry", run.Dir, run.Record.Definition),
			Hint:   "use the binary that started the run, or one that registers its definition",
			Err:    err,
		}
	}
	return &Run{records: run, def: def, params: workflow.Params(run.Record.Params), build: ThisBuild()}, nil
}

// AsBuild makes the run's steps act as the build b rather than this
// binary's: a test that swaps a definition's code in one process, or a tool
// that stands for another binary, says which build the code it runs is.
func (run *Run) AsBuild(b Build) { run.build = b }

// Dir returns the run directory, absolute.
func (run *Run) Dir() string { return run.records.Dir }

// ID returns the run's identity, as run.json records it: no two runs share
// it, wherever their directories are.
func (run *Run) ID() string { return run.records.Record.ID }

// Definition returns the run's definition.
func (run *Run) Definition() *workflow.Definition { return run.def }

// Params returns the run's parameters.
func (run *Run) Params() workflow.Params { return run.params }

// loaded is a run's records as one command read them.
type loaded struct {
	state   *store.State
	effects map[string]*store.Effect
	reports []store.Report
	round   *store.Round // the round a drive has in flight, or nil
}

// locked takes the run's lock, reads every record and calls fn with them.
// Every command reads them all, so that a record that cannot be trusted
// stops every command, not only the one that happens to need it. A resolve
// that committed and ended before its journal was written is finished
// first.
func (run *Run) locked(fn func(rec *loaded) error) error { return run.lockedWaiting(0, fn) }

// lockedWaiting is locked, waiting up to wait for a lock another process
// holds, rather than refusing at once: for custodian drive's bookkeeping,
// which an operator's command at the same instant must not end.
func (run *Run) lockedWaiting(wait time.Duration, fn func(rec *loaded) error) error {
	unlock, err := run.records.Lock()
	for deadline := time.Now().Add(wait); errors.Is(err, store.ErrBusy) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		unlock, err = run.records.Lock()
	}
	if err != nil {
		return fmt.Errorf("run %s: %w", run.records.Dir, err)
	}
	defer unlock()
	rec, err := run.read()
	if err != nil {
		return err
	}
	if a := rec.state.Abandoned; a != nil {
		return &AbandonedError{Run: run.records.Dir, At: a.At, Text: a.Text}
	}
	if e := rec.state.Resolving; e != nil {
		if err := run.finishResolving(rec.state); err != nil {
			return err
		}
		rec.effects[e.Name] = e
	}
	return fn(rec)
}

// read reads every record of the run and checks them against each other,
// without the lock and without writing: a committed resolve's journal
// record stands in for the one not yet written.
func (run *Run) read() (*loaded, error) {
	st, err := run.records.LoadState()
	if err != nil {
		return nil, err
	}
	if v := st.InputState; v != InputStateVersion {
		return nil, &store.RecordError{
			Path: run.records.StatePath("state.json"),
			Err:  fmt.Errorf("its input states were computed by algorithm version %d; this custodian computes version %d", v, InputStateVersion),
		}
	}
	rec := &loaded{state: st}
	if rec.effects, err = run.records.Effects(); err != nil {
		return nil, err
	}
	if e := st.Resolving; e != nil {
		rec.effects[e.Name] = e
	}
	for name := range st.Effects {
		// An effect the history recorded must still have its journal:
		// without it, the effect would run again.
		if rec.effects[name] == nil {
			return nil, &store.RecordError{Path: run.records.StatePath("effects", name+".json"),
				Err: fmt.Errorf("the journal of effect %s is missing", name)}
		}
	}
	if rec.reports, err = run.records.Reports(st.Reports); err != nil {
		return nil, err
	}
	if err := run.records.CheckHistory(st.Seq); err != nil {
		return nil, err
	}
	if rec.round, err = run.records.LoadRound(); err != nil {
		return nil, err
	}
	return rec, nil
}

// Close releases what the run holds open. A command's process
// ends soon after; a program that drives many runs closes each.
func (run *Run) Close() { run.records.Close() }
