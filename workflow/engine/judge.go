package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
)

// maxProblemReport bounds how much of a problem report is copied into the
// block record; the rest stays in the kept file.
const maxProblemReport = 64 << 10

// judge decides a job's verdict from its state and the files on disk. The
// first rule that applies decides.
func (r *replay) judge(n *named) error {
	name := n.spec.job.Name
	current, err := inputState(r.files, n.spec)
	if err != nil {
		return fmt.Errorf("job %s: %w", name, err)
	}
	n.current = current
	n.was = r.state.Jobs[name]
	n.js = cloneJob(n.was)
	if n.was == nil && !r.carryOver(n) && len(n.spec.job.Formerly) == 0 {
		r.renamedWithoutFormerly(n)
	}
	if n.was == nil && n.carriedFrom == "" && r.finishedUnderNewCode() {
		r.newWork(change{key: name, fingerprint: "new " + digest(current), subject: "job " + name,
			what: []string{"a new job in a finished run: the next step would hand it out"}})
	}
	js := n.js
	if a, ok := r.running[name]; ok && js.Outstanding != nil && attempt(js) == a {
		// Its worker may be writing its output now: judged once it ends.
		n.verdict = verdictRunning
		return nil
	}
	if t := js.Trouble; t != nil && t.Stopped != nil {
		n.verdict = verdictStopped
		n.block = &jobBlock{kind: BlockKind(t.Stopped.Kind), reason: t.Stopped.Reason, permitted: PermitStop, record: t.Stopped.Record}
		return nil
	}

	out, err := r.files.Hash(n.spec.output, r.maxOutput(n.spec))
	if err != nil {
		return fmt.Errorf("job %s: %w", name, err)
	}
	if blocked, err := r.problemReport(n, out); blocked || err != nil {
		return err
	}

	if js.Accepted != "" {
		if r.redefined(n) {
			// Taken as accepted for the rest of the replay, so that the step
			// finds every change; it then changes nothing.
			n.verdict = verdictAccepted
			return nil
		}
		var why []string
		switch {
		case js.Input.Output != current.Output:
			// The output is another file now: the old one stays as it was
			// accepted.
		case out.Kind == store.Missing:
			why = append(why, "its output was removed")
		case out.Kind != store.Regular:
			why = append(why, "its output was replaced by "+out.Kind.String())
		case out.SHA256 != js.Accepted:
			why = append(why, "its output was edited")
		}
		for _, c := range n.course {
			why = append(why, c+" (the same build: data the definition reads)")
		}
		if !sameInputs(*js.Input, current) {
			for _, c := range changes(*js.Input, current) {
				if len(n.course) == 0 || strings.HasPrefix(c, "input ") {
					why = append(why, c+" changed")
				}
			}
		}
		if len(why) == 0 {
			if kind, _ := r.validate(n); kind == "" {
				n.verdict = verdictAccepted
				return nil
			}
			why = append(why, "its validator now refuses it")
		}
		n.verdict = verdictHandout
		n.reopen = strings.Join(why, "; ")
		return nil
	}

	if js.Outstanding != nil {
		return r.judgeAttempt(n, out)
	}

	// Nothing outstanding and never accepted: an output in place is judged
	// against the input state of the last hand-out. This is how a repair
	// gets a valid output accepted, and why a file that was never handed
	// out is not.
	if out.SHA256 != "" && js.Input != nil && sameInputs(*js.Input, current) {
		if kind, _ := r.validate(n); kind == "" {
			r.accept(n, out.SHA256)
			return nil
		}
	}
	n.verdict = verdictHandout
	return nil
}

// problemReport blocks the job when its worker left a problem report: the
// worker said it could not do the task, so whatever lies beside the report
// is flagged, and nothing at the output path is accepted again without a
// new hand-out. A report that is not a regular file is not read; one that
// is, is read up to a bound.
func (r *replay) problemReport(n *named, out store.Content) (blocked bool, err error) {
	info, err := r.files.Stat(n.spec.problem)
	if err != nil {
		return false, fmt.Errorf("job %s: %w", n.spec.job.Name, err)
	}
	if info.Kind == store.Missing {
		return false, nil
	}
	var text string
	switch info.Kind {
	case store.Regular:
		data, _, cut, err := r.run.ReadText(n.spec.problem, maxProblemReport)
		if err != nil {
			return false, fmt.Errorf("job %s: %w", n.spec.job.Name, err)
		}
		text = string(data)
		if cut {
			text += fmt.Sprintf("\n\n(The report is longer than %d bytes and is cut here; the whole of it is kept, see below.)", maxProblemReport)
		}
	default:
		text = fmt.Sprintf("(The problem report is %s, not a regular file; it was not read. It is kept as it is, see below.)", info.Kind)
	}
	js := n.js
	js.Outstanding, js.Input, js.Accepted = nil, nil, ""
	keep := []string{n.spec.problem}
	if out.Kind != store.Missing {
		keep = append(keep, n.spec.output)
	}
	t := trouble(js)
	t.History = append(t.History, fmt.Sprintf("attempt %d: the worker wrote a problem report%s", attempt(js), launchesText(js.Outstanding)))
	r.blockJob(n, BlockProblemReport, "the worker wrote a problem report")
	n.block.problem = text
	n.block.keep = keep
	return true, nil
}

// judgeAttempt judges the output of an outstanding hand-out: accepted, or a
// failed attempt, handed out again until the retries are used up, then a
// block.
func (r *replay) judgeAttempt(n *named, out store.Content) error {
	js := n.js
	changed, err := r.promptChanged(n)
	if err != nil {
		return fmt.Errorf("job %s: %w", n.spec.job.Name, err)
	}
	kind, reason, messages := BlockKind(""), "", []string(nil)
	switch {
	case out.Kind == store.Missing && spare(js) != "":
		// No worker attempted it: handed out again, not charged.
		n.spared, n.sparedAttempt = spare(js), attempt(js)
		trouble(js).Spared++
		js.Outstanding = nil
		n.verdict = verdictHandout
		return nil
	case out.Kind == store.Missing:
		kind, reason = BlockNoOutput, "no output"
		if o := js.Outstanding; !o.Worked && o.Spare != "" {
			reason += fmt.Sprintf(" (%s; the job was spared %d times already)", o.Spare, MaxSpared)
		}
		messages = []string{"no output was written to " + n.spec.output}
	case changed:
		kind, reason = BlockPromptChanged, "the prompt file was changed after it was handed out"
		messages = []string{"the prompt file was changed after it was handed out; follow the new prompt file, not the old one"}
	case out.Kind != store.Regular:
		kind = BlockOutputNotRegular
		reason = "the output is " + out.Kind.String()
		messages = []string{fmt.Sprintf("the output is %s; write a regular file at %s", out.Kind, n.spec.output)}
	case out.Over:
		kind = BlockOutputTooLarge
		reason = fmt.Sprintf("the output is %d bytes, over the limit of %d bytes", out.Size, r.maxOutput(n.spec))
		messages = []string{reason + "; write a smaller file"}
	case !sameInputs(*js.Input, n.current):
		kind = BlockInputChanged
		reason = strings.Join(changes(*js.Input, n.current), ", ") + " changed after hand-out"
		messages = []string{reason + "; the output was made from other inputs"}
	default:
		kind, messages = r.validate(n)
		switch kind {
		case "":
			r.accept(n, out.SHA256)
			return nil
		case BlockRefused:
			reason = "the output was refused by its validator"
		default:
			reason = "the validator failed"
		}
	}
	line := fmt.Sprintf("attempt %d: %s%s", attempt(js), reason, launchesText(js.Outstanding))
	js.Outstanding = nil
	t := trouble(js)
	t.Failures++
	t.Messages = messages
	t.LastFailure = &store.Failure{Kind: string(kind), Reason: reason}
	n.refusal, n.refusalMessages = t.LastFailure, messages
	for _, m := range messages {
		line += "\n  - " + m
	}
	t.History = append(t.History, line)
	if t.Failures > r.limits.Retries {
		r.blockJob(n, kind, fmt.Sprintf("%s, attempt %d of %d", reason, t.Failures, r.limits.Retries+1))
		if out.Kind != store.Missing {
			// The last refused output goes where its record says, so
			// that no repair has to take it out of the way.
			n.block.keep = []string{n.spec.output}
		}
		return nil
	}
	n.verdict = verdictHandout
	return nil
}

// MaxSpared is how many hand-outs of one job a run may hand out again
// without charging an attempt, because no worker attempted them; past it,
// a missing output is a failed attempt like any other, so that a loop that
// never launches still ends.
const MaxSpared = 5

// attempt is the number of the job's last hand-out as an attempt: hand-outs
// that no worker attempted are not counted.
func attempt(js *store.JobState) int {
	if t := js.Trouble; t != nil {
		return js.Handouts - t.Spared
	}
	return js.Handouts
}

// spare says why the job's outstanding hand-out, if it has no output, is
// not to be charged: custodian drive launched no worker for it, or ended
// the one it launched, or the harness said its session was cut; "" when a
// worker ended on its own, or nothing says, or the job was spared
// MaxSpared times already.
func spare(js *store.JobState) string {
	o := js.Outstanding
	if o == nil || o.Worked || o.Spare == "" || js.Trouble != nil && js.Trouble.Spared >= MaxSpared {
		return ""
	}
	return o.Spare
}

// launchesText says how custodian drive's launches for a hand-out ended,
// for the attempt's line in a block record; "" when no drive launched it.
func launchesText(o *store.Handout) string {
	if o == nil || len(o.Launches) == 0 {
		return ""
	}
	return " (launches: " + strings.Join(o.Launches, "; ") + ")"
}

// promptChanged says whether the prompt file of the job's outstanding
// hand-out holds other bytes than the hand-out wrote: an output made from
// an edited prompt answers a task nobody gave.
func (r *replay) promptChanged(n *named) (bool, error) {
	c, err := r.files.Hash(store.PromptPath(n.spec.job.Name, n.js.Handouts), -1)
	if err != nil {
		return false, err
	}
	return c.SHA256 != n.js.Outstanding.Prompt, nil
}

func (r *replay) maxOutput(s *spec) int64 {
	if s.job.MaxOutput > 0 {
		return s.job.MaxOutput
	}
	return r.limits.MaxOutput
}

func (r *replay) accept(n *named, outSHA string) {
	js := n.js
	js.Accepted = outSHA
	in := n.current
	js.Input = &in
	js.Outstanding = nil
	if t := js.Trouble; t != nil {
		t.Failures, t.BlocksTowardLimit = 0, 0
		t.Messages, t.History = []string{}, []string{}
	}
	tidy(js)
	n.verdict = verdictAccepted
	n.newlyAccepted = true
}

// blockJob counts a block of the job: the retry count starts over, and the
// block permits a repair while the job's blocks in a row are within the
// repair limit.
func (r *replay) blockJob(n *named, kind BlockKind, reason string) {
	t := trouble(n.js)
	t.BlocksTowardLimit++
	t.Blocks++
	b := &jobBlock{
		kind:      kind,
		reason:    reason,
		permitted: PermitRepair,
		record:    store.JobBlockPath(n.spec.job.Name, t.Blocks),
		attempts:  t.History,
	}
	t.History, t.Failures = []string{}, 0
	t.LastFailure = &store.Failure{Kind: string(kind), Reason: reason}
	if t.BlocksTowardLimit > r.limits.Repairs {
		b.permitted = PermitStop
		t.Stopped = &store.Stop{Kind: string(kind), Reason: reason, Record: b.record, Changes: map[string]string{}}
	}
	n.verdict = verdictBlocked
	n.block = b
}

// trouble returns the job's record of what went wrong, made when nothing
// had.
func trouble(js *store.JobState) *store.Trouble {
	if js.Trouble == nil {
		js.Trouble = &store.Trouble{Messages: []string{}, History: []string{}}
	}
	return js.Trouble
}

// tidy drops a record of trouble that holds nothing, so that the state of a
// job that never failed stays small.
func tidy(js *store.JobState) {
	t := js.Trouble
	if t != nil && t.Failures == 0 && t.BlocksTowardLimit == 0 && t.Blocks == 0 && t.UsageLimited == 0 && t.Spared == 0 &&
		len(t.Messages) == 0 && len(t.History) == 0 && t.LastFailure == nil && t.Stopped == nil {
		js.Trouble = nil
	}
}

// validate judges the output of n by its validator.
func (r *replay) validate(n *named) (kind BlockKind, messages []string) {
	return validate(n.spec.job.Validate, r.abs(n.spec.output))
}

// validate runs a validator, turning a panic or a failure to judge into a
// refusal of its own kind. An empty kind means the output is valid.
func validate(v workflow.Validator, path string) (kind BlockKind, messages []string) {
	if v == nil {
		return "", nil
	}
	defer func() {
		if p := recover(); p != nil {
			kind, messages = BlockValidatorFailed, []string{fmt.Sprintf("the validator panicked: %v", p)}
		}
	}()
	err := v(path)
	var refusal *workflow.Refusal
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &refusal):
		return BlockRefused, slices.Clone(refusal.Messages)
	default:
		return BlockValidatorFailed, []string{"the validator failed: " + err.Error()}
	}
}

// cloneJob returns a deep copy of a job's state, or a fresh one.
func cloneJob(j *store.JobState) *store.JobState {
	if j == nil {
		return &store.JobState{}
	}
	c := *j
	if j.Input != nil {
		in := cloneInputs(*j.Input)
		c.Input = &in
	}
	if j.Outstanding != nil {
		o := *j.Outstanding
		o.Launches = slices.Clone(j.Outstanding.Launches)
		c.Outstanding = &o
	}
	if t := j.Trouble; t != nil {
		tc := *t
		tc.Messages = slices.Clone(t.Messages)
		tc.History = slices.Clone(t.History)
		if t.LastFailure != nil {
			f := *t.LastFailure
			tc.LastFailure = &f
		}
		if t.Stopped != nil {
			s := *t.Stopped
			tc.Stopped = &s
		}
		c.Trouble = &tc
	}
	return &c
}

func cloneInputs(in store.Inputs) store.Inputs {
	in.Files = slices.Clone(in.Files)
	return in
}
