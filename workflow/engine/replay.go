package engine

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
	"github.com/custodian-run/custodian/workflow/internal/seam"
)

// replay is one step's run of the definition against the run's records. It
// reads the state and judges jobs as they are named; the only thing it
// writes is an effect's journal, through journal, because the process may
// end inside the effect. What it found becomes a plan (decide.go), which
// the step applies afterwards.
type replay struct {
	run     *store.Run
	files   *store.Files
	build   Build // the build whose code this replay is
	dir     string
	def     *workflow.Definition
	defPkg  string
	params  workflow.Params
	limits  workflow.Limits
	state   *store.State
	journal func(label string, e *store.Effect) error

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

	asked map[string]store.Question // the questions asked in this step (Context.Decide)
	open  map[string]store.Question // those of them without a recorded choice

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

	// running are the hand-outs a drive holds, job → attempt: a worker of
	// each runs, or waits for a place. The step leaves them alone.
	running map[string]int

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
	// verdictRunning: a hand-out a drive's worker works on, left alone:
	// neither judged, nor charged, nor handed out again.
	verdictRunning
)

// named is a job named in this step, and its judgment.
type named struct {
	spec    *spec
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
	spared          string         // why a hand-out without an output was not charged
	course          []string       // what of its task the definition's data changed, by the same build
	sparedAttempt   int            // the attempt number it kept
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

// newReplay makes a replay of the records rec.
func newReplay(o *Run, rec *loaded, limits workflow.Limits) *replay {
	return &replay{
		run:     o.records,
		files:   o.records.Files(),
		build:   o.build,
		dir:     o.records.Dir,
		def:     o.def,
		defPkg:  funcPackage(o.def.Run),
		params:  withDefaults(o.def, o.params),
		limits:  limits,
		state:   rec.state,
		journal: o.records.SaveEffect,
		// Sized for the jobs the state knows, which a replay mostly names
		// again.
		named:   make(map[string]*named, len(rec.state.Jobs)),
		owners:  make(map[string]*named, 2*len(rec.state.Jobs)),
		readers: make(map[string]*named, len(rec.state.Jobs)),
		effects: rec.effects,
		reached: map[string]bool{},
		asked:   map[string]store.Question{},
		open:    map[string]store.Question{},
		patches: o.records.Record.Patches,
		carried: map[string]bool{},
		looked:  map[string]bool{},
	}
}

// look notes a path the definition asked for.
func (r *replay) look(rel string) {
	r.lookMu.Lock()
	defer r.lookMu.Unlock()
	r.looked[rel] = true
}

// play replays the definition from the top.
func (r *replay) play() {
	ctx := seam.NewContext(r).(*workflow.Context)
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
	return &workflow.DefinitionError{Definition: r.def.Name, Rule: fmt.Sprintf(format, args...)}
}

func (r *replay) agent(j workflow.Job) (*named, error) {
	s, err := newSpec(r.def.Name, r.dir, r.maps, j)
	if err != nil {
		return nil, err
	}
	if n, ok := r.named[j.Name]; ok {
		if !n.spec.sameTask(s) {
			return nil, r.rule("job %s is named for two different tasks; give each task its own name", j.Name)
		}
		return n, nil
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
	return n, nil
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
