package workflow

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// judge decides a job's verdict from its state and the files on disk. The
// first rule that applies decides.
func (r *replay) judge(n *named) error {
	name := n.spec.job.Name
	js := cloneJob(r.state.Jobs[name])
	n.js = js
	if js.Stopped != nil {
		n.verdict = verdictStopped
		n.block = &jobBlock{kind: BlockKind(js.Stopped.Kind), reason: js.Stopped.Reason, permitted: PermitStop, record: js.Stopped.Record}
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
		js.Outstanding, js.LastInput, js.Accepted = nil, nil, nil
		keep := []string{n.spec.problem}
		if exists(outPath) {
			keep = append(keep, n.spec.output)
		}
		js.History = append(js.History, fmt.Sprintf("attempt %d: the worker wrote a problem report", js.Handouts))
		r.blockJob(n, BlockProblemReport, "the worker wrote a problem report")
		n.block.problem = string(text)
		n.block.keep = keep
		return nil
	}

	outSHA, err := r.hashes.of(outPath)
	if err != nil {
		return fmt.Errorf("hash output of job %s: %w", name, err)
	}

	if acc := js.Accepted; acc != nil {
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

	if out := js.Outstanding; out != nil {
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
		js.Outstanding = nil
		js.Failures++
		js.Messages = messages
		js.LastFailure = &store.Failure{Kind: string(kind), Reason: reason}
		n.refusal = js.LastFailure
		line := fmt.Sprintf("attempt %d: %s", js.Handouts, reason)
		for _, m := range messages {
			line += "\n  - " + m
		}
		js.History = append(js.History, line)
		if js.Failures > r.limits.Retries {
			r.blockJob(n, kind, fmt.Sprintf("%s, attempt %d of %d", reason, js.Failures, r.limits.Retries+1))
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
	if outSHA != "" && js.LastInput != nil && js.LastInput.Digest == current.Digest {
		if kind, _ := validate(n.spec.job.Validate, outPath); kind == "" {
			r.accept(n, outSHA)
			return nil
		}
	}
	n.verdict = verdictHandout
	return nil
}

func (r *replay) accept(n *named, outSHA string) {
	js := n.js
	js.Accepted = &store.Acceptance{Input: n.current, Output: outSHA, At: store.Now()}
	js.Failures, js.BlocksTowardLimit = 0, 0
	js.Outstanding = nil
	in := n.current
	js.LastInput = &in
	js.Messages, js.History = nil, nil
	n.verdict = verdictAccepted
	n.newlyAccepted = true
}

// blockJob counts a block of the job: the retry count starts over, and the
// block permits a repair while the job's blocks in a row are within the
// repair limit.
func (r *replay) blockJob(n *named, kind BlockKind, reason string) {
	js := n.js
	js.BlocksTowardLimit++
	js.Blocks++
	b := &jobBlock{
		kind:      kind,
		reason:    reason,
		permitted: PermitRepair,
		record:    store.JobBlockPath(n.spec.job.Name, js.Blocks),
		attempts:  js.History,
	}
	js.History, js.Failures = nil, 0
	js.LastFailure = &store.Failure{Kind: string(kind), Reason: reason}
	if js.BlocksTowardLimit > r.limits.Repairs {
		b.permitted = PermitStop
		js.Stopped = &store.Stop{Kind: string(kind), Reason: reason, Record: b.record}
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

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// cloneJob returns a deep copy of a job's state, or a fresh one.
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
