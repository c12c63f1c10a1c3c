package workflow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// replay is one step's run of the definition against the run's records. It
// reads the state and judges jobs as they are named; it writes nothing. The
// step commits what it found afterwards.
type replay struct {
	store  *store.Run
	dir    string
	def    *Definition
	defPkg string
	params Params
	limits Limits
	state  *store.State

	named    map[string]*named
	order    []*named          // in the order jobs were first named
	owners   map[string]string // output and problem paths → job
	readers  map[string][]*named
	failures []failure
	ruleErr  error
	ioErr    error
	hashes   hashes       // of the files this step read
	active   *runningPath // the path running now
	ranToEnd bool

	effects      map[string]*store.Effect // journals, as read and as written in this step
	reached      map[string]bool          // effects declared in this step
	uncertain    []EffectState
	effectBlocks []effectBlock
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
	rec     *store.JobState // the record as judged; committed unless handed out
	current store.Inputs
	reopen  string    // why an accepted output is handed out again
	block   *jobBlock // with blocked and stopped

	newlyAccepted bool           // accepted in this step
	refusal       *store.Failure // a failed attempt judged in this step
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

func newReplay(o *Orchestrator, st *store.State, effects map[string]*store.Effect, limits Limits) *replay {
	return &replay{
		store:   o.run,
		dir:     o.run.Dir,
		def:     o.def,
		defPkg:  funcPackage(o.def.Run),
		params:  o.params,
		limits:  limits,
		state:   st,
		named:   map[string]*named{},
		owners:  map[string]string{},
		readers: map[string][]*named{},
		effects: effects,
		reached: map[string]bool{},
	}
}

// run replays the definition from the top.
func (r *replay) run() {
	ctx := &Context{r: r}
	_, r.ranToEnd = r.runPath(func() any {
		if err := r.def.Run(ctx); err != nil {
			r.fail(r.errorFailure(err, ""))
			return nil
		}
		return nil
	})
	if r.ranToEnd && r.failed() {
		r.ranToEnd = false
	}
}

func (r *replay) failed() bool { return len(r.failures) > 0 }

func (r *replay) rule(format string, args ...any) error {
	return &DefinitionError{Definition: r.def.Name, Rule: fmt.Sprintf(format, args...)}
}

func (r *replay) agent(c *Context, j Job) (*Handle, error) {
	s, err := newSpec(r.def.Name, r.dir, j)
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
		if owner, ok := r.owners[p]; ok {
			return nil, r.rule("path %s is owned by job %s and job %s; each path has one owner", p, owner, j.Name)
		}
	}
	n := &named{spec: s}
	if err := r.judge(n); err != nil {
		return nil, err
	}
	n.handle = &Handle{ctx: c, name: j.Name, path: filepath.Join(r.dir, filepath.FromSlash(s.output)), accepted: n.verdict == verdictAccepted}
	if err := r.guardReads(n); err != nil {
		return nil, err
	}
	// Owned only once named: a job whose judgment ended its path is not
	// half in the step when another path names it again.
	r.owners[s.output], r.owners[s.problem] = j.Name, j.Name
	r.named[j.Name] = n
	r.order = append(r.order, n)
	for _, in := range s.inputs {
		r.readers[in] = append(r.readers[in], n)
	}
	return n.handle, nil
}

// guardReads refuses a job that reads the output of a job named in this step
// and not accepted, whichever of the two is named first, so that an accepted
// consumer's wait cannot pass while its producer is pending.
func (r *replay) guardReads(n *named) error {
	for _, in := range n.spec.inputs {
		if owner, ok := r.owners[in]; ok && owner != n.spec.job.Name {
			if p := r.named[owner]; p != nil && p.verdict != verdictAccepted && p.spec.output == in {
				return r.readsPending(n.spec.job.Name, in, owner)
			}
		}
	}
	if n.verdict != verdictAccepted {
		if readers := r.readers[n.spec.output]; len(readers) > 0 {
			return r.readsPending(readers[0].spec.job.Name, n.spec.output, n.spec.job.Name)
		}
	}
	return nil
}

func (r *replay) readsPending(consumer, path, producer string) error {
	return r.rule("job %s reads %s, the output of job %s, which is not accepted; wait on %s before naming %s",
		consumer, path, producer, producer, consumer)
}

// judge decides a job's verdict from its record and the files on disk. The
// first rule that applies decides.
func (r *replay) judge(n *named) error {
	name := n.spec.job.Name
	rec := cloneJob(r.state.Jobs[name])
	n.rec = rec
	if rec.Stopped != nil {
		n.verdict = verdictStopped
		n.block = &jobBlock{kind: BlockKind(rec.Stopped.Kind), reason: rec.Stopped.Reason, permitted: PermitStop, record: rec.Stopped.Record}
		return nil
	}
	current, err := inputState(r.dir, n.spec, &r.hashes)
	if err != nil {
		return fmt.Errorf("job %s: %w", name, err)
	}
	n.current = current
	outPath := r.abs(n.spec.output)
	probPath := r.abs(n.spec.problem)

	if text, err := os.ReadFile(probPath); err == nil {
		// The worker said it could not do the task: whatever lies beside the
		// report is flagged, and nothing at the output path is accepted
		// again without a new hand-out.
		rec.Outstanding, rec.LastInput, rec.Accepted = nil, nil, nil
		keep := []string{n.spec.problem}
		if exists(outPath) {
			keep = append(keep, n.spec.output)
		}
		rec.History = append(rec.History, fmt.Sprintf("attempt %d: the worker wrote a problem report", rec.Handouts))
		r.blockJob(n, BlockProblemReport, "the worker wrote a problem report")
		n.block.problem = string(text)
		n.block.keep = keep
		return nil
	}

	outSHA, err := r.hashes.of(outPath)
	if err != nil {
		return fmt.Errorf("hash output of job %s: %w", name, err)
	}

	if acc := rec.Accepted; acc != nil {
		var why []string
		if outSHA == "" {
			why = append(why, "its output was removed")
		} else if outSHA != acc.Output {
			why = append(why, "its output was edited")
		}
		if current.Digest != acc.Input.Digest {
			for _, c := range changes(acc.Input, current) {
				why = append(why, c+" changed")
			}
		}
		if len(why) == 0 {
			if kind, _ := validate(n.spec.job.Validate, outPath); kind == "" {
				n.verdict = verdictAccepted
				return nil
			}
			why = append(why, "its validator now refuses it")
		}
		n.verdict = verdictHandout
		n.reopen = strings.Join(why, "; ")
		return nil
	}

	if out := rec.Outstanding; out != nil {
		kind, reason, messages := BlockKind(""), "", []string(nil)
		switch {
		case outSHA == "":
			kind, reason = BlockNoOutput, "no output"
			messages = []string{"no output was written to " + n.spec.output}
		case current.Digest != out.Digest:
			kind = BlockInputChanged
			reason = strings.Join(changes(*out, current), ", ") + " changed after hand-out"
			messages = []string{reason + "; the output was made from other inputs"}
		default:
			kind, messages = validate(n.spec.job.Validate, outPath)
			switch kind {
			case "":
				r.accept(n, outSHA)
				return nil
			case BlockRefused:
				reason = "the output was refused by its validator"
			default:
				reason = "the validator failed"
			}
		}
		rec.Outstanding = nil
		rec.Failures++
		rec.Messages = messages
		rec.LastFailure = &store.Failure{Kind: string(kind), Reason: reason}
		n.refusal = rec.LastFailure
		line := fmt.Sprintf("attempt %d: %s", rec.Handouts, reason)
		for _, m := range messages {
			line += "\n  - " + m
		}
		rec.History = append(rec.History, line)
		if rec.Failures > r.limits.Retries {
			r.blockJob(n, kind, fmt.Sprintf("%s, attempt %d of %d", reason, rec.Failures, r.limits.Retries+1))
			if outSHA != "" {
				// The last refused output goes where its record says, so
				// that no repair has to take it out of the way.
				n.block.keep = []string{n.spec.output}
			}
			return nil
		}
		n.verdict = verdictHandout
		return nil
	}

	// Nothing outstanding and never accepted: an output in place is judged
	// against the input state of the last hand-out. This is how a repair
	// gets a valid output accepted, and why a file that was never handed
	// out is not.
	if outSHA != "" && rec.LastInput != nil && rec.LastInput.Digest == current.Digest {
		if kind, _ := validate(n.spec.job.Validate, outPath); kind == "" {
			r.accept(n, outSHA)
			return nil
		}
	}
	n.verdict = verdictHandout
	return nil
}

func (r *replay) accept(n *named, outSHA string) {
	rec := n.rec
	rec.Accepted = &store.Acceptance{Input: n.current, Output: outSHA, At: store.Now()}
	rec.Failures, rec.BlocksTowardLimit = 0, 0
	rec.Outstanding = nil
	in := n.current
	rec.LastInput = &in
	rec.Messages, rec.History = nil, nil
	n.verdict = verdictAccepted
	n.newlyAccepted = true
}

// blockJob counts a block of the job: the retry count starts over, and the
// block permits a repair while the job's blocks in a row are within the
// repair limit.
func (r *replay) blockJob(n *named, kind BlockKind, reason string) {
	rec := n.rec
	rec.BlocksTowardLimit++
	rec.Blocks++
	b := &jobBlock{
		kind:      kind,
		reason:    reason,
		permitted: PermitRepair,
		record:    store.JobBlockPath(n.spec.job.Name, rec.Blocks),
		attempts:  rec.History,
	}
	rec.History, rec.Failures = nil, 0
	rec.LastFailure = &store.Failure{Kind: string(kind), Reason: reason}
	if rec.BlocksTowardLimit > r.limits.Repairs {
		b.permitted = PermitStop
		rec.Stopped = &store.Stop{Kind: string(kind), Reason: reason, Record: b.record}
	}
	n.verdict = verdictBlocked
	n.block = b
}

// validate runs a validator, turning a panic or a failure to judge into a
// refusal of its own kind. An empty kind means the output is valid.
func validate(v Validator, path string) (kind BlockKind, messages []string) {
	if v == nil {
		return "", nil
	}
	defer func() {
		if p := recover(); p != nil {
			kind, messages = BlockValidatorFailed, []string{fmt.Sprintf("the validator panicked: %v", p)}
		}
	}()
	err := v(path)
	var refusal *Refusal
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &refusal):
		return BlockRefused, slices.Clone(refusal.Messages)
	default:
		return BlockValidatorFailed, []string{"the validator failed: " + err.Error()}
	}
}

func (r *replay) abs(rel string) string { return filepath.Join(r.dir, filepath.FromSlash(rel)) }

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// cloneJob returns a deep copy of a job's record, or a fresh record.
func cloneJob(j *store.JobState) *store.JobState {
	if j == nil {
		return &store.JobState{}
	}
	c := *j
	c.Messages = slices.Clone(j.Messages)
	c.History = slices.Clone(j.History)
	if j.Outstanding != nil {
		o := cloneInputs(*j.Outstanding)
		c.Outstanding = &o
	}
	if j.LastInput != nil {
		l := cloneInputs(*j.LastInput)
		c.LastInput = &l
	}
	if j.Accepted != nil {
		a := *j.Accepted
		a.Input = cloneInputs(a.Input)
		c.Accepted = &a
	}
	if j.LastFailure != nil {
		f := *j.LastFailure
		c.LastFailure = &f
	}
	if j.Stopped != nil {
		s := *j.Stopped
		c.Stopped = &s
	}
	return &c
}

func cloneInputs(in store.Inputs) store.Inputs {
	in.Files = slices.Clone(in.Files)
	return in
}
