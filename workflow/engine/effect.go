package engine

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/custodian-run/custodian/internal/names"
	"github.com/custodian-run/custodian/store"
	"github.com/custodian-run/custodian/workflow"
)

// effectSpec is an effect as the definition declares it.
type effectSpec struct {
	name      string
	inputs    []string // keys, sorted, unique
	recognize workflow.Recognizer
}

// Effect runs the effect name for Context.Effect: at most once in the run,
// journaled before and after do, with the recognizer asked when an earlier
// process ended inside do.
func (r *replay) Effect(name string, do func() error, inputs []string, recognizer workflow.Recognizer) {
	e := &effectSpec{name: name, inputs: inputs, recognize: recognizer}
	if err := r.declareEffect(e); err != nil {
		r.breakRule(err)
	}
	current, err := filesState(r.files, e.inputs)
	if err != nil {
		r.stopOn(fmt.Errorf("effect %s: %w", name, err))
	}
	prev := r.effects[name]
	j := prev
	if j != nil && j.Status == store.EffectStarted {
		if r.dry {
			r.foresee(EffectSubject(name), "it started and its completion is not recorded: the next step asks its recognizer what took place")
			r.endPath()
		}
		recognition, why := recognize(e.recognize)
		switch recognition {
		case workflow.Completed:
			j.Status, j.At, j.By = store.EffectCompleted, store.Now(), "recognizer"
			r.save(r.journal("effect-recognized", j))
		case workflow.Absent:
			j = nil
		default:
			r.uncertain = append(r.uncertain, EffectState{Name: name,
				Detail: "the effect started and its completion was not recorded; " + why})
			r.endPath()
		}
	}
	if j == nil && r.finishedUnderNewCode() {
		r.newWork(change{key: "effect " + name, fingerprint: "new effect " + digestFiles(current), subject: "effect " + name,
			what: []string{"a new effect in a finished run: the next step would run it"}})
	}
	if j == nil || j.Status == store.EffectAbsent {
		if len(r.uncertain) > 0 || len(r.effectBlocks) > 0 || len(r.changes) > 0 {
			// The step stops the run on another effect's account, or on a
			// changed definition's: no new effect starts before the operator
			// has settled it.
			r.endPath()
		}
		if r.dry {
			r.foresee(EffectSubject(name), "it runs at the next step")
			r.endPath()
		}
		r.runEffect(e, prev, current, do)
		return
	}
	if j.State != digestFiles(current) {
		// What follows was built on the effect as it took place; code
		// cannot go past it until its inputs are restored or it is resolved.
		r.effectBlocks = append(r.effectBlocks, effectBlock{name: name, kind: BlockEffectInputsChanged,
			reason: "the effect is completed and its inputs have changed since: " + strings.Join(changes(
				store.Inputs{Files: j.Inputs}, store.Inputs{Files: current}), ", "),
			inputs: e.inputs})
		r.endPath()
	}
}

func (r *replay) declareEffect(e *effectSpec) error {
	if p := names.Problem("effect", e.name); p != "" {
		return r.rule("%s", p)
	}
	if r.reached[e.name] {
		return r.rule("effect %s is declared twice in one step; give each effect its own name", e.name)
	}
	r.reached[e.name] = true
	var keys []string
	for _, in := range e.inputs {
		key := inputKey(r.dir, r.maps, in)
		if key == "" {
			return r.rule("effect %s: input %q is not a file path", e.name, in)
		}
		keys = append(keys, key)
	}
	slices.Sort(keys)
	e.inputs = slices.Compact(keys)
	return nil
}

// runEffect journals the start, runs do, and journals the completion. Each
// journal write is atomic and happens at once, not at the step's commit,
// because the process may end inside do.
func (r *replay) runEffect(e *effectSpec, prev *store.Effect, current []store.FileHash, do func() error) {
	j := &store.Effect{Name: e.name, Status: store.EffectStarted, Inputs: current,
		State: digestFiles(current), Required: true, At: store.Now(), By: "step"}
	if prev != nil {
		j.Runs = prev.Runs
	}
	j.Runs++
	// A new effect in a finished run that the operator let through is
	// carried out.
	delete(r.state.Workflow.Allowed, EffectSubject(e.name).String())
	r.save(r.journal("effect-started", j))
	r.effects[e.name] = j
	if r.endIn == e.name && !r.endAfterDo {
		r.save(ErrEndedInEffect)
	}
	if f := r.callEffect(e.name, do); f != nil {
		r.fail(*f)
		r.endPath()
	}
	if r.endIn == e.name {
		r.save(ErrEndedInEffect)
	}
	j.Status, j.At = store.EffectCompleted, store.Now()
	r.save(r.journal("effect-completed", j))
}

// callEffect runs do and turns an error or a panic into a failure counted at
// the definition's line that declared the effect.
func (r *replay) callEffect(name string, do func() error) (f *failure) {
	at := r.place(callers(3))
	defer func() {
		if v := recover(); v != nil {
			// Counted where the effect is declared, as an error from do is,
			// so that one effect has one count whichever way it fails.
			pf := r.panicFailure(v, callers(0), debug.Stack())
			pf.message = fmt.Sprintf("effect %s: %s", name, pf.message)
			pf.place = at
			f = &pf
		}
	}()
	if err := do(); err != nil {
		ef := r.errorFailure(fmt.Errorf("effect %s: %w", name, err), at)
		return &ef
	}
	return nil
}

// save ends the step when a journal write fails: the effect's fate must not
// be left to a record that was not written.
func (r *replay) save(err error) {
	if err != nil {
		if r.ioErr == nil {
			r.ioErr = err
		}
		r.endPath()
	}
}

// filesState hashes declared files the way input states do.
func filesState(files *store.Files, keys []string) ([]store.FileHash, error) {
	in, err := inputState(files, &spec{inputs: keys})
	return in.Files, err
}

// digestFiles is the digest of an effect's inputs: an input state with no
// prompt and no launch parameters.
func digestFiles(files []store.FileHash) string {
	return digest(store.Inputs{Files: files})
}

// effectBlock is an effect out of step with the run, judged anew each step.
type effectBlock struct {
	name   string
	kind   BlockKind
	reason string
	inputs []string
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
