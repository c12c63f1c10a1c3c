package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// Check is what the next step would change in a run, and why: the answer
// of `custodian check`, for an operator about to step a run with a new
// binary, and for CI, which holds recorded runs to a definition that must
// still make the same decisions.
type Check struct {
	// Changed says whether the next step would change the standing of any
	// job or effect; Items say which, and why.
	Changed bool        `json:"changed"`
	Items   []CheckItem `json:"items"`
	// Next is the outcome the next step would give; nil when the next step
	// runs an effect or asks a recognizer before it could give one, or
	// refuses the run.
	Next *Outcome `json:"next"`
	// Refusal is why the next step refuses the run instead of giving an
	// outcome (the operator abandoned it), or "".
	Refusal string `json:"refusal"`
	// Patches are the patches the run was started with, and those the
	// definition declares now.
	Patches CheckPatches `json:"patches"`
	// Warnings say what the replay could not see: accepted jobs behind a
	// wait it ended at, of which it cannot tell whether the definition
	// still names them or gives them the same task.
	Warnings []string `json:"warnings"`
}

// CheckItem is a job, an effect or a patch whose standing the next step
// would change, and why.
type CheckItem struct {
	Subject Subject  `json:"subject"`
	Reason  string   `json:"reason"`
	Details []string `json:"details"` // lines under the reason: a diff, both sides
	// Kept says the change is one the binary makes on purpose and leaves
	// every accepted output in place (a carry-over by Job.Formerly): a
	// recorded run that the definition changes only so still makes the
	// same decisions.
	Kept bool `json:"kept"`
}

// CheckPatches are the patches of a run and of its definition now.
type CheckPatches struct {
	Run        []string `json:"run"`
	Definition []string `json:"definition"`
}

// Check replays the run with this binary's definition and says what the
// next step would change, writing no record: it takes no lock, runs no
// effect and asks no recognizer, and reads the last committed records,
// as Status does, so it can run beside a loop. It replays twice and
// reports any difference between the two replays as a non-deterministic
// definition. The definition's own mechanical code runs as at any replay,
// writes included. maps say where files outside the run, recorded
// elsewhere, are found now.
func (run *Run) Check(maps ...Map) (Check, error) {
	rec, err := run.read()
	if err != nil {
		return Check{}, err
	}
	c := Check{Items: []CheckItem{}, Warnings: []string{}, Patches: CheckPatches{Run: run.records.Record.Patches, Definition: slices.Clone(run.def.Patches)}}
	if c.Patches.Definition == nil {
		c.Patches.Definition = []string{}
	}
	if len(rec.state.Moves) > 0 {
		// The next step only finishes the moves its predecessor owes and
		// gives that step's outcome again.
		last, err := run.lastOutcome(rec.state)
		if err != nil || last != nil {
			c.Next = last
			return c, err
		}
	}
	if s := rec.state.Workflow.Stopped; s != nil && BlockKind(s.Kind) != BlockDefinitionChanged {
		// The definition does not run while the workflow is stopped: the
		// next step gives the stop again, and its record says why.
		c.Next = &run.decideStopped(rec.clone().state, rec.effects, s, rec.reports).outcome
		return c.refused(run.records.Dir, rec), nil
	}
	first, err := run.dryReplay(rec.clone(), maps)
	if err != nil {
		return Check{}, err
	}
	second, err := run.dryReplay(rec.clone(), maps)
	if err != nil {
		return Check{}, err
	}
	last, err := run.lastOutcome(rec.state)
	if err != nil {
		return Check{}, err
	}
	stop := first.state.Workflow.Stopped
	if stop != nil && checkParams(run.def, run.params) == nil && first.holdsStop(stop) {
		c.Items = append([]CheckItem{}, nondeterminism(first, second)...)
		c.Changed = len(c.Items) > 0
		c.Next = &run.decideStopped(first.state, first.effects, stop, rec.reports).outcome
		return c.refused(run.records.Dir, rec), nil
	}
	c.Items = append(nondeterminism(first, second), run.standings(first, last)...)
	if c.Items == nil {
		c.Items = []CheckItem{}
	}
	if first.lifted {
		c.Items = append(c.Items, CheckItem{Subject: WorkflowSubject, Details: []string{},
			Reason: "the stop of a changed definition is lifted: this binary finds the definition as the run recorded it, and lets nothing through"})
	}
	c.Changed = len(c.Items) > 0
	c.Warnings = unseen(first)
	c.Next, err = run.nextOutcome(first, rec)
	return c.refused(run.records.Dir, rec), err
}

// Differs says whether the next step would change anything but what a
// binary changes on purpose and leaves every accepted output in place
// (CheckItem.Kept): a recorded run that differs no longer makes the same
// decisions with this definition.
func (c Check) Differs() bool {
	return slices.ContainsFunc(c.Items, func(it CheckItem) bool { return !it.Kept })
}

// refused says, of a run the operator abandoned, that the next step
// refuses it rather than give the outcome the replay foresaw.
func (c Check) refused(dir string, rec *loaded) Check {
	if a := rec.state.Abandoned; a != nil {
		c.Next = nil
		c.Refusal = (&AbandonedError{Run: dir, At: a.At, Text: a.Text}).Error()
	}
	return c
}

// clone returns a deep copy of the records, for a replay that may change
// them as it decides.
func (rec *loaded) clone() *loaded {
	c := &loaded{state: rec.state.Clone(), effects: map[string]*store.Effect{}, reports: rec.reports}
	for name, e := range rec.effects {
		copied := *e
		copied.Inputs = slices.Clone(e.Inputs)
		c.effects[name] = &copied
	}
	return c
}

// dryReplay replays the definition without running effects or writing.
func (run *Run) dryReplay(rec *loaded, maps []Map) (*replay, error) {
	limits, err := limits(run.def, withDefaults(run.def, run.params))
	if err != nil {
		return nil, err
	}
	r := newReplay(run, rec, limits)
	r.dry, r.maps = true, maps
	r.files.Locate(func(key string) string { return mapPath(maps, key) })
	r.journal = func(string, *store.Effect) error { return errors.New("a check writes nothing: a defect in custodian") }
	r.play()
	if r.ruleErr != nil {
		return nil, r.ruleErr
	}
	if r.ioErr != nil {
		return nil, r.ioErr
	}
	return r, nil
}

// nextOutcome is the outcome the next step would give after the replay r,
// or nil when it cannot be foreseen.
func (run *Run) nextOutcome(r *replay, rec *loaded) (*Outcome, error) {
	st := r.state
	var p *plan
	switch {
	case checkParams(run.def, run.params) != nil:
		p = run.decideWorkflowStop(st, r.effects, BlockBadParameter, badParameter(checkParams(run.def, run.params)), "", nil, rec.reports)
	case len(r.foreseen) > 0 && !r.ranToEnd && !hasHandout(r) && len(r.uncertain) == 0 && len(r.effectBlocks) == 0 && len(r.changes) == 0:
		// The dry replay stopped where the step would run an effect or ask
		// a recognizer: what follows that cannot be foreseen.
		return nil, nil
	default:
		var err error
		if p, err = run.decideReplayed(r, rec.reports); err != nil {
			return nil, err
		}
	}
	return &p.outcome, nil
}

// standings lists the jobs, effects and patches whose standing the next
// step would change, against the records as they are and the last
// outcome.
func (run *Run) standings(r *replay, last *Outcome) []CheckItem {
	st := r.state
	wasBlocked := map[Subject]BlockKind{}
	wasUncertain := map[string]bool{}
	if last != nil {
		for _, b := range last.Blocks {
			wasBlocked[b.Subject] = b.Kind
		}
		for _, e := range last.Effects {
			wasUncertain[e.Name] = true
		}
	}
	changed := map[string]change{}
	for _, c := range r.changes {
		changed[c.key] = c
	}
	var items []CheckItem
	changedItem := map[int]bool{} // the items of changes, by index
	byName := slices.SortedFunc(slices.Values(r.order), func(a, b *named) int { return strings.Compare(a.spec.job.Name, b.spec.job.Name) })
	var pending []string
	for _, n := range byName {
		name := n.spec.job.Name
		if n.verdict != verdictAccepted {
			pending = append(pending, name)
		}
		key := name
		if n.carriedFrom != "" {
			key = n.carriedFrom
		}
		if c, ok := changed[key]; ok {
			changedItem[len(items)] = true
			items = append(items, CheckItem{Subject: JobSubject(name), Reason: "the definition changed it: " + strings.Join(c.what, "; ") +
				"; the next step blocks on the changed definition", Details: splitLines(c.detail)})
			delete(changed, key)
			continue
		}
		if reason := standing(n, st.Jobs[name], wasBlocked[JobSubject(name)]); reason != "" {
			items = append(items, CheckItem{Subject: JobSubject(name), Reason: reason, Kept: n.carriedFrom != ""})
		}
	}
	for _, name := range st.Named {
		js := st.Jobs[name]
		if js == nil || r.named[name] != nil || r.carried[name] {
			continue
		}
		if _, ok := changed[name]; ok {
			continue
		}
		switch {
		case r.ranToEnd && js.Accepted != "":
			items = append(items, CheckItem{Subject: JobSubject(name),
				Reason: "the run's course no longer names it (something the definition turns on changed); its output stays as it was accepted"})
		case !r.ranToEnd && len(pending) > 0 && js.Accepted == "":
			items = append(items, CheckItem{Subject: JobSubject(name), Reason: "not reached by this replay (it ends at a wait on " + join(pending) + ")"})
		}
	}
	items = append(items, r.foreseen...)
	for _, e := range r.uncertain {
		if !wasUncertain[e.Name] {
			items = append(items, CheckItem{Subject: EffectSubject(e.Name), Reason: "its fate is uncertain: " + e.Detail})
		}
	}
	for _, eb := range r.effectBlocks {
		if wasBlocked[EffectSubject(eb.name)] != eb.kind {
			items = append(items, CheckItem{Subject: EffectSubject(eb.name), Reason: eb.reason})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.asked)) {
		subject := DecisionSubject(name)
		q, open := r.open[name]
		switch {
		case open && wasBlocked[subject] == "":
			items = append(items, CheckItem{Subject: subject, Reason: "the definition asks the operator: " + OneLine(strings.TrimSpace(q.Text)) +
				" (choices: " + join(q.Choices) + "); the next step blocks until the operator records a choice"})
		case !open && wasBlocked[subject] != "":
			items = append(items, CheckItem{Subject: subject, Reason: "the operator chose " + st.Decisions[name].Choice + "; the path that asked goes on"})
		}
	}
	for _, key := range slices.Sorted(maps.Keys(changed)) {
		c := changed[key]
		subject, it := JobSubject(key), "it"
		if patch, ok := strings.CutPrefix(key, "patch "); ok {
			// A patch is the definition's as a whole.
			subject, it = WorkflowSubject, "patch "+patch
		}
		if effect, ok := strings.CutPrefix(key, "effect "); ok {
			subject = EffectSubject(effect)
		}
		changedItem[len(items)] = true
		items = append(items, CheckItem{Subject: subject, Reason: "the definition changed " + it + ": " + strings.Join(c.what, "; ") +
			"; the next step blocks on the changed definition", Details: splitLines(c.detail)})
	}
	stops := len(r.changes) > 0 || checkParams(run.def, run.params) != nil
	for i := range items {
		if items[i].Details == nil {
			items[i].Details = []string{}
		}
		if stops && !changedItem[i] {
			// The next step stops the workflow and changes nothing else:
			// what the replay found of the rest waits for the operator.
			items[i].Reason += "; not at the next step, which stops the workflow first"
		}
	}
	return items
}

// unseen warns of the accepted jobs the run names that the replay r did
// not reach, because it ended at a wait: whether the definition still names
// them, and gives them the same task, shows only when a replay gets there.
func unseen(r *replay) []string {
	if r.ranToEnd {
		return []string{}
	}
	var behind, pending []string
	for _, name := range r.state.Named {
		if js := r.state.Jobs[name]; js != nil && js.Accepted != "" && r.named[name] == nil && !r.carried[name] {
			behind = append(behind, name)
		}
	}
	for _, n := range r.order {
		if n.verdict != verdictAccepted {
			pending = append(pending, n.spec.job.Name)
		}
	}
	if len(behind) == 0 || len(pending) == 0 {
		return []string{}
	}
	slices.Sort(pending)
	jobs, them := "jobs", "them"
	if len(behind) == 1 {
		jobs, them = "job", "it"
	}
	return []string{fmt.Sprintf("this replay ends at a wait on %s before it reaches %d accepted %s (%s): "+
		"it cannot yet tell whether the definition still names %s, or gives %s the same task",
		listed(pending), len(behind), jobs, listed(behind), them, them)}
}

// standing says how the next step would change a job's standing, or ""
// when it would not.
func standing(n *named, was *store.JobState, lastBlock BlockKind) string {
	switch {
	case n.carriedFrom != "":
		return "carried over from its former name " + n.carriedFrom + ", accepted as it was"
	case n.verdict == verdictStopped:
		return ""
	case n.verdict == verdictBlocked:
		if lastBlock == n.block.kind && n.refusal == nil {
			return ""
		}
		return "it blocks: " + n.block.reason
	case was == nil:
		return "a new job: the next step hands it out"
	case was.Accepted != "":
		if n.verdict == verdictAccepted {
			return ""
		}
		return "it is reopened: " + n.reopen
	case n.verdict == verdictAccepted:
		return "its output is accepted"
	case n.refusal != nil:
		return fmt.Sprintf("attempt %d is refused (%s); the next step hands it out again", attempt(was), n.refusal.Reason)
	case n.spared != "":
		return fmt.Sprintf("attempt %d has no output and is not charged (%s); the next step hands it out again", attempt(was), n.spared)
	default:
		return "the next step hands it out"
	}
}

// nondeterminism compares what two replays of the same records named: a
// definition that names other jobs, or gives one job another task, from
// one replay to the next reads the clock, ranges over a map or lists a
// directory in an unstable order, and would mislead a run.
func nondeterminism(a, b *replay) []CheckItem {
	var items []CheckItem
	for _, name := range slices.Sorted(maps.Keys(a.named)) {
		x, y := a.named[name], b.named[name]
		if y == nil {
			items = append(items, nondeterministic(name, "the first replay named it and the second did not", nil))
			continue
		}
		if details := specDifferences(x.spec, y.spec); len(details) > 0 {
			items = append(items, nondeterministic(name, "the two replays gave it different tasks", details))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(b.named)) {
		if a.named[name] == nil {
			items = append(items, nondeterministic(name, "the second replay named it and the first did not", nil))
		}
	}
	return items
}

func nondeterministic(name, reason string, details []string) CheckItem {
	if details == nil {
		details = []string{}
	}
	return CheckItem{Subject: JobSubject(name), Reason: "non-deterministic definition: " + reason +
		"; a definition must name the same jobs with the same tasks at every replay (docs/authoring.md, the replay rules)", Details: details}
}

// specDifferences names what differs between two declarations of a job,
// with both sides.
func specDifferences(x, y *spec) []string {
	var out []string
	if x.job.Prompt != y.job.Prompt {
		out = append(out, splitLines(unifiedDiff("first replay's prompt", "second replay's prompt", x.job.Prompt+"\n", y.job.Prompt+"\n"))...)
	}
	if string(x.launch) != string(y.launch) {
		out = append(out, fmt.Sprintf("launch parameters: %s in the first, %s in the second", x.launch, y.launch))
	}
	if x.output != y.output {
		out = append(out, fmt.Sprintf("output: %s in the first, %s in the second", x.output, y.output))
	}
	if !slices.Equal(x.inputs, y.inputs) {
		out = append(out, fmt.Sprintf("inputs: %s in the first, %s in the second", join(x.inputs), join(y.inputs)))
	}
	return out
}
