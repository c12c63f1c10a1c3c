package workflow

import (
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// Step replays the definition from the top, judges every job it names,
// commits the records atomically and returns the one outcome that applies.
// It takes the run's lock and fails at once with store.ErrBusy when another
// process holds it. A definition that breaks a rule fails the step with a
// DefinitionError and changes nothing.
//
// A step consumes a round: it assumes every worker launched after the last
// step has finished or failed to start, so a hand-out without an output is
// a failed attempt.
func (o *Orchestrator) Step() (Outcome, error) {
	var out Outcome
	err := o.locked(func(rec *loaded) error {
		st := rec.state
		if len(st.Moves) > 0 {
			// The last step committed and ended before its moves were done,
			// so nobody saw its outcome: finish the moves and give that
			// outcome now, rather than judge a round whose workers never ran.
			if err := o.run.Perform(st.Moves); err != nil {
				return err
			}
			st.Moves = []store.Move{}
			if err := o.run.SaveState("state-moved", st); err != nil {
				return err
			}
			last, err := o.lastOutcome(st)
			if err != nil {
				return err
			}
			if last != nil {
				out = *last
				return nil
			}
		}
		limits, err := o.def.limits(o.params)
		if err != nil {
			return err
		}
		effects := rec.effects
		if s := st.Workflow.Stopped; s != nil {
			// The definition does not run while the workflow is stopped, so an
			// effect left started cannot be recognized: its fate is uncertain.
			out = Outcome{Kind: KindBlocked, Blocks: []Block{o.stoppedBlock("workflow", s)}}
			for _, name := range store.EffectNames(effects) {
				if effects[name].Status == store.EffectStarted {
					out.Kind = KindUncertain
					out.Effects = append(out.Effects, EffectState{Name: name,
						Detail: "the effect started and its completion was not recorded; the workflow is stopped"})
				}
			}
			st.Steps++
			return o.commitState("state", st, effects, o.stepEvents(out, nil))
		}
		r := newReplay(o, st, effects, limits)
		r.run()
		if r.ruleErr != nil {
			return r.ruleErr
		}
		if r.ioErr != nil {
			return r.ioErr
		}
		out, err = o.commit(r, rec.reports)
		return err
	})
	return out, err
}

func (o *Orchestrator) stoppedBlock(subject string, s *store.Stop) Block {
	return Block{
		Subject:   subject,
		Kind:      BlockKind(s.Kind),
		Reason:    s.Reason,
		Record:    o.abs(s.Record),
		Permitted: PermitStop,
		Scope:     o.def.repairScope(),
	}
}

func (o *Orchestrator) abs(rel string) string { return path.Join(o.run.Dir, rel) }

// commit turns a replay into the outcome and writes the records: block
// records and prompt files first, then state.json, whose rename is the
// commit point, then the moves it lists, then state.json again without them.
// A process that ends before the rename leaves the run as it was; one that
// ends after it leaves moves owed, which the next step finishes first.
func (o *Orchestrator) commit(r *replay, reports []store.Report) (Outcome, error) {
	st := r.state
	unreached := st.Unreached
	if r.ranToEnd {
		unreached = r.checkUnreached()
	}
	byName := slices.SortedFunc(slices.Values(r.order), func(a, b *named) int {
		return strings.Compare(a.spec.job.Name, b.spec.job.Name)
	})
	blocks, records, wstate := o.findBlocks(r, byName, reports)
	if len(r.uncertain) > 0 {
		return o.commitUncertain(r, byName, blocks, records, reports)
	}

	p := &plan{state: st, kept: map[string][]store.Move{}}
	if err := p.make(o, r, len(blocks) == 0); err != nil {
		return Outcome{}, err
	}
	for _, n := range byName {
		if n.verdict == verdictBlocked {
			records = append(records, record{label: "block", rel: n.block.record, data: renderJobBlock(o, r, n, p.kept[n.spec.job.Name], reports)})
		}
	}

	st.Steps++
	st.Replayed = st.Steps
	named := map[string]bool{}
	if !r.ranToEnd {
		// Jobs behind a wait that did not pass this time are still part of
		// the course; only a replay that ran to its end can drop one.
		for _, name := range st.Named {
			named[name] = true
		}
	}
	for _, n := range byName {
		named[n.spec.job.Name] = true
		st.Jobs[n.spec.job.Name] = n.rec
	}
	st.Named = slices.Sorted(maps.Keys(named))
	st.Workflow = wstate
	st.Unreached = unreached
	st.Moves = p.moves
	sort.Slice(p.launch, func(i, j int) bool { return p.launch[i].Name < p.launch[j].Name })
	sort.Slice(p.prompts, func(i, j int) bool { return p.prompts[i].rel < p.prompts[j].rel })
	for _, rec := range append(records, p.prompts...) {
		if err := o.run.WriteRecord(rec.label, rec.rel, rec.data); err != nil {
			return Outcome{}, err
		}
	}
	out := Outcome{Kind: KindDone}
	switch {
	case len(blocks) > 0:
		out = Outcome{Kind: KindBlocked, Blocks: blocks}
	case len(p.launch) > 0:
		out = Outcome{Kind: KindLaunch, Jobs: p.launch}
	}
	if err := o.commitState("state", st, r.effects, o.stepEvents(out, p.events)); err != nil {
		return Outcome{}, err
	}
	if len(p.moves) > 0 {
		if err := o.run.Perform(p.moves); err != nil {
			return Outcome{}, err
		}
		st.Moves = []store.Move{}
		if err := o.run.SaveState("state-moved", st); err != nil {
			return Outcome{}, err
		}
	}
	return out, nil
}

// findBlocks gathers the step's blocks in their stable order, jobs by name,
// then workflow, then effects by name, with the records of the workflow's
// and the effects' blocks and the workflow's counts as they would commit.
func (o *Orchestrator) findBlocks(r *replay, byName []*named, reports []store.Report) ([]Block, []record, store.WorkflowState) {
	jobBlocked := slices.ContainsFunc(byName, func(n *named) bool { return n.block != nil })
	if !r.failed() && !jobBlocked && len(r.effectBlocks) == 0 && len(r.uncertain) == 0 && !r.ranToEnd && !hasHandout(r) {
		// Defensive: a path ended with nothing to hand out and nothing blocking.
		r.fail(failure{kind: BlockStalled, message: "the definition ended a path with nothing to hand out", place: "stalled"})
	}
	var blocks []Block
	var records []record
	for _, n := range byName {
		if n.block != nil {
			blocks = append(blocks, o.jobBlock(n))
		}
	}
	wstate, wb, wrec := o.workflowBlock(r, reports)
	if wb != nil {
		blocks = append(blocks, *wb)
		records = append(records, wrec)
	}
	sort.Slice(r.effectBlocks, func(i, j int) bool { return r.effectBlocks[i].name < r.effectBlocks[j].name })
	for _, eb := range r.effectBlocks {
		b, rec := o.effectBlock(eb, reports)
		blocks = append(blocks, b)
		records = append(records, rec)
	}
	return blocks, records, wstate
}

// commitUncertain commits an uncertain step, which counts nothing and
// changes no job's state: only its history, its number and its outcome. It
// writes the records of the blocks it carries, so that the paths it prints
// hold what it found, under names of its own: the numbered records belong
// to the blocks that steps count.
func (o *Orchestrator) commitUncertain(r *replay, byName []*named, blocks []Block, records []record, reports []store.Report) (Outcome, error) {
	st := r.state
	for _, n := range byName {
		if n.verdict == verdictBlocked {
			records = append(records, record{label: "block", rel: n.block.record, data: renderJobBlock(o, r, n, nil, reports)})
		}
	}
	carried := func(rel string) string {
		if strings.HasPrefix(path.Base(rel), "block-") {
			return store.CarriedPath(rel, st.Steps+1)
		}
		return rel
	}
	for i := range records {
		records[i].rel = carried(records[i].rel)
	}
	for i := range blocks {
		blocks[i].Record = o.abs(carried(o.run.Rel(blocks[i].Record)))
	}
	for _, rec := range records {
		if err := o.run.WriteRecord(rec.label, rec.rel, rec.data); err != nil {
			return Outcome{}, err
		}
	}
	effects := slices.SortedFunc(slices.Values(r.uncertain), func(a, b EffectState) int { return strings.Compare(a.Name, b.Name) })
	out := Outcome{Kind: KindUncertain, Effects: effects, Blocks: blocks}
	st.Steps++
	return out, o.commitState("state", st, r.effects, o.stepEvents(out, nil))
}

// plan is what a counted step will write and move, job by job in the order
// they were named, and what it hands out.
type plan struct {
	state   *store.State
	moves   []store.Move
	kept    map[string][]store.Move // the moves of each blocked job, for its record
	launch  []Handout
	prompts []record
	events  []store.Event
}

// make plans every job's part: the events of its judgment; for a block,
// moving aside a problem report and what lies beside it, or the last
// refused output; for a hand-out, moving aside whatever is in its way, and
// its prompt.
func (p *plan) make(o *Orchestrator, r *replay, handingOut bool) error {
	for _, n := range r.order {
		name := n.spec.job.Name
		if f := n.refusal; f != nil {
			p.events = append(p.events, store.Event{Type: store.EventRefuse, Subject: name, Attempt: n.rec.Handouts, Kind: f.Kind, Text: f.Reason})
		}
		if n.newlyAccepted {
			p.events = append(p.events, store.Event{Type: store.EventAccept, Subject: name, Attempt: n.rec.Handouts})
		}
		switch {
		case n.verdict == verdictBlocked:
			for _, rel := range n.block.keep {
				m, err := p.keep(r, name, rel)
				if err != nil {
					return err
				}
				p.kept[name] = append(p.kept[name], m)
			}
		case n.verdict == verdictHandout && handingOut:
			if n.reopen != "" {
				// A reopened job starts a full set of attempts.
				p.events = append(p.events, store.Event{Type: store.EventReopen, Subject: name, Text: n.reopen})
				n.rec.Accepted, n.rec.Failures = nil, 0
				n.rec.Messages, n.rec.History = nil, nil
			}
			for _, rel := range []string{n.spec.output, n.spec.problem} {
				if exists(r.abs(rel)) {
					if _, err := p.keep(r, name, rel); err != nil {
						return err
					}
				}
			}
			p.handOut(o, r, n)
		}
	}
	return nil
}

// keep plans moving the file at rel aside for job, numbered across the run.
func (p *plan) keep(r *replay, job, rel string) (store.Move, error) {
	sum, err := store.FileSHA256(r.abs(rel))
	if err != nil {
		return store.Move{}, err
	}
	p.state.Kept++
	m := store.Move{Source: rel, Target: store.KeptPath(job, p.state.Kept, rel), SHA256: sum}
	p.moves = append(p.moves, m)
	p.events = append(p.events, keepEvent(job, m))
	return m, nil
}

// handOut records a job's hand-out: its input state is what its output
// will be judged against, and its prompt is a new file.
func (p *plan) handOut(o *Orchestrator, r *replay, n *named) {
	name, rec := n.spec.job.Name, n.rec
	rec.Handouts++
	in := n.current
	rec.Outstanding = &in
	last := cloneInputs(in)
	rec.LastInput = &last
	prompt := store.PromptPath(name, rec.Handouts)
	p.prompts = append(p.prompts, record{label: "prompt", rel: prompt, data: renderPrompt(r, n)})
	p.events = append(p.events, store.Event{Type: store.EventHandout, Subject: name, Attempt: rec.Handouts, Path: prompt})
	p.launch = append(p.launch, Handout{
		Name:    name,
		Attempt: rec.Handouts,
		Prompt:  o.abs(prompt),
		Output:  r.abs(n.spec.output),
		Problem: r.abs(n.spec.problem),
		Launch:  n.spec.launch,
	})
}

// record is a prompt file or a block record to write, at a path relative to
// the run directory.
type record struct {
	label string
	rel   string
	data  []byte
}

func hasHandout(r *replay) bool {
	for _, n := range r.order {
		if n.verdict == verdictHandout {
			return true
		}
	}
	return false
}

func (o *Orchestrator) jobBlock(n *named) Block {
	return Block{
		Subject:   n.spec.job.Name,
		Kind:      n.block.kind,
		Reason:    n.block.reason,
		Record:    o.abs(n.block.record),
		Permitted: n.block.permitted,
		Scope:     o.def.repairScope(),
	}
}

// workflowBlock counts this step's failures of the definition's own code,
// by place, and returns their block. A step without failures starts every
// count over.
func (o *Orchestrator) workflowBlock(r *replay, reports []store.Report) (store.WorkflowState, *Block, record) {
	w := r.state.Workflow
	// A place's count runs over consecutive failing steps: a place that did
	// not fail in this step starts over.
	w.Places = map[string]int{}
	if !r.failed() {
		return w, nil, record{}
	}
	permitted := PermitRepair
	kind := BlockWorkflowError
	reason := r.failures[0].message
	seen := map[string]bool{}
	for _, f := range r.failures {
		if f.kind != "" && kind == BlockWorkflowError {
			kind = f.kind
		}
		if f.stop {
			if kind != BlockWorkflowStop {
				reason = f.message
			}
			kind, permitted = BlockWorkflowStop, PermitStop
			continue
		}
		if !seen[f.place] {
			seen[f.place] = true
			w.Places[f.place] = r.state.Workflow.Places[f.place] + 1
		}
		if w.Places[f.place] > r.limits.Repairs {
			permitted = PermitStop
		}
	}
	w.Blocks++
	rel := store.WorkflowBlockPath(w.Blocks)
	if permitted == PermitStop {
		w.Stopped = &store.Stop{Kind: string(kind), Reason: reason, Record: rel}
	}
	b := &Block{
		Subject:   "workflow",
		Kind:      kind,
		Reason:    reason,
		Record:    o.abs(rel),
		Permitted: permitted,
		Scope:     o.def.repairScope(),
	}
	return w, b, record{label: "block", rel: rel, data: renderWorkflowBlock(b, r, w.Places, reports)}
}

// checkUnreached holds the definition, which ran to its end, to the effects
// it did not reach in this step: an effect stays owed after the definition
// stops calling it. A started one is uncertain, since its recognizer lives
// at the call site that is no longer reached; a completed one that is still
// required blocks, permitting only stopping, until the operator resolves it.
func (r *replay) checkUnreached() []string {
	var unreached []string
	for _, name := range store.EffectNames(r.effects) {
		e := r.effects[name]
		if r.reached[name] {
			continue
		}
		switch {
		case e.Status == store.EffectStarted:
			r.uncertain = append(r.uncertain, EffectState{Name: name,
				Detail: "the effect started, its completion was not recorded, and the definition no longer reaches it"})
		case e.Status == store.EffectCompleted && e.Required:
			unreached = append(unreached, name)
			var inputs []string
			for _, f := range e.Inputs {
				inputs = append(inputs, f.Path)
			}
			r.effectBlocks = append(r.effectBlocks, effectBlock{name: name, kind: BlockEffectUnreached,
				reason: "the effect is completed and the definition no longer reaches it", inputs: inputs})
		}
	}
	if unreached == nil {
		unreached = []string{}
	}
	return unreached
}

func (o *Orchestrator) effectBlock(eb effectBlock, reports []store.Report) (Block, record) {
	rel := store.EffectBlockPath(eb.name)
	b := Block{
		Subject:   "effect " + eb.name,
		Kind:      eb.kind,
		Reason:    eb.reason,
		Record:    o.abs(rel),
		Permitted: PermitStop,
		Scope:     o.def.repairScope(),
	}
	return b, record{label: "block", rel: rel, data: renderEffectBlock(o, b, eb, reports)}
}

// lastOutcome reads the outcome of the last step from the committed
// history, or nil when no step has given one.
func (o *Orchestrator) lastOutcome(st *store.State) (*Outcome, error) {
	for seq := st.Seq; seq > 0; seq-- {
		events, err := o.run.HistoryOf(seq)
		if err != nil {
			return nil, err
		}
		for _, e := range events {
			if e.Type != store.EventStep {
				continue
			}
			out, err := o.eventOutcome(e)
			if err != nil {
				return nil, err
			}
			return &out, nil
		}
	}
	return nil, nil
}
