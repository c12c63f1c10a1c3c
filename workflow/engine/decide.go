package engine

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/custodian-run/custodian/store"
)

// A step decides, then applies. The decision reads the run's records and
// replays the definition, and from what it finds makes a plan: the files to
// write, the history, the state to commit, the moves that state owes, and
// the outcome. It writes nothing, except an effect's journal while an
// effect runs (the replay's journal). Applying the plan (apply.go) writes
// it in the order docs/crash-points.md gives.

// plan is what one step decided.
type plan struct {
	outcome Outcome
	// texts are the block records and prompt files to write before the
	// commit, in the order they are written.
	texts []textFile
	// state is the state to commit: it counts the step and its history, and
	// lists the moves it owes.
	state *store.State
	// events is the step's history, numbered state.Seq, with what the
	// effect journals show that the history had not recorded.
	events []store.Event
	// moves are the files to set aside after the commit.
	moves []store.Move
	// files hashed the run's files; it keeps what it learned in the cache.
	// Nil when the step hashed nothing.
	files *store.Files
	// holds says the step carries out nothing of a replay (a stop of the
	// workflow, an uncertain step): the last outcome that did stands.
	holds bool
	// parents are the outputs handed out, whose directories the step makes
	// before its commit, so that a worker finds where to write.
	parents []string
}

// textFile is a prompt file or a block record to write, at a path relative
// to the run directory. Both are Markdown for people and workers, written
// once at a path of their own; neither is a record the engine reads back.
type textFile struct {
	label string // the write point, for crash tests
	rel   string
	data  []byte
}

// decide replays the definition against the records in rec and plans the
// step. journal writes an effect's journal while the effect runs; running
// are the hand-outs a drive holds, which the step leaves alone.
func (run *Run) decide(rec *loaded, journal func(string, *store.Effect) error, running map[string]int) (*plan, error) {
	limits, err := limits(run.def, withDefaults(run.def, run.params))
	if err != nil {
		return nil, err
	}
	st, effects := rec.state, rec.effects
	s := st.Workflow.Stopped
	if s != nil && BlockKind(s.Kind) != BlockDefinitionChanged {
		return run.decideStopped(st, effects, s, rec.reports), nil
	}
	if err := checkParams(run.def, run.params); err != nil {
		return run.decideWorkflowStop(st, effects, BlockBadParameter, badParameter(err), "", nil, rec.reports), nil
	}
	r := newReplay(run, rec, limits)
	r.journal = journal
	r.running = running
	r.play()
	if r.ruleErr != nil {
		return nil, r.ruleErr
	}
	if r.ioErr != nil {
		return nil, r.ioErr
	}
	if s != nil && r.holdsStop(s) {
		return run.decideStopped(st, r.effects, s, rec.reports), nil
	}
	return run.decideReplayed(r, rec.reports)
}

// holdsStop says whether the stop of a changed definition s holds after
// the replay r: it holds while this binary finds exactly the changes it
// listed. A binary that finds none (the operator went back to the one that
// started the run) lifts it and lets nothing through; one that finds
// others stops anew, so that a release lets through what this binary
// would do.
func (r *replay) holdsStop(s *store.Stop) bool {
	_, _, keys := changesReport(r.changes)
	if len(r.changes) > 0 && maps.Equal(keys, s.Changes) {
		return true
	}
	if !r.ranToEnd && subsetOf(keys, s.Changes) {
		// The replay did not reach every change the stop lists: what it
		// did not reach cannot be said to be gone.
		return true
	}
	r.state.Workflow.Stopped = nil
	r.lifted = len(r.changes) == 0
	return false
}

// subsetOf says whether every change in a is in b, as b has it.
func subsetOf(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// badParameter is the reason of a stop on a parameter the definition no
// longer takes as it is: no repair and no release can change a run's
// parameters.
func badParameter(err error) string {
	return fmt.Sprintf("%v; start a new run with parameters the definition takes: a run's parameters cannot change, and release does not change them", err)
}

// decideStopped plans a step while the workflow is stopped: the definition
// does not run, so an effect left started cannot be recognized, and its
// fate is uncertain. The step commits only its history.
func (run *Run) decideStopped(st *store.State, effects map[string]*store.Effect, s *store.Stop, reports []store.Report) *plan {
	out := Outcome{Kind: KindBlocked, Blocks: []Block{run.stoppedBlock(WorkflowSubject, s)}}
	texts := run.startedWhileStopped(&out, effects, reports)
	st.Steps++
	return &plan{outcome: out, texts: texts, state: st, events: sealHistory(st, effects, run.stepEvents(out, nil)), holds: true}
}

// startedWhileStopped makes a stopped workflow's outcome uncertain when an
// effect was left started: the definition does not run while it is
// stopped, so no recognizer can say what took place. It returns the
// effects' records to write.
func (run *Run) startedWhileStopped(out *Outcome, effects map[string]*store.Effect, reports []store.Report) []textFile {
	var uncertain []EffectState
	for _, name := range store.EffectNames(effects) {
		if effects[name].Status == store.EffectStarted {
			uncertain = append(uncertain, EffectState{Name: name,
				Detail: "the effect started and its completion was not recorded; the workflow is stopped"})
		}
	}
	if len(uncertain) == 0 {
		return nil
	}
	out.Kind = KindUncertain
	var texts []textFile
	out.Effects, texts = run.uncertainRecords(uncertain, reports)
	return texts
}

// uncertainRecords gives each uncertain effect its record, sorted by name,
// and the texts to write them.
func (run *Run) uncertainRecords(uncertain []EffectState, reports []store.Report) ([]EffectState, []textFile) {
	effects := slices.SortedFunc(slices.Values(uncertain), func(a, b EffectState) int { return strings.Compare(a.Name, b.Name) })
	texts := make([]textFile, len(effects))
	for i := range effects {
		rel := store.EffectBlockPath(effects[i].Name)
		effects[i].Record = run.abs(rel)
		texts[i] = textFile{label: "block", rel: rel, data: uncertainText(run, effects[i], reports)}
	}
	return effects, texts
}

// decideReplayed turns a replay into the plan of a counted step, or of an
// uncertain one.
func (run *Run) decideReplayed(r *replay, reports []store.Report) (*plan, error) {
	st := r.state
	unreached := st.Unreached
	if r.ranToEnd {
		unreached = r.checkUnreached()
	}
	byName := slices.SortedFunc(slices.Values(r.order), func(a, b *named) int {
		return strings.Compare(a.spec.job.Name, b.spec.job.Name)
	})
	blocks, texts, wstate := run.findBlocks(r, byName, reports)
	if len(r.uncertain) > 0 {
		return run.decideUncertain(r, byName, blocks, texts, reports), nil
	}
	if len(r.changes) > 0 {
		reason, body, keys := changesReport(r.changes)
		return run.decideWorkflowStop(st, r.effects, BlockDefinitionChanged, reason, body, keys, reports), nil
	}

	h := &handouts{state: st, kept: map[string][]store.Move{}}
	if r.lifted {
		h.events = append(h.events, store.Event{Type: store.EventRelease, Subject: string(WorkflowSubject),
			Text: "this binary finds the definition as the run recorded it, so the stop of a changed definition is lifted and lets nothing through"})
	}
	if err := h.plan(run, r, len(blocks) == 0); err != nil {
		return nil, err
	}
	h.heldUnnamed(r)
	for _, n := range byName {
		if n.verdict == verdictBlocked {
			texts = append(texts, textFile{label: "block", rel: n.block.record, data: jobBlockText(run, r, n, h.kept[n.spec.job.Name], reports)})
		}
	}
	sort.Slice(h.prompts, func(i, j int) bool { return h.prompts[i].rel < h.prompts[j].rel })
	texts = append(texts, h.prompts...)

	st.Steps++
	st.Replayed = st.Steps
	if r.heldEveryAccepted() {
		// Every accepted job now agrees with this build's definition: a
		// change of a job's task that it finds at a later step is the run's
		// own course.
		st.Checked = r.build
	}
	names := map[string]bool{}
	if !r.ranToEnd {
		// Jobs behind a wait that did not pass this time are still part of
		// the course; only a replay that ran to its end can drop one.
		for _, name := range st.Named {
			names[name] = true
		}
	}
	for _, n := range byName {
		names[n.spec.job.Name] = true
		st.Jobs[n.spec.job.Name] = n.js
		if n.carriedFrom != "" {
			delete(st.Jobs, n.carriedFrom)
			delete(names, n.carriedFrom)
		}
	}
	st.Named = slices.Sorted(maps.Keys(names))
	if r.ranToEnd {
		st.Looked = r.lookedNow()
	}
	run.forgetCarriedOut(st, names)
	st.Workflow = wstate
	st.Unreached = unreached
	st.Moves = h.moves
	st.Questions = maps.Clone(r.open)

	out := Outcome{Kind: KindDone}
	switch {
	case len(blocks) > 0:
		out = Outcome{Kind: KindBlocked, Blocks: blocks}
	case len(h.launch) > 0 || len(h.running) > 0:
		// Work is out: what the step hands out, and what it left running.
		sort.Slice(h.launch, func(i, j int) bool { return h.launch[i].Name < h.launch[j].Name })
		out = Outcome{Kind: KindLaunch, Jobs: h.launch, Running: slices.Sorted(slices.Values(h.running))}
	}
	return &plan{
		outcome: out,
		texts:   texts,
		state:   st,
		events:  sealHistory(st, r.effects, run.stepEvents(out, h.events)),
		moves:   h.moves,
		files:   r.files,
		parents: h.parents,
	}, nil
}

// forgetCarriedOut forgets the changes of the definition the operator let
// through once the step carried them out: a job no longer named is dropped
// from the course, and a removed patch from the patches the run knows.
// A reopened job's is forgotten when it is handed out.
func (run *Run) forgetCarriedOut(st *store.State, names map[string]bool) {
	w := &st.Workflow
	for key, fingerprint := range w.Allowed {
		if strings.HasPrefix(key, "patch ") || strings.HasPrefix(fingerprint, "gone") && !names[key] {
			delete(w.Allowed, key)
		}
	}
	st.Patches = slices.Clone(run.def.Patches)
	if st.Patches == nil {
		st.Patches = []string{}
	}
}

// decideWorkflowStop plans a step that stops the workflow at once and
// changes nothing else: no job's state, no hand-out, no move. Its block
// permits only stopping; changes, for a changed definition, are what the
// operator's release lets through.
func (run *Run) decideWorkflowStop(st *store.State, effects map[string]*store.Effect, kind BlockKind, reason, body string,
	changes map[string]string, reports []store.Report) *plan {
	w := &st.Workflow
	w.Blocks++
	rel := store.WorkflowBlockPath(w.Blocks)
	if changes == nil {
		changes = map[string]string{}
	}
	w.Stopped = &store.Stop{Kind: string(kind), Reason: reason, Record: rel, Changes: changes}
	b := Block{Subject: WorkflowSubject, Kind: kind, Reason: reason, Record: run.abs(rel), Permitted: PermitStop, Scope: repairScope(run.def)}
	out := Outcome{Kind: KindBlocked, Blocks: []Block{b}}
	texts := append([]textFile{{label: "block", rel: rel, data: stopText(run, st, b, body, reports)}}, run.startedWhileStopped(&out, effects, reports)...)
	st.Steps++
	return &plan{
		outcome: out,
		texts:   texts,
		state:   st,
		events:  sealHistory(st, effects, run.stepEvents(out, nil)),
		holds:   true,
	}
}

// decideUncertain plans an uncertain step, which counts nothing and changes
// no job's state: only its history, its number and its outcome. It writes
// the records of the blocks it carries, so that the paths it prints hold
// what it found, under names of its own: the numbered records belong to the
// blocks that steps count.
func (run *Run) decideUncertain(r *replay, byName []*named, blocks []Block, texts []textFile, reports []store.Report) *plan {
	st := r.state
	for _, n := range byName {
		if n.verdict == verdictBlocked {
			texts = append(texts, textFile{label: "block", rel: n.block.record, data: jobBlockText(run, r, n, nil, reports)})
		}
	}
	carried := func(rel string) string {
		if strings.HasPrefix(path.Base(rel), "block-") {
			return store.CarriedPath(rel, st.Steps+1)
		}
		return rel
	}
	for i := range texts {
		texts[i].rel = carried(texts[i].rel)
	}
	for i := range blocks {
		blocks[i].Record = run.abs(carried(run.records.Rel(blocks[i].Record)))
	}
	effects, records := run.uncertainRecords(r.uncertain, reports)
	texts = append(texts, records...)
	out := Outcome{Kind: KindUncertain, Effects: effects, Blocks: blocks}
	st.Steps++
	return &plan{outcome: out, texts: texts, state: st, events: sealHistory(st, r.effects, run.stepEvents(out, nil)), files: r.files, holds: true}
}

// handouts is what a counted step moves aside and hands out, job by job in
// the order they were named.
type handouts struct {
	state   *store.State
	moves   []store.Move
	kept    map[string][]store.Move // the moves of each blocked job, for its record
	launch  []Handout
	prompts []textFile
	events  []store.Event
	parents []string // the outputs handed out
	running []string // the hand-outs left running
}

// plan plans every job's part: the events of its judgment; for a block,
// moving aside a problem report and what lies beside it, or the last
// refused output; for a hand-out, moving aside whatever is in its way, and
// its prompt.
func (h *handouts) plan(o *Run, r *replay, handingOut bool) error {
	for _, n := range r.order {
		name := n.spec.job.Name
		if f := n.refusal; f != nil {
			h.events = append(h.events, store.Event{Type: store.EventRefuse, Subject: name, Attempt: attempt(n.js), Kind: f.Kind, Text: f.Reason,
				Messages: slices.Clone(n.refusalMessages)})
		}
		if n.newlyAccepted {
			h.events = append(h.events, store.Event{Type: store.EventAccept, Subject: name, Attempt: attempt(n.js)})
		}
		if n.spared != "" {
			h.events = append(h.events, store.Event{Type: store.EventSpare, Subject: name, Attempt: n.sparedAttempt, Text: n.spared})
		}
		if n.carriedFrom != "" {
			h.events = append(h.events, store.Event{Type: store.EventCarry, Subject: name, Text: n.carriedFrom})
		}
		switch {
		case n.verdict == verdictRunning:
			// The step's event says so, in its outcome: one line of the
			// history for all of them, not one a job at every step.
			h.running = append(h.running, name)
		case n.verdict == verdictBlocked:
			for _, rel := range n.block.keep {
				m, err := h.keep(r, name, rel)
				if err != nil {
					return err
				}
				h.kept[name] = append(h.kept[name], m)
			}
		case n.verdict == verdictHandout && handingOut:
			// A change of the definition the operator let through (a
			// changed task, a new job in a finished run) is carried out.
			delete(h.state.Workflow.Allowed, name)
			if n.reopen != "" {
				// A reopened job starts a full set of attempts.
				h.events = append(h.events, store.Event{Type: store.EventReopen, Subject: name, Text: n.reopen})
				n.js.Accepted = ""
				if t := n.js.Trouble; t != nil {
					t.Failures, t.Messages, t.History = 0, []string{}, []string{}
				}
				tidy(n.js)
			}
			for _, rel := range []string{n.spec.output, n.spec.problem} {
				id, err := r.identity(rel)
				if err != nil {
					return err
				}
				if id != "" {
					h.keepFile(name, rel, id)
				}
			}
			h.handOut(o, r, n)
		}
	}
	return nil
}

// heldUnnamed adds to the hand-outs left running those a drive holds that
// the replay no longer named (the data the definition reads changed while
// their workers ran): each is still out, and its worker may yet write, so
// the run is not done while it runs.
func (h *handouts) heldUnnamed(r *replay) {
	for _, name := range slices.Sorted(maps.Keys(r.running)) {
		js := h.state.Jobs[name]
		if _, named := r.named[name]; !named && js != nil && js.Outstanding != nil && attempt(js) == r.running[name] {
			h.running = append(h.running, name)
		}
	}
}

// keep plans moving the file at rel aside for job, numbered across the run.
func (h *handouts) keep(r *replay, job, rel string) (store.Move, error) {
	id, err := r.identity(rel)
	if err != nil {
		return store.Move{}, err
	}
	return h.keepFile(job, rel, id), nil
}

// keepFile plans moving the file id at rel aside for job.
func (h *handouts) keepFile(job, rel, id string) store.Move {
	h.state.Kept++
	m := store.Move{Source: rel, Target: store.KeptPath(job, h.state.Kept, rel), Identity: id}
	h.moves = append(h.moves, m)
	h.events = append(h.events, keepEvent(job, m))
	return m
}

// identity says which file lies at rel, "" for none, as judging found it:
// a move is planned from what the step judged. Only a file judging did not
// read (a problem report, an output over its job's limit) is looked at
// again.
func (r *replay) identity(rel string) (string, error) {
	if id, ok := r.files.Identity(rel); ok {
		return id, nil
	}
	return r.run.Identity(rel)
}

// handOut records a job's hand-out: its input state is what its output
// will be judged against, and its prompt is a new file.
func (h *handouts) handOut(o *Run, r *replay, n *named) {
	name, js := n.spec.job.Name, n.js
	text := promptText(r, n)
	js.Handouts++
	in := n.current
	js.Input = &in
	js.Outstanding = &store.Handout{Prompt: sha256Hex(text), Launches: []string{}}
	prompt := store.PromptPath(name, js.Handouts)
	h.prompts = append(h.prompts, textFile{label: "prompt", rel: prompt, data: text})
	h.events = append(h.events, store.Event{Type: store.EventHandout, Subject: name, Attempt: attempt(js), Path: prompt})
	h.parents = append(h.parents, n.spec.output)
	h.launch = append(h.launch, Handout{
		Name:    name,
		Attempt: attempt(js),
		Prompt:  o.abs(prompt),
		Output:  r.abs(n.spec.output),
		Problem: r.abs(n.spec.problem),
		Launch:  n.spec.launch,
	})
}

// hasHandout says whether the replay has work out: a job it hands out, or
// one it left running.
func hasHandout(r *replay) bool {
	for _, n := range r.order {
		if n.verdict == verdictHandout || n.verdict == verdictRunning {
			return true
		}
	}
	return false
}
