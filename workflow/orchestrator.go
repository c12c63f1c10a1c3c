package workflow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/custodian-run/custodian/store"
)

// Version is the version of custodian this binary was built from. A run
// records it when it starts.
var Version = buildVersion()

// buildVersion reads the module version, or for a build from a checkout
// the commit it was built from, marked dirty when the tree had changes.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	version, dirty := "devel", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			version += "+" + s.Value[:min(12, len(s.Value))]
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty {
		version += "-dirty"
	}
	return version
}

// Orchestrator is the code orchestrator of one run: it replays the run's
// definition against the run's records and decides what happens next. It
// keeps nothing in memory between calls; every call reads the records anew
// under the run's lock.
type Orchestrator struct {
	run    *store.Run
	def    *Definition
	params Params
}

// Start starts a run of the registered definition name in dir with params.
// When dir is empty it creates a fresh directory under runs/ in the working
// directory, named by the definition and the time, so that names sort by
// start and never run out.
func Start(reg *Registry, name, dir string, params Params) (*Orchestrator, error) {
	def, err := reg.Lookup(name)
	if err != nil {
		return nil, err
	}
	if _, err := def.limits(params); err != nil {
		return nil, err
	}
	if dir == "" {
		if dir, err = NewRunDir("runs", name); err != nil {
			return nil, err
		}
	}
	if params == nil {
		params = Params{}
	}
	run, err := store.Create(dir, store.RunRecord{Definition: name, Params: params, Version: Version}, store.NewState(InputStateVersion))
	if err != nil {
		return nil, err
	}
	return &Orchestrator{run: run, def: def, params: params}, nil
}

// NewRunDir creates and returns a new directory under base for a run of the
// definition name: <name>-<UTC time to the nanosecond>. Names sort by the
// time they were made, and a name that is taken moves on by a nanosecond,
// so there is always another.
func NewRunDir(base, name string) (string, error) {
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
func Open(reg *Registry, dir string) (*Orchestrator, error) {
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
	return &Orchestrator{run: run, def: def, params: Params(run.Record.Params)}, nil
}

// Dir returns the run directory, absolute.
func (o *Orchestrator) Dir() string { return o.run.Dir }

// Definition returns the run's definition.
func (o *Orchestrator) Definition() *Definition { return o.def }

// Params returns the run's parameters.
func (o *Orchestrator) Params() Params { return o.params }

// loaded is a run's records as one command read them.
type loaded struct {
	state   *store.State
	effects map[string]*store.Effect
	reports []store.Report
}

// locked takes the run's lock, reads every record and calls fn with them.
// Every command reads them all, so that a record that cannot be trusted
// stops every command, not only the one that happens to need it. A resolve
// that committed and ended before its journal was written is finished
// first.
func (o *Orchestrator) locked(fn func(rec *loaded) error) error {
	unlock, err := o.run.Lock()
	if err != nil {
		return fmt.Errorf("run %s: %w", o.run.Dir, err)
	}
	defer unlock()
	rec, err := o.read()
	if err != nil {
		return err
	}
	if e := rec.state.Resolving; e != nil {
		if err := o.finishResolving(rec.state); err != nil {
			return err
		}
		rec.effects[e.Name] = e
	}
	return fn(rec)
}

// read reads every record of the run and checks them against each other,
// without the lock and without writing: a committed resolve's journal
// record stands in for the one not yet written.
func (o *Orchestrator) read() (*loaded, error) {
	st, err := o.run.LoadState()
	if err != nil {
		return nil, err
	}
	if v := st.InputState; v != InputStateVersion {
		return nil, &store.RecordError{
			Path: o.run.StatePath("state.json"),
			Err:  fmt.Errorf("its input states were computed by algorithm version %d; this custodian computes version %d", v, InputStateVersion),
		}
	}
	rec := &loaded{state: st}
	if rec.effects, err = o.run.Effects(); err != nil {
		return nil, err
	}
	if e := st.Resolving; e != nil {
		rec.effects[e.Name] = e
	}
	for name := range st.Effects {
		// An effect the history recorded must still have its journal:
		// without it, the effect would run again.
		if rec.effects[name] == nil {
			return nil, &store.RecordError{Path: o.run.StatePath("effects", name+".json"),
				Err: fmt.Errorf("the journal of effect %s is missing", name)}
		}
	}
	if rec.reports, err = o.run.Reports(); err != nil {
		return nil, err
	}
	return rec, nil
}

// Report events: the only things the agent orchestrator reports.
const (
	EventLaunchFailed = "launch-failed"
	EventRepair       = "repair"
	EventStop         = "stop"
)

// Events lists the report events, in the order the docs give them.
var Events = []string{EventLaunchFailed, EventRepair, EventStop}

// Report records what only the agent orchestrator can see: a launch that
// failed, a repair it made, or that it stopped. job, when given, must name a
// job of the run. A report never advances the run and never causes an
// acceptance; it appears in the block records of its job, or of every
// subject when it names none.
func (o *Orchestrator) Report(event, job, text string) (store.Report, error) {
	if !slices.Contains(Events, event) {
		return store.Report{}, refused("report one of: launch-failed, repair, stop",
			"event %q is not reported; the events are launch-failed, repair, stop", event)
	}
	var rep store.Report
	err := o.locked(func(rec *loaded) error {
		if job != "" && rec.state.Jobs[job] == nil {
			return refused("name a job that step has handed out, or leave --job out",
				"job %q is not a job of run %s", job, o.run.Dir)
		}
		var err error
		rep, err = o.run.AppendReport(store.Report{Event: event, Job: job, Text: text, At: store.Now(),
			Seq: rec.state.Seq, Step: rec.state.Steps})
		return err
	})
	return rep, err
}

// Release lets a stopped subject, a job or "workflow", be tried again: its
// attempts and repairs start over. Accepted outputs of other jobs are
// untouched. Only the operator releases.
func (o *Orchestrator) Release(subject string) error {
	return o.locked(func(rec *loaded) error {
		st := rec.state
		switch {
		case strings.HasPrefix(subject, "effect "):
			return refused("the operator records what took place with resolve RUN NAME completed|absent",
				"%s is not released; an effect is resolved", subject)
		case subject == "workflow":
			if st.Workflow.Stopped == nil {
				return refused("run step: a block that permits a repair is the agent orchestrator's to repair; release only a subject step reports as permitting only stopping", "workflow is not stopped")
			}
			st.Workflow.Stopped = nil
			st.Workflow.Places = map[string]int{}
		default:
			j := st.Jobs[subject]
			if j == nil {
				return refused("name a job of the run, or workflow", "run %s has no job %q", o.run.Dir, subject)
			}
			if j.Stopped == nil {
				return refused("run step: a block that permits a repair is the agent orchestrator's to repair; release only a subject step reports as permitting only stopping", "job %s is not stopped", subject)
			}
			j.Stopped = nil
			j.Failures, j.BlocksTowardLimit = 0, 0
			j.Outstanding = nil
			j.History = nil
		}
		return o.commitState("release", st, rec.effects, []store.Event{{Type: store.EventRelease, Subject: subject}})
	})
}

// Resolve records what the operator established about an effect whose fate
// code cannot settle: one left started, one whose inputs changed after it
// completed, or one the definition no longer reaches. Completed lets it
// stand with its inputs as they are now; absent withdraws it, so that it
// runs again when the definition reaches it. Only the operator resolves.
// An effect resolved as completed is no longer owed: a definition that
// stops reaching it does not block on it.
func (o *Orchestrator) Resolve(name string, what Recognition) error {
	if what != Completed && what != Absent {
		return refused("resolve completed or absent", "an effect cannot be resolved as %s; establish whether it took place (completed) or not (absent)", what)
	}
	return o.locked(func(rec *loaded) error {
		st := rec.state
		e := rec.effects[name]
		switch {
		case e == nil:
			return refused("custodian status RUN lists the run's effects and their state", "no effect named %q is recorded in run %s", name, o.run.Dir)
		case e.Status == store.EffectAbsent:
			return refused("run step: the effect runs when the definition reaches it", "effect %s is resolved absent; there is nothing to resolve", name)
		}
		keys := make([]string, len(e.Inputs))
		for i, f := range e.Inputs {
			keys[i] = f.Path
		}
		current, err := filesState(o.run.Dir, keys, nil)
		if err != nil {
			return err
		}
		unreached := slices.Contains(st.Unreached, name)
		if e.Status == store.EffectCompleted && e.State == digestFiles(current) && !unreached {
			return refused("run step: the effect stands", "effect %s is completed and matches its inputs; there is nothing to resolve", name)
		}
		settled := *e
		settled.At, settled.By = store.Now(), "operator"
		if what == Absent {
			settled.Status = store.EffectAbsent
		} else {
			settled.Status = store.EffectCompleted
			// It stands as the operator found it: with its inputs as they are
			// now, and no longer owed should the definition stop reaching it.
			settled.Inputs, settled.State = current, digestFiles(current)
			settled.Required = false
		}
		// The state commits the resolve and owes the journal its new record,
		// as a step owes its moves: a process that ends after the commit
		// leaves the journal to the next command, and the history says once
		// that the operator resolved it.
		rec.effects[name] = &settled
		st.Resolving = &settled
		st.Effects[name] = store.EffectSeen{Status: settled.Status, Runs: settled.Runs}
		st.Unreached = slices.DeleteFunc(st.Unreached, func(n string) bool { return n == name })
		if err := o.commitState("resolve-state", st, rec.effects, []store.Event{{Type: store.EventResolve, Subject: name, Text: what.String()}}); err != nil {
			return err
		}
		return o.finishResolving(st)
	})
}

// finishResolving writes the journal record a committed resolve owes, and
// then the state without the debt.
func (o *Orchestrator) finishResolving(st *store.State) error {
	if st.Resolving == nil {
		return nil
	}
	if err := o.run.SaveEffect("resolve", st.Resolving); err != nil {
		return err
	}
	st.Resolving = nil
	return o.run.SaveState("resolve-done", st)
}
