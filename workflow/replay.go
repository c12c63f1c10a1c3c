package workflow

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"

	"github.com/custodian-run/custodian/store"
)

// replay is one step's run of the definition against the run's records. It
// reads the state and judges jobs as they are named; the only thing it
// writes is an effect's journal, through journal, because the process may
// end inside the effect. What it found becomes a plan (decide.go), which
// the step applies afterwards.
type replay struct {
	run   *store.Run
	files *store.Files
	// verdicts are what this code's validators accepted before.
	verdicts *store.Verdicts
	keyBuf   []byte // verdictKey's
	dir      string
	def      *Definition
	defPkg   string
	params   Params
	limits   Limits
	state    *store.State
	journal  func(label string, e *store.Effect) error

	named    map[string]*named
	order    []*named          // in the order jobs were first named
	owners   map[string]*named // output and problem paths → the job that owns them
	readers  map[string]*named // paths no job owned yet → the first job named that reads it
	failures []failure
	ruleErr  error
	ioErr    error
	active   *runningPath // the path running now
	ranToEnd bool

	effects      map[string]*store.Effect // journals, as read and as written in this step
	reached      map[string]bool          // effects declared in this step
	uncertain    []EffectState
	effectBlocks []effectBlock

	patches []string        // the patches the run was started with
	changes []change        // changes of the definition not let through
	lifted  bool            // a stop of a changed definition this binary no longer finds
	looked  map[string]bool // the paths the definition asked Context.Path for
	lookMu  sync.Mutex      // Path is pure for the author, and may be called from any goroutine
	carried map[string]bool // former names whose records carried over

	// dry is a replay that runs no effect and asks no recognizer, for
	// check: where a step would, it notes what the step would do and ends
	// the path.
	dry      bool
	foreseen []CheckItem
	maps     []Map // paths outside the run, recorded at Old, found at New

	// endIn names an effect in which the step ends as a crash would: after
	// journaling its start, and after its do when endAfterDo.
	endIn      string
	endAfterDo bool
}

// foresee notes what the next step would do that a dry replay does not.
func (r *replay) foresee(subject Subject, reason string) {
	r.foreseen = append(r.foreseen, CheckItem{Subject: subject, Reason: reason})
}

// verdict is what judging a job decided.
type verdict int

const (
	verdictAccepted verdict = iota
	verdictHandout
	verdictBlocked
	verdictStopped
)

// named is a job named in this step, and its judgment.
type named struct {
	spec    *spec
	handle  *Handle
	verdict verdict
	was     *store.JobState // the job's state as the step read it; nil for a new job
	js      *store.JobState // the job's state as judged; committed unless handed out
	current store.Inputs
	reopen  string    // why an accepted output is handed out again
	block   *jobBlock // with blocked and stopped

	carriedFrom     string         // the former name whose record carried over
	newlyAccepted   bool           // accepted in this step
	refusal         *store.Failure // a failed attempt judged in this step
	refusalMessages []string       // what the refusal told the next attempt
}

// jobBlock is a job's block found in this step.
type jobBlock struct {
	kind      BlockKind
	reason    string
	permitted Permission
	record    string   // run-relative
	attempts  []string // the failed attempts that led to it
	problem   string   // the worker's problem report
	keep      []string // run-relative files to move aside, in order
}

// newReplay makes a replay of the records rec, with a step's file hasher
// and verdict cache, or new ones.
func newReplay(o *Orchestrator, rec *loaded, limits Limits) *replay {
	st, files, verdicts := rec.state, rec.files, rec.verdicts
	if files == nil {
		files = o.run.Files()
	}
	if verdicts == nil {
		verdicts = o.run.Verdicts(o.judgeCode())
	}
	return &replay{
		run:      o.run,
		files:    files,
		verdicts: verdicts,
		dir:      o.run.Dir,
		def:      o.def,
		defPkg:   funcPackage(o.def.Run),
		params:   o.def.withDefaults(o.params),
		limits:   limits,
		state:    st,
		journal:  o.run.SaveEffect,
		// Sized for the jobs the state knows, which a replay mostly names
		// again: ten thousand jobs would grow each map a dozen times.
		named:   make(map[string]*named, len(st.Jobs)),
		owners:  make(map[string]*named, 2*len(st.Jobs)),
		readers: make(map[string]*named, len(st.Jobs)),
		effects: rec.effects,
		reached: map[string]bool{},
		patches: o.run.Record.Patches,
		carried: map[string]bool{},
		looked:  map[string]bool{},
	}
}

// replayed makes a replay of rec, sets it up with setUp and plays it. The
// replay takes files on trust that lookers verify behind it (store.Files):
// when one was found changed, the definition's own code wrote it while the
// replay ran, and the replay is played again, from the top, taking nothing
// on trust. Nothing the first play did is kept: a replay writes nothing
// before it confirms its files (confirmFiles), and the verdicts it noted,
// which a validator may have given on a file other than the one the
// replay's key named, are read again from the records. (What the hash
// cache learned stays: each of its entries is what a read found.)
func (o *Orchestrator) replayed(rec *loaded, limits Limits, setUp func(*replay)) *replay {
	// The one record a replay changes as it plays: an approval of a change
	// this binary does not make is dropped (redefined).
	allowed := maps.Clone(rec.state.Workflow.Allowed)
	r := newReplay(o, rec, limits)
	setUp(r)
	r.play()
	if !r.files.Stale() {
		return r
	}
	rec.state.Workflow.Allowed = allowed
	again := *rec
	again.files, again.verdicts = r.files, nil
	again.files.Distrust()
	r = newReplay(o, &again, limits)
	setUp(r)
	r.play()
	return r
}

// confirmFiles settles the files before the replay journals an effect,
// which writes a record and may write anything in the run: when a file it
// took on trust was found changed, the path ends, and the replay is played
// again (replayed) before anything is written.
func (r *replay) confirmFiles() {
	if r.files.Stale() {
		r.endPath()
	}
}

// look notes a path the definition asked for.
func (r *replay) look(rel string) {
	r.lookMu.Lock()
	defer r.lookMu.Unlock()
	r.looked[rel] = true
}

// play replays the definition from the top. The files the state names are
// looked at on the machine's other cores while it runs (store.Prefetch).
func (r *replay) play() {
	if !r.files.Prefetching() {
		// No hash cache told the step what to look at while it read its
		// records: the state does, now.
		r.files.Prefetch(stateFiles(r.state))
	}
	defer r.files.Settle()
	ctx := &Context{r: r}
	_, r.ranToEnd = r.runPath(func() any {
		if err := r.def.Run(ctx); err != nil {
			r.fail(r.errorFailure(err, ""))
		}
		return nil
	})
	if r.ranToEnd && r.failed() {
		r.ranToEnd = false
	}
	r.removedPatches(r.patches)
	r.noLongerNamed()
	r.changes = sortedChanges(r.changes)
}

func (r *replay) rule(format string, args ...any) error {
	return &DefinitionError{Definition: r.def.Name, Rule: fmt.Sprintf(format, args...)}
}

func (r *replay) agent(c *Context, j Job) (*Handle, error) {
	s, err := newSpec(r.def.Name, r.dir, r.maps, j)
	if err != nil {
		return nil, err
	}
	if n, ok := r.named[j.Name]; ok {
		if !n.spec.sameTask(s) {
			return nil, r.rule("job %s is named for two different tasks; give each task its own name", j.Name)
		}
		return n.handle, nil
	}
	for _, p := range []string{s.output, s.problem} {
		if owner := r.owners[p]; owner != nil {
			return nil, r.rule("path %s is owned by job %s and job %s; each path has one owner", p, owner.spec.job.Name, j.Name)
		}
	}
	n := &named{spec: s}
	if err := r.judge(n); err != nil {
		return nil, err
	}
	n.handle = &Handle{ctx: c, name: j.Name, output: s.output, accepted: n.verdict == verdictAccepted}
	if err := r.guardReads(n); err != nil {
		return nil, err
	}
	// Owned only once named: a job whose judgment ended its path is not
	// half in the step when another path names it again.
	r.owners[s.output], r.owners[s.problem] = n, n
	r.named[j.Name] = n
	if n.carriedFrom != "" {
		r.carried[n.carriedFrom] = true
	}
	r.order = append(r.order, n)
	for _, in := range s.inputs {
		// A path a job owns has its one owner: only the reader of a path
		// that a job named later may own is looked for.
		if r.owners[in] == nil && r.readers[in] == nil {
			r.readers[in] = n
		}
	}
	return n.handle, nil
}

// guardReads refuses a job that reads the output of a job named in this step
// and not accepted, whichever of the two is named first, so that an accepted
// consumer's wait cannot pass while its producer is pending.
func (r *replay) guardReads(n *named) error {
	for _, in := range n.spec.inputs {
		if p := r.owners[in]; p != nil && p != n && p.verdict != verdictAccepted && p.spec.output == in {
			return r.readsPending(n.spec.job.Name, in, p.spec.job.Name)
		}
	}
	if n.verdict != verdictAccepted {
		if reader := r.readers[n.spec.output]; reader != nil {
			return r.readsPending(reader.spec.job.Name, n.spec.output, n.spec.job.Name)
		}
	}
	return nil
}

func (r *replay) readsPending(consumer, path, producer string) error {
	return r.rule("job %s reads %s, the output of job %s, which is not accepted; wait on %s before naming %s",
		consumer, path, producer, producer, consumer)
}

func (r *replay) abs(rel string) string { return filepath.Join(r.dir, filepath.FromSlash(rel)) }

// stateFiles lists the files the last replay judged, every job's inputs
// and output, in the order a replay is likely to ask for them, so that the
// lookers keep ahead of it: job by job in the order of their names, each
// job's inputs and then its output, and an input that is another job's
// output with that job.
func stateFiles(st *store.State) []string {
	names := make([]string, 0, len(st.Jobs))
	n := 0
	for name, js := range st.Jobs {
		if js.Input != nil {
			names = append(names, name)
			n += 1 + len(js.Input.Files)
		}
	}
	slices.Sort(names)
	produced := make(map[string]bool, len(names))
	for _, name := range names {
		produced[st.Jobs[name].Input.Output] = true
	}
	keys := make([]string, 0, n)
	for _, name := range names {
		in := st.Jobs[name].Input
		for _, f := range in.Files {
			if !produced[f.Path] {
				keys = append(keys, f.Path)
			}
		}
		keys = append(keys, in.Output)
	}
	return keys
}
